package service

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/subscribe"
)

// TestListenLimitsPublishersAndBroadcasts: with --max-publishers 1 a second
// publisher is refused (code 64+429) while the first goes on; with
// --max-broadcasts 1 the first publisher's second broadcast is refused and
// the first recorded, playable. Each refusal names who and why, and
// /metrics counts both by reason.
func TestListenLimitsPublishersAndBroadcasts(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	l := cmdtest.StartListener(t, dir, "-v", "--http", "127.0.0.1:0", "--max-publishers", "1", "--max-broadcasts", "1", "--record-all", "-o", "rec/{broadcast}-{n}.mkv", "--duration", "1.5s")
	base := statusPage(t, l.Log) // logged before the listening line
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess := publisher(t, ctx, l.Addr, l.Pin)
	l.WaitLine(t, "publisher connected")
	opts := subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: l.Pin, Logger: slog.New(slog.DiscardHandler)}
	opts.Reconnect.Disabled = true
	second, err := subscribe.Dial(ctx, "moql://"+l.Addr+"/", opts)
	if err == nil {
		<-second.Done()
		err = second.Err()
		second.Close()
	}
	if ce, ok := errors.AsType[*subscribe.CloseError](err); !ok || ce.Code != subscribe.CodeTooMany {
		t.Errorf("second publisher: %v, want a close with code %d", err, subscribe.CodeTooMany)
	}
	l.WaitLine(t, "refused a session", "too many sessions", "remote=127.0.0.1:")
	publishDemo(t, ctx, sess, "alice", demo.Options{})
	l.WaitLine(t, "writing", "alice-0.mkv")
	publishDemo(t, ctx, sess, "bob", demo.Options{})
	l.WaitLine(t, "refused a broadcast", "broadcast=bob", "publisher=127.0.0.1:", "--max-broadcasts is 1")
	l.WaitLine(t, "output finished", "alice-0.mkv")
	fams := scrapeMetrics(t, base)
	for reason, want := range map[string]float64{subscribe.RefusedTooMany: 1, "recordings": 1, subscribe.RefusedUnauthorized: 0} {
		if got := labelled(fams, "moq_export_publishers_refused_total", "reason", reason); got != want {
			t.Errorf("moq_export_publishers_refused_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}
	l.Cmd.Process.Signal(os.Interrupt)
	if err := l.Wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v\n%s", err, strings.Join(l.Log, "\n"))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "rec", "*"))
	if len(files) != 1 || filepath.Base(files[0]) != "alice-0.mkv" {
		t.Fatalf("files %v, want only alice-0.mkv", files)
	}
	cmdtest.Decode(t, files[0])
}

// TestListenMinFreeRefusesRecordings: below --min-free nothing is
// recorded, and the log says why.
func TestListenMinFreeRefusesRecordings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := cmdtest.StartListener(t, dir, "--min-free", "1000000T", "--record-all", "-o", "rec/{broadcast}-{n}.mkv")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess := publisher(t, ctx, l.Addr, l.Pin)
	publishDemo(t, ctx, sess, "alice", demo.Options{})
	l.WaitLine(t, "refused a broadcast", "broadcast=alice", "below --min-free")
	l.Cmd.Process.Signal(os.Interrupt)
	l.Wait(t, 20*time.Second)
	if files, _ := filepath.Glob(filepath.Join(dir, "rec", "*")); len(files) != 0 {
		t.Fatalf("files %v below the floor", files)
	}
}
