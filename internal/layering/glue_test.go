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

// The facade holds no family's glue. moq-lite and moq-transport each
// implement the seam (session.Proto) in their own session package
// (litesub.Link, ietfsub.Link): serving the connection, the SETUP the
// family runs, announce streams, GOAWAY, what a close means. Package
// subscribe picks the family a connection negotiated and makes its Proto
// in one file, proto.go; elsewhere it reaches a connection through the
// seam only. Each family negotiates its own version there too: moq-lite
// (the version its token names, the legacy SETUP) in litesub.Link.Dial
// and litesub.Accept, moq-transport (its SETUP) in ietfsub.Link.Dial and
// Accept. The facade's dial and accept code only chooses the family the
// negotiated token selects (internal/moq/transport/alpn).

// familySessions are the families' session packages.
var familySessions = []string{module + "/internal/moq/lite/litesub", module + "/internal/moq/ietf/ietfsub"}

// facadeMaker is the one facade file that makes a family's Proto.
const facadeMaker = "proto.go"

// sessionPublic is what the facade may name of a family's session package
// outside facadeMaker: its public errors and codes. A family's
// negotiation (moq-lite's once ran in dial.go and server.go) is the
// family's, called from facadeMaker.
var sessionPublic = regexp.MustCompile(`^(Err\w+|Code\w+)$`)

// familyNamed matches a top-level identifier named for moq-transport: the
// glue the facade once held (ietfConn, ietfDial, serveIETF's file's
// ietfTransport, ietfVersions, ...).
var familyNamed = regexp.MustCompile(`^(?i)ietf`)

// glueViolations returns, for file f of the facade (outside its tests),
// its top-level identifiers named for moq-transport, and, unless f is
// facadeMaker, the names it takes from a family's session package beyond
// sessionPublic.
func glueViolations(fset *token.FileSet, f *ast.File) []string {
	var bad []string
	at := func(n ast.Node, what string) {
		bad = append(bad, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), what))
	}
	for _, d := range f.Decls {
		var names []*ast.Ident
		switch d := d.(type) {
		case *ast.FuncDecl:
			names = append(names, d.Name)
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					names = append(names, sp.Name)
				case *ast.ValueSpec:
					names = append(names, sp.Names...)
				}
			}
		}
		for _, n := range names {
			if familyNamed.MatchString(n.Name) {
				at(n, n.Name+": named for moq-transport in the facade")
			}
		}
	}
	if filepath.Base(fset.Position(f.Package).Filename) == facadeMaker {
		return bad
	}
	eachPackageName(f, func(path string, sel *ast.SelectorExpr) {
		if slices.Contains(familySessions, path) && !sessionPublic.MatchString(sel.Sel.Name) {
			at(sel, fmt.Sprintf("%s.%s: a family's session glue outside %s", sel.X, sel.Sel.Name, facadeMaker))
		}
	})
	return bad
}

// TestTheFacadeHoldsNoFamilysGlue: outside its tests, subscribe declares
// nothing named for moq-transport, and only proto.go names what a family
// implements the seam with (its Link, Config, Server record, SETUP
// parameters, its negotiation); the rest of the facade names a family's
// session package only for its errors and codes.
func TestTheFacadeHoldsNoFamilysGlue(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	found := false
	for _, f := range sourceFiles(t, fset, filepath.Join(root, "subscribe")) {
		name := fset.Position(f.Package).Filename
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		found = found || filepath.Base(name) == facadeMaker
		for _, b := range glueViolations(fset, f) {
			t.Error(b)
		}
	}
	if !found {
		t.Errorf("subscribe/%s is gone: the rule names the file that makes a family's Proto; update it", facadeMaker)
	}
}

// TestTheGlueRuleCatchesWhatItForbids feeds the rule source that breaks
// it, and source it allows.
func TestTheGlueRuleCatchesWhatItForbids(t *testing.T) {
	const sub = `"github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"`
	const lite = `"github.com/moq-export/moq-export/internal/moq/lite/litesub"`
	cases := []ruleCase{
		{"errors and codes", `package subscribe
import (` + sub + "\n" + lite + `)
var e = ietfsub.ErrNoDiscovery
var c = ietfsub.CodeNoError
var v = litesub.ErrVersion`, 0},
		{"moq-lite's negotiation in the dial and accept code", `package subscribe
import ` + lite + `
var f = litesub.SelectALPN
var g, h = litesub.ClientSetup, litesub.ServerSetup
var w = litesub.SetupTimeout`, 4},
		{"a moq-transport connection type", `package subscribe
import "github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
type ietfConn struct{ ss *ietfsub.Session }`, 2},
		{"moq-lite's serving in the facade", `package subscribe
import ` + lite + `
func serve(c litesub.Conn) { _ = &litesub.Peer{} }`, 2},
		{"a helper named for moq-transport", `package subscribe
var ietfVersions []int
func ietfDial() {}`, 2},
		{"a field or local named like a package", `package subscribe
type pub struct{ ietf struct{ Strict any } }
func f(p pub) any { ietfsub := p.ietf; return ietfsub.Strict }`, 0},
	}
	checkRule(t, glueViolations, cases)
	// The maker may name a family's Link; not a helper named for it.
	fset := token.NewFileSet()
	f := parseAs(t, fset, facadeMaker, `package subscribe
import `+sub+`
func newLink() *ietfsub.Link { return ietfsub.NewLink(nil, ietfsub.Config{}, nil) }
func ietfHelper() {}`)
	if got := glueViolations(fset, f); len(got) != 1 {
		t.Errorf("in %s: %d violations %v, want 1 (the helper's name)", facadeMaker, len(got), got)
	}
}
