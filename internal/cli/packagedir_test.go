package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// TestASecondPackageIntoADirectoryHoldingAnotherIsRefused: the demo
// recorded into rec/a.m3u8, then (-b of the same broadcast, another run)
// into rec/b.m3u8: the second run would write its v0.mp4, a0.mp4 and
// v0.m3u8 over the first package's, so it exits 1 saying which package the
// directory holds and the -o to use instead; a third run into rec/a.m3u8
// continues the first package, which plays whole.
func TestASecondPackageIntoADirectoryHoldingAnotherIsRefused(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "rec")
	run := func(out string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var stderr syncBuffer
		code := Execute(ctx, []string{"-o", out, "--duration", "1s", "--progress", "never"}, Env{Stdout: &bytes.Buffer{}, Stderr: &stderr})
		return code, stderr.String()
	}
	if code, msg := run(filepath.Join(rec, "a.m3u8")); code != ExitOK {
		t.Fatalf("the first package: exit %d: %s", code, msg)
	}
	for _, out := range []string{"b.m3u8", "b.mpd"} {
		code, msg := run(filepath.Join(rec, out))
		if want := "-o " + filepath.Join(rec, "b", "index.m3u8"); code != ExitRuntime || !strings.Contains(msg, "holds the HLS/DASH package a.m3u8") || !strings.Contains(msg, want) {
			t.Errorf("a second package, %s: exit %d, %q; want %d, naming a.m3u8 and suggesting %q", out, code, msg, ExitRuntime, want)
		}
	}
	if code, msg := run(filepath.Join(rec, "a.m3u8")); code != ExitOK {
		t.Fatalf("continuing the first package: exit %d: %s", code, msg)
	}
	mediatest.DecodeClean(t, filepath.Join(rec, "a.m3u8"))
}
