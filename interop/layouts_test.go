package interop

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestReferenceLayoutsAreCurrent runs src/layouts.ts, which writes every
// moq-lite message of every version with @moq/net's own encoders, and
// requires the bytes internal/moq/lite/wire's tests check against
// (testdata/reference-layouts.jsonl) to be exactly those.
func TestReferenceLayoutsAreCurrent(t *testing.T) {
	ref := needReference(t)
	out, err := exec.Command(ref.deno, "run", "-A", filepath.Join(ref.dist, "layouts.js")).Output()
	if err != nil {
		t.Fatalf("layouts.js: %v", err)
	}
	want, err := os.ReadFile(filepath.Join("..", "testdata", "reference-layouts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Fatalf("@moq/net writes other bytes than testdata/reference-layouts.jsonl holds; regenerate it with\n"+
			"  interop/node_modules/.bin/deno run -A interop/dist/layouts.js > testdata/reference-layouts.jsonl\n"+
			"and check the differences:\n%s", out)
	}
}
