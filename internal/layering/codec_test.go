package layering

import (
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// familyCodecs are the protocol families' wire codecs: their messages,
// message types, parameters and layouts are the families' own.
var familyCodecs = []string{module + "/internal/moq/ietf", module + "/internal/moq/lite/wire"}

// codecPublic is what the facade may name of a family's codec: its version
// table (the versions and drafts the facade lists as family-neutral rows;
// which token selects one is the ALPN table's, which version a connection
// speaks the family's negotiation), the roles a SETUP declares and the
// codec's errors, which it reports as ErrProtocol.
var codecPublic = regexp.MustCompile(`^(Version|Versions|Newest|Draft\d+|Role\w*|Err\w+)$`)

// codecViolations returns the names file f, a facade file outside its
// tests, takes from a family's codec beyond codecPublic.
func codecViolations(fset *token.FileSet, f *ast.File) []string {
	var bad []string
	eachPackageName(f, func(path string, sel *ast.SelectorExpr) {
		if slices.Contains(familyCodecs, path) && !codecPublic.MatchString(sel.Sel.Name) {
			bad = append(bad, fmt.Sprintf("%s: %s.%s: a family's wire message or layout in the facade", fset.Position(sel.Pos()), sel.X, sel.Sel.Name))
		}
	})
	return bad
}

// TestTheFacadeNamesOfAFamilysCodecOnlyItsVersionsRolesAndErrors: the
// facade (subscribe, outside its tests) picks a protocol version and hands
// the connection to the family; the messages on the wire (moq-transport's
// message types and parameters, the strict peer's refusals once, moq-lite's
// SETUP) are the family packages' own. It names of a family's codec only
// the version table, the roles and the codec's errors.
func TestTheFacadeNamesOfAFamilysCodecOnlyItsVersionsRolesAndErrors(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	for _, f := range sourceFiles(t, fset, filepath.Join(root, "subscribe")) {
		if strings.HasSuffix(fset.Position(f.Package).Filename, "_test.go") {
			continue
		}
		for _, b := range codecViolations(fset, f) {
			t.Error(b)
		}
	}
}

// TestTheCodecRuleCatchesWhatItForbids feeds the rule source that breaks
// it, and source it allows.
func TestTheCodecRuleCatchesWhatItForbids(t *testing.T) {
	checkRule(t, codecViolations, []ruleCase{
		{"versions, roles and errors", `package subscribe
import (
	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
)
var v ietf.Version = ietf.Draft14
var w = wire.Versions
var r = wire.RolePublisher
var e = []error{ietf.ErrDecode, wire.ErrTooLarge}`, 0},
		{"a family's version lookups and negotiation lists", `package subscribe
import (
	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
)
var v = wire.ByCode(1)
var n = wire.ByALPN("moql")
var c = wire.LegacyCodes(nil)
var d, ok = ietf.VersionOfALPN("moqt-20")`, 4},
		{"a field named like the package", `package subscribe
type pub struct{ ietf struct{ Strict any } }
func f(p pub) any { return p.ietf.Strict }`, 0},
		{"a moq-transport message type", `package subscribe
import "github.com/moq-export/moq-export/internal/moq/ietf"
func f(typ uint64) bool { return typ == ietf.TypeFetch }`, 1},
		{"a moq-transport message decoded", `package subscribe
import "github.com/moq-export/moq-export/internal/moq/ietf"
func f(b []byte) { var m ietf.Subscribe; _ = ietf.Decode(b, &m, ietf.Draft14) }`, 2},
		{"a moq-lite message under another name", `package subscribe
import w "github.com/moq-export/moq-export/internal/moq/lite/wire"
var m w.Subscribe`, 1},
	})
}
