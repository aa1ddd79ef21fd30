package interop

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/internal/cli"
	"github.com/moq-export/moq-export/internal/testutil/archivetest"
)

// lockedWriter is a stderr the command writes while the test reads it.
type lockedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestReferenceSubscriberRecordsAnArchiveReplayedOnListen: moq-export
// ARCHIVE --replay --listen serves an archived broadcast; the reference
// client dials it, reads the catalog with hang's schema, subscribes both
// tracks from group 0 and decodes hang's legacy container. Every frame
// must be the archive's: group, index, timestamp, payload.
func TestReferenceSubscriberRecordsAnArchiveReplayedOnListen(t *testing.T) {
	ref := needReference(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	arch := filepath.Join(t.TempDir(), "arch")
	var stderr lockedWriter
	if code := cli.Execute(ctx, []string{"-f", "archive", "-o", arch, "--demo-loops", "1", "--progress", "never"},
		cli.Env{Stdout: &bytes.Buffer{}, Stderr: &stderr}); code != cli.ExitOK {
		t.Fatalf("archiving the demo: exit %d: %s", code, stderr.String())
	}
	// What the archive holds, read back as a broadcast.
	b := archivetest.Broadcast(t, ctx, archivetest.Dir(t, arch), "demo", archive.ReadOptions{})
	cat, want := recordBroadcast(ctx, t, b)

	cert := newTestCert(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var served lockedWriter
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(ctx, []string{arch, "--replay", "--listen", addr, "--tls-cert", cert.certFile, "--tls-key", cert.keyFile},
			cli.Env{Stdout: &bytes.Buffer{}, Stderr: &served})
	}()
	for !strings.Contains(served.String(), "serving the archived broadcast") {
		if ctx.Err() != nil {
			t.Fatalf("--replay did not start: %s", served.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	sub := ref.start(ctx, t, "subscribe", "--connect", addr, "--ca", cert.certFile, "--server-name", "localhost",
		"--broadcast", "demo", "--start-group", "0", "--max-ms", "40000")
	_, got, _ := recordReference(ctx, t, sub, nil)
	sub.wait(ctx)
	if code := <-done; code != cli.ExitOK {
		t.Errorf("--replay exited %d: %s", code, served.String())
	}
	if len(cat.Renditions()) != 2 {
		t.Fatalf("the archive's catalog lists %d renditions, want the demo's 2", len(cat.Renditions()))
	}
	for _, r := range cat.Renditions() {
		if len(want[r.Name]) < 50 {
			t.Fatalf("the archive holds %d frames of %s: the run went wrong", len(want[r.Name]), r.Name)
		}
		compareFrames(t, r.Name, want[r.Name], got[r.Name])
	}
}
