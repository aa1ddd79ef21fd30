package layering

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The seam rules read the source, not the imports: the facade and the
// session core reach a protocol family only through the seam (the core's
// session.Proto, which litesub.Link and ietfsub.Link implement), never by
// asking which family a value is, and the facade's Session keeps nothing
// of a family's (its state, its codec's versions).

// familyPrefixes are the protocol families' packages (codec, session,
// publisher), none of whose types a Session field may hold.
var familyPrefixes = []string{module + "/internal/moq/lite", module + "/internal/moq/ietf"}

// concreteFamily matches the name of a type that is one family's own
// (the facade's implementations once: liteFamily, ietfConn) and anything
// named after a family.
var concreteFamily = regexp.MustCompile(`(?i)lite|ietf`)

// seamViolations returns the type assertions and type switches of file f
// that name a family's concrete type (by name, or from a family's
// package), and the fields of a struct type named Session whose type comes
// from a family's session package.
func seamViolations(fset *token.FileSet, f *ast.File) []string {
	// imported: local package name -> import path.
	imported := importNames(f)
	fromFamily := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return false
		}
		for _, p := range familyPrefixes {
			if imported[id.Name] == p || strings.HasPrefix(imported[id.Name], p+"/") {
				return true
			}
		}
		return false
	}
	names := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				if concreteFamily.MatchString(n.Name) {
					found = true
				}
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok {
					for _, p := range familyPrefixes {
						if strings.HasPrefix(imported[id.Name], p) {
							found = true
						}
					}
				}
				return false
			}
			return true
		})
		return found
	}
	var bad []string
	at := func(n ast.Node, what string) {
		bad = append(bad, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), what))
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.TypeAssertExpr:
			if n.Type != nil && names(n.Type) {
				at(n, "a type assertion to a family's concrete type")
			}
		case *ast.TypeSwitchStmt:
			for _, c := range n.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					if names(e) {
						at(e, "a type switch on a family's concrete type")
					}
				}
			}
		case *ast.TypeSpec:
			st, ok := n.Type.(*ast.StructType)
			if !ok || n.Name.Name != "Session" {
				return true
			}
			for _, fld := range st.Fields.List {
				hit := false
				ast.Inspect(fld.Type, func(m ast.Node) bool {
					if e, ok := m.(ast.Expr); ok && fromFamily(e) {
						hit = true
					}
					return !hit
				})
				if hit {
					at(fld, "a Session field holding a family's type")
				}
			}
		}
		return true
	})
	return bad
}

// sourceFiles parses the Go files of dir, its tests included: a test
// that asks which family a value is holds the seam as open as code that
// does (a white-box test asks a family for what it needs by a capability,
// an interface of its own).
func sourceFiles(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s: the seam rules name a package that moved; update them", dir)
	}
	return files
}

// TestTheFacadeAndTheCoreReachAFamilyOnlyThroughTheSeam: subscribe and
// the session core, and their tests, never ask which family a value is
// (no type assertion or switch to a type named for a family or a family
// package's type), and subscribe's Session holds no family's type
// (moq-lite's routing table once sat there as s.lite, beside
// moq-transport's behind the seam; the negotiated version as moq-lite's
// *wire.Version, which named moq-transport's drafts too).
func TestTheFacadeAndTheCoreReachAFamilyOnlyThroughTheSeam(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	for _, dir := range []string{"subscribe", "internal/moq/session"} {
		for _, f := range sourceFiles(t, fset, filepath.Join(root, dir)) {
			for _, b := range seamViolations(fset, f) {
				t.Error(b)
			}
		}
	}
}

// TestTheSeamRulesCatchWhatTheyForbid feeds the rules source that breaks
// each of them: a rule that cannot fail checks nothing.
func TestTheSeamRulesCatchWhatTheyForbid(t *testing.T) {
	checkRule(t, seamViolations, []ruleCase{
		{"clean", `package subscribe
import "github.com/moq-export/moq-export/internal/moq/session"
type Session struct{ links session.Links[family] }
func f(x any) { _ = x.(family); switch x.(type) { case error: } }`, 0},
		{"an assertion to the facade's moq-transport type", `package subscribe
func f(c conn) { _ = c.(*ietfConn) }`, 1},
		{"a type switch on the facade's moq-lite type", `package subscribe
func f(c any) { switch c.(type) { case liteFamily, error: } }`, 1},
		{"an assertion to a family package's type", `package subscribe
import "github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
func f(c any) { _, _ = c.(*ietfsub.Session) }`, 1},
		{"a Session field holding moq-lite's state", `package subscribe
import "github.com/moq-export/moq-export/internal/moq/lite/litesub"
type Session struct{ lite litesub.Session; n int }`, 1},
		{"a Session field holding moq-transport's state by pointer", `package subscribe
import x "github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
type Session struct{ m map[string]*x.Session }`, 1},
		{"a Session field holding a family codec's version", `package subscribe
import (
	"sync/atomic"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
)
type Session struct{ version atomic.Pointer[wire.Version] }`, 1},
	})
}
