package export_test

import (
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// TestBehindIsTheMediaReceivedButNotYetWritten: while a gap is filled (the
// track held, the live groups after the gap already in), the export trails
// live by the gap; once the gap's groups are in and written, it has
// caught up. The figures are those the frames' times give, so only a
// measure of received against written passes.
func TestBehindIsTheMediaReceivedButNotYetWritten(t *testing.T) {
	const frame = mediatest.AACFrame
	cat, _ := demo.Catalog([]string{"aac"})
	bc, audio, group := mediatest.AudioGroups(t, "d", cat)
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{MediaTimeOnly: true, MaxDelay: 5 * time.Second})
	poll := func() {
		t.Helper()
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	if b := e.Behind(); b != 0 {
		t.Fatalf("behind %v before any frame, want 0", b)
	}
	for seq := range uint64(50) {
		group(seq)
		poll()
	}
	if len(rec.frames) == 0 {
		t.Fatal("nothing written: the test proves nothing")
	}
	steady := e.Behind()
	if steady > 500*time.Millisecond {
		t.Fatalf("behind %v in steady state, want at most the delay", steady)
	}

	// An outage of 1,900 groups (40.5 s; 41.6 s behind): the reconnect holds the track
	// while it fetches them, and the live groups after them land first.
	audio.Hold()
	for seq := uint64(1950); seq < 2000; seq++ {
		group(seq)
		poll()
	}
	want := time.Duration(1999-49) * frame * time.Microsecond // newest received less newest written
	held := e.Behind()
	if b := held; b < want-steady-time.Millisecond || b > want+time.Millisecond {
		t.Fatalf("behind %v while the gap is filled, want %v (less the %v of steady state)", b, want, steady)
	}
	for seq := uint64(50); seq < 1950; seq++ {
		group(seq)
	}
	audio.Release()
	for range 100 {
		poll()
	}
	if b := e.Behind(); b > 500*time.Millisecond {
		t.Fatalf("behind %v once the gap was filled and written (%d frames), want caught up", b, len(rec.frames))
	}
	t.Logf("behind: %v in steady state, %v while the gap was filled, %v after", steady, held, e.Behind())
	if len(rec.frames) < 1900 {
		t.Fatalf("%d frames written, want the gap's too", len(rec.frames))
	}
}
