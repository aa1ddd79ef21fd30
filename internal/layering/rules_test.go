package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The helpers the source rules (seam_test.go, codec_test.go) share.

// importNames maps each package name file f uses (its import's last
// element, or the name it is imported under) to the import path.
func importNames(f *ast.File) map[string]string {
	imported := map[string]string{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imported[name] = p
	}
	return imported
}

// moduleRoot returns the module's root directory from the test's.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from the test's directory: %v", err)
	}
	return root
}

// ruleCase is source fed to a rule and how many violations it must find.
type ruleCase struct {
	name, src string
	want      int
}

// checkRule feeds rule each case's source: a rule that cannot fail checks
// nothing, and one that fails clean source is wrong.
func checkRule(t *testing.T, rule func(*token.FileSet, *ast.File) []string, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f := parseAs(t, fset, "x.go", tc.src)
			if got := rule(fset, f); len(got) != tc.want {
				t.Errorf("%d violations %v, want %d", len(got), got, tc.want)
			}
		})
	}
}

// parseAs parses src as the file name.
func parseAs(t *testing.T, fset *token.FileSet, name, src string) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// eachPackageName calls fn for every name file f takes from an imported
// package (pkg.Name: a field or a local of that name is not one), with
// the package's import path.
func eachPackageName(f *ast.File, fn func(path string, sel *ast.SelectorExpr)) {
	imported := importNames(f)
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || id.Obj != nil {
			return true
		}
		if p, ok := imported[id.Name]; ok {
			fn(p, sel)
		}
		return true
	})
}
