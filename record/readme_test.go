package record_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTheREADMESnippetCompiles type-checks the Go snippet of the README's
// library section as the body of a function, with go vet and an overlay
// (nothing is written to the source tree).
func TestTheREADMESnippetCompiles(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Use as a Go library")
	_, code, ok2 := strings.Cut(section, "```go\n")
	code, _, ok3 := strings.Cut(code, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("no Go snippet in the README's library section")
	}
	src := `package record_test

import (
	"context"
	"time"

	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

func readmeSnippet(ctx context.Context, token string, uploads chan<- string) error {
` + code + `}
`
	dir := t.TempDir()
	file := filepath.Join(dir, "snippet.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	here, err := filepath.Abs("readme_snippet_test.go")
	if err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{here: file}})
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "vet", "-overlay="+ov, ".").CombinedOutput(); err != nil {
		t.Errorf("the README's snippet does not compile: %v\n%s\n%s", err, out, src)
	}
}

// TestTheREADMEStaysAnOverviewAndItsLinksResolve keeps the README short
// (details go to docs/) and every relative link of the README and of
// docs/ pointing at a file that exists.
func TestTheREADMEStaysAnOverviewAndItsLinksResolve(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 150 {
		t.Errorf("the README has %d lines: keep it an overview under 150 and move details to docs/", n)
	}
	docs, _ := filepath.Glob("../docs/*.md")
	if len(docs) == 0 {
		t.Fatal("no docs/*.md")
	}
	link := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	for _, f := range append([]string{"../README.md", "../ARCHITECTURE.md"}, docs...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), m[1])); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, m[1])
			}
		}
	}
}
