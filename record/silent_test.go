package record_test

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// TestTheLibraryIsSilentUnlessGivenALogger records over loopback QUIC
// with no Logger anywhere: the host's default logger (slog's and log's)
// gets nothing. Given Options.Logger, the recording and the session Run
// dials log there.
func TestTheLibraryIsSilentUnlessGivenALogger(t *testing.T) {
	var host lockedBuffer
	prevSlog, prevOut, prevFlags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(slog.NewTextHandler(&host, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log.SetOutput(&host)
	t.Cleanup(func() { slog.SetDefault(prevSlog); log.SetOutput(prevOut); log.SetFlags(prevFlags) })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bc := model.NewBroadcast("live")
	go demo.Publish(ctx, bc, demo.Options{Realtime: true, Loops: 1})
	srv, url, pin, err := subscribe.ServeLoopback(bc, subscribe.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	out, err := record.Files(filepath.Join(dir, "a.mkv"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := record.Run(ctx, record.Options{URL: url, Dial: subscribe.Options{TLSFingerprint: pin}, Broadcast: "live", Output: out, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	if host.Len() != 0 {
		t.Errorf("the library logged into the host's default logger:\n%s", host.String())
	}
	if st, err := os.Stat(filepath.Join(dir, "a.mkv")); err != nil || st.Size() == 0 {
		t.Fatalf("no recording: %v", err)
	}

	var mine lockedBuffer
	out, _ = record.Files(filepath.Join(dir, "b.mkv"), record.FileOptions{})
	lg := slog.New(slog.NewTextHandler(&mine, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if _, err := record.Run(ctx, record.Options{URL: url, Dial: subscribe.Options{TLSFingerprint: pin}, Broadcast: "live", Output: out, Duration: time.Second, Logger: lg}); err != nil {
		t.Fatal(err)
	}
	if host.Len() != 0 || !bytes.Contains(mine.Bytes(), []byte("output finished")) || !bytes.Contains(mine.Bytes(), []byte("moq: connected")) {
		t.Errorf("host got %q; Options.Logger got:\n%s", host.String(), mine.String())
	}
}

// lockedBuffer is a bytes.Buffer that goroutines of the recording (a
// backfill finishing after Run returned) may write while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

func (l *lockedBuffer) String() string { return string(l.Bytes()) }
