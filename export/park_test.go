package export_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// exportGoroutines counts the goroutines running or waiting in the
// export engine.
func exportGoroutines() int { return mediatest.GoroutinesIn("moq-export/export.(*Export)") }

// settle waits for the goroutines of exports that ended (the one that
// called done still returns from it) to exit.
func settle(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); exportGoroutines() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("goroutines of an ended export did not exit")
		}
	}
}

// idleBroadcast is a broadcast with the demo catalog's renditions names
// and their tracks, not ended; write adds a one-frame group to a track.
func idleBroadcast(t *testing.T, names ...string) (bc *model.Broadcast, tracks map[string]*model.Track, write func(name string, ts int64)) {
	t.Helper()
	bc = model.NewBroadcast("idle")
	writeCatalog(t, bc.CreateTrack(catalog.TrackName), names...)
	tracks = map[string]*model.Track{}
	for _, n := range names {
		tracks[n] = bc.CreateTrack(n)
	}
	write = func(name string, ts int64) {
		g, _ := tracks[name].AppendGroup()
		g.WriteFrame(model.Frame{Timestamp: ts, Payload: []byte{1}})
		g.Close(nil)
	}
	return bc, tracks, write
}

// TestGoHoldsNoGoroutineWhileIdle: Go returns once the export has read
// what there is; while the broadcast sends nothing, no goroutine runs or
// waits for the export, and whatever ends it then (more media and the
// broadcast's end, a cancellation, a finalize that fails after one) ends
// it as Run would, with done called once with Run's outcome.
func TestGoHoldsNoGoroutineWhileIdle(t *testing.T) {
	for _, tc := range []struct {
		name       string
		failClose  bool
		end        func(bc *model.Broadcast, write func(string, int64), cancel context.CancelFunc)
		wantErr    error
		wantFrames int
	}{
		{name: "broadcast ends", wantFrames: 5, end: func(bc *model.Broadcast, write func(string, int64), _ context.CancelFunc) {
			write("aac", 60_000)
			write("aac", 80_000)
			bc.Close(nil)
		}},
		{name: "cancelled", wantErr: context.Canceled, wantFrames: 3, end: func(_ *model.Broadcast, _ func(string, int64), cancel context.CancelFunc) {
			cancel()
		}},
		{name: "finalize fails after a cancel", failClose: true, wantErr: errDiskFull, wantFrames: 3,
			end: func(_ *model.Broadcast, _ func(string, int64), cancel context.CancelFunc) { cancel() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			settle(t)
			bc, _, write := idleBroadcast(t, "aac")
			for ts := int64(0); ts < 60_000; ts += 20_000 {
				write("aac", ts)
			}
			rec := newRecorder()
			var m mux.Muxer = rec
			if tc.failClose {
				m = failingClose{rec}
			}
			e := export.New(bc, m, export.Options{Delay: 50 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 2)
			e.Go(ctx, func(err error) { done <- err })
			select {
			case err := <-done:
				t.Fatalf("ended while its broadcast runs: %v", err)
			default:
			}
			if n := exportGoroutines(); n != 0 {
				t.Fatalf("%d goroutines in the export while it is idle, want 0", n)
			}
			tc.end(bc, write, cancel)
			err := <-done
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("done(%v), want %v", err, tc.wantErr)
			}
			if tc.wantErr == errDiskFull && errors.Is(err, context.Canceled) {
				t.Fatalf("done(%v): the cancellation hid the finalize error", err)
			}
			if !rec.closed || len(rec.frames) != tc.wantFrames {
				t.Fatalf("muxer closed %v with %d frames, want %d", rec.closed, len(rec.frames), tc.wantFrames)
			}
			select {
			case err := <-done:
				t.Fatalf("done called twice, then with %v", err)
			default:
			}
		})
	}
}

// signalMuxer is a recorder that says when it wrote a frame.
type signalMuxer struct {
	*recorder
	wrote chan struct{}
}

func (m signalMuxer) WriteFrame(f mux.Frame) error {
	err := m.recorder.WriteFrame(f)
	select {
	case m.wrote <- struct{}{}:
	default:
	}
	return err
}

// TestParkedExportWakesAtItsDeadline: with nothing arriving, a parked
// export is woken by its deadlines alone: the start gate's (the video
// track never sends a frame) and then the jitter buffer's wall-clock
// bound, which declares the silent video idle and lets the audio out.
func TestParkedExportWakesAtItsDeadline(t *testing.T) {
	bc, _, write := idleBroadcast(t, "h264", "aac")
	for ts := int64(0); ts < 60_000; ts += 20_000 {
		write("aac", ts)
	}
	rec := signalMuxer{newRecorder(), make(chan struct{}, 1)}
	e := export.New(bc, rec, export.Options{Delay: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	e.Go(ctx, func(err error) { done <- err })
	<-rec.wrote // no input after Go: only its deadlines can have woken it
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("done(%v), want context.Canceled", err)
	}
	if got := rec.countByName(); got["aac"] != 3 || got["h264"] != 0 {
		t.Fatalf("wrote %v, want the 3 audio frames", got)
	}
}

// TestRunOfAnEndedBroadcastNeedsNoWakeup: an export whose broadcast ended
// before it started ends within Go's call, in the calling goroutine.
func TestRunOfAnEndedBroadcastNeedsNoWakeup(t *testing.T) {
	bc := publishDemo(t, 1, "aac")
	rec := newRecorder()
	var ended []error
	export.New(bc, rec, export.Options{}).Go(context.Background(), func(err error) { ended = append(ended, err) })
	if len(ended) != 1 || ended[0] != nil || !rec.closed {
		t.Fatalf("done calls %v, muxer closed %v", ended, rec.closed)
	}
}

// TestAnUnpacedExportLingersOnlyWhileNothingIsReady: an export of a
// broadcast written as fast as it is read (model.Broadcast.SetUnpaced)
// waits a moment for the producer before it parks: it goes on at once
// when a frame is there, and gives up after LingerFor when none comes.
func TestAnUnpacedExportLingersOnlyWhileNothingIsReady(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write bool
		want  bool
	}{
		{name: "a frame is there", write: true, want: true},
		{name: "nothing comes", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bc, _, write := idleBroadcast(t, "aac")
			bc.SetUnpaced()
			e := export.New(bc, newRecorder(), export.Options{Delay: 50 * time.Millisecond})
			defer e.Close()
			if err := e.Poll(); err != nil { // reads the catalog, subscribes
				t.Fatal(err)
			}
			for e.Linger() {
				if err := e.Poll(); err != nil {
					t.Fatal(err)
				}
			}
			if tc.write {
				write("aac", 0)
			}
			start := time.Now()
			if got := e.Linger(); got != tc.want {
				t.Fatalf("Linger() = %v, want %v", got, tc.want)
			}
			if d := time.Since(start); !tc.want && d < export.LingerFor {
				t.Errorf("gave up after %v, want at least %v", d, export.LingerFor)
			}
		})
	}
}

// TestAnUnpacedExportHoldsNoGoroutineWhileIdle: lingering does not keep
// an export of an unpaced broadcast that gets nothing: Go returns, and
// no goroutine runs or waits for it until the broadcast ends.
func TestAnUnpacedExportHoldsNoGoroutineWhileIdle(t *testing.T) {
	settle(t)
	bc, _, write := idleBroadcast(t, "aac")
	bc.SetUnpaced()
	write("aac", 0)
	rec := newRecorder()
	e := export.New(bc, rec, export.Options{Delay: 50 * time.Millisecond})
	done := make(chan error, 1)
	e.Go(context.Background(), func(err error) { done <- err })
	if n := exportGoroutines(); n != 0 {
		t.Fatalf("%d goroutines in the export while it is idle, want 0", n)
	}
	write("aac", 20_000)
	bc.Close(nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(rec.frames) != 2 {
		t.Fatalf("%d frames written, want 2", len(rec.frames))
	}
}
