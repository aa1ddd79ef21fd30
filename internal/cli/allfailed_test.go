package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// TestRecordAllWhoseEveryRecordingFailedExitsOne: --record-all of the demo
// for a second, where the demo's file cannot be created (a file stands
// where its directory would go): the only recording failed, so the
// command says so and exits 1, not 0. With the directory free it records
// the demo and exits 0.
func TestRecordAllWhoseEveryRecordingFailedExitsOne(t *testing.T) {
	for _, tc := range []struct {
		name    string
		blocked bool
	}{
		{"the demo's directory is a file", true},
		{"the demo's directory is free", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.blocked {
				if err := os.WriteFile(filepath.Join(dir, demoBroadcast), []byte("not a directory"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stderr syncBuffer
			code := Execute(ctx, []string{"--record-all", "-o", filepath.Join(dir, "{broadcast}", "rec.mkv"), "--duration", "1s", "--progress", "never"},
				Env{Stdout: &bytes.Buffer{}, Stderr: &stderr})
			msg := stderr.String()
			if !tc.blocked {
				if code != ExitOK {
					t.Fatalf("exit %d: %s", code, msg)
				}
				mediatest.DecodeClean(t, filepath.Join(dir, demoBroadcast, "rec.mkv"))
				return
			}
			if code != ExitRuntime || !strings.Contains(msg, `the recording of "`+demoBroadcast+`" failed and none ended well`) ||
				!strings.Contains(msg, "file exists") {
				t.Fatalf("exit %d, %q; want %d, saying the recording failed and why", code, msg, ExitRuntime)
			}
		})
	}
}
