package layering

import (
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Each family's version table holds its own versions only. moq-lite's
// (internal/moq/lite/wire.Versions) names no moq-transport draft, and
// moq-transport's (internal/moq/ietf) no moq-lite version: the facade
// lists both families' versions as family-neutral rows (alpn.Version,
// subscribe's versionTable), each built from its family's own table.
// Drafts 14-22 once sat in moq-lite's table because the public version
// list read one table.

// versionSpace is a family's code space (a version's wire code >> 8) and
// the prefixes of its versions' names and tokens.
type versionSpace struct {
	family string
	space  uint64
	names  []string
}

var (
	liteSpace = versionSpace{"moq-lite", 0xff0dad, []string{"moq-lite-"}}
	ietfSpace = versionSpace{"moq-transport", 0xff0000, []string{"moq-transport-", "moqt-", "moq-00"}}
)

// foreignVersions returns a rule: the wire codes and version names of
// file f's non-test source that belong to other, not to the family that
// owns f.
func foreignVersions(other versionSpace) func(*token.FileSet, *ast.File) []string {
	return func(fset *token.FileSet, f *ast.File) []string {
		var bad []string
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok {
				return true
			}
			switch lit.Kind {
			case token.INT:
				if v, err := strconv.ParseUint(strings.ReplaceAll(lit.Value, "_", ""), 0, 64); err == nil && v>>8 == other.space {
					bad = append(bad, fmt.Sprintf("%s: %s is a %s version's code", fset.Position(lit.Pos()), lit.Value, other.family))
				}
			case token.STRING:
				s, _ := strconv.Unquote(lit.Value)
				for _, p := range other.names {
					if strings.HasPrefix(s, p) {
						bad = append(bad, fmt.Sprintf("%s: %s names a %s version", fset.Position(lit.Pos()), lit.Value, other.family))
					}
				}
			}
			return true
		})
		return bad
	}
}

// TestEachFamilysVersionTableHoldsOnlyItsOwnVersions: no non-test file of
// moq-lite's packages holds a moq-transport version's code or name, and
// no file of moq-transport's a moq-lite version's.
func TestEachFamilysVersionTableHoldsOnlyItsOwnVersions(t *testing.T) {
	root := moduleRoot(t)
	for _, tc := range []struct {
		dirs  []string
		other versionSpace
	}{
		{[]string{"internal/moq/lite/wire", "internal/moq/lite/litesub", "internal/moq/lite/litepub"}, ietfSpace},
		{[]string{"internal/moq/ietf", "internal/moq/ietf/ietfsub", "internal/moq/ietf/ietfpub"}, liteSpace},
	} {
		rule := foreignVersions(tc.other)
		for _, dir := range tc.dirs {
			fset := token.NewFileSet()
			for _, f := range sourceFiles(t, fset, filepath.Join(root, dir)) {
				if strings.HasSuffix(fset.Position(f.Package).Filename, "_test.go") {
					continue
				}
				for _, b := range rule(fset, f) {
					t.Error(b)
				}
			}
		}
	}
}

// TestTheVersionTableRuleCatchesWhatItForbids feeds the rule source that
// breaks it, and source it allows.
func TestTheVersionTableRuleCatchesWhatItForbids(t *testing.T) {
	checkRule(t, foreignVersions(ietfSpace), []ruleCase{
		{"moq-lite's own rows", `package wire
var Lite05 = &Version{Name: "moq-lite-05", Code: 0xff0dad05}`, 0},
		{"a draft's row in moq-lite's table", `package wire
var IETF14 = &Version{Name: "moq-transport-14", Code: 0xff00000e}`, 2},
		{"a draft's token", `package wire
const tok = "moqt-20"`, 1},
		{"a code in moq-transport's space written in decimal", `package wire
const c = 4278190100`, 1},
	})
	checkRule(t, foreignVersions(liteSpace), []ruleCase{
		{"a moq-lite version in moq-transport's table", `package ietf
const Lite05 Version = 0xff0dad05`, 1},
		{"moq-transport's own drafts", `package ietf
const Draft20 Version = 0xff000014`, 0},
	})
}
