package record_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// memFile is a File of a test's own Output: it keeps what is written and
// counts the flushes that reach it.
type memFile struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	flushes int
}

func (f *memFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(p)
}
func (f *memFile) Close() error { return nil }
func (f *memFile) Name() string { return "mem" }
func (f *memFile) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushes++
	return nil
}

// selfFlushingFile says whether it flushes itself (record.SelfFlushingFile).
type selfFlushingFile struct {
	*memFile
	itself bool
}

func (f selfFlushingFile) FlushesItself() bool { return f.itself }

// memOutput is an Output of one's own: its files are memFiles, wrapped by
// wrap.
type memOutput struct {
	wrap  func(*memFile) record.File
	mu    sync.Mutex
	files []*memFile
}

func (o *memOutput) Create(string, int, time.Time) (record.File, error) {
	f := &memFile{}
	o.mu.Lock()
	o.files = append(o.files, f)
	o.mu.Unlock()
	return o.wrap(f), nil
}
func (o *memOutput) DefaultFormat() record.Format { return record.MP4 }
func (o *memOutput) Check(record.Options) error   { return nil }

// TestAFileOfOnesOwnThatFlushesItselfGetsNoMuxerFlush: MP4 asks for a
// flush after every fragment. A File from outside the package that says it
// flushes itself (record.SelfFlushingFile, as FileOutput and the object
// store's spool do) gets none of them, so its writes stay as large as it
// makes them; one that does not say so gets each.
func TestAFileOfOnesOwnThatFlushesItselfGetsNoMuxerFlush(t *testing.T) {
	cases := []struct {
		name        string
		wrap        func(*memFile) record.File
		wantFlushes bool
	}{
		{"a file that flushes itself gets no flush", func(f *memFile) record.File { return selfFlushingFile{f, true} }, false},
		{"a file that says it does not gets every flush", func(f *memFile) record.File { return selfFlushingFile{f, false} }, true},
		{"a file without the capability gets every flush", func(f *memFile) record.File { return f }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bc := model.NewBroadcast("demo")
			if err := demo.Publish(context.Background(), bc, demo.Options{Renditions: []string{"h264", "aac"}, Loops: 2, KeepGroups: 1 << 20}); err != nil {
				t.Fatal(err)
			}
			out := &memOutput{wrap: tc.wrap}
			rec, err := record.New(record.Options{Output: out, Format: record.MP4, Delay: time.Hour, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			if err := rec.Record(context.Background(), record.Local(bc), "demo"); err != nil {
				t.Fatal(err)
			}
			if len(out.files) != 1 {
				t.Fatalf("%d files created, want 1", len(out.files))
			}
			f := out.files[0]
			if !bytes.Contains(f.buf.Bytes(), []byte("moof")) || rec.Stats().Frames == 0 {
				t.Fatalf("the file holds %d bytes and no fragment (%d frames recorded)", f.buf.Len(), rec.Stats().Frames)
			}
			if got := f.flushes > 0; got != tc.wantFlushes {
				t.Errorf("%d muxer flushes reached the file, want them: %v", f.flushes, tc.wantFlushes)
			}
		})
	}
}

// broadcastOutput is a record.BroadcastOutput of one's own: it reads the
// first frame of one track of the broadcast it is handed, and reports it;
// or, with untilEnd, reads nothing and returns when its context ends.
type broadcastOutput struct {
	objects  bool
	untilEnd bool
	track    string
	created  atomic.Int32
	first    chan []byte // the track's first frame
	names    chan string
}

func (o *broadcastOutput) Create(string, int, time.Time) (record.File, error) {
	o.created.Add(1)
	return nil, errors.New("a broadcast output creates no file")
}
func (o *broadcastOutput) DefaultFormat() record.Format { return "" }
func (o *broadcastOutput) Check(record.Options) error   { return nil }
func (o *broadcastOutput) Objects() bool                { return o.objects }

func (o *broadcastOutput) WriteBroadcast(ctx context.Context, w record.BroadcastWrite) error {
	o.names <- w.Name
	if o.untilEnd {
		<-ctx.Done()
		return nil
	}
	t, err := w.Broadcast.Track(o.track)
	if err != nil {
		return err
	}
	c := t.Subscribe(0)
	defer c.Close()
	for {
		ev, ok := c.Next()
		if ok && ev.Kind == model.EventFrame && !ev.Frame.Marker {
			o.first <- ev.Frame.Payload
			w.Wrote(1, int64(len(ev.Frame.Payload)), time.Duration(ev.Frame.Timestamp)*time.Microsecond)
			return nil
		}
		if ok {
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no frame of %s (tracks %v) before the end: %w", o.track, w.Broadcast.TrackNames(), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestABroadcastOutputOfOnesOwnIsHandedTheBroadcastAndItsObjects: an
// Output from outside the package that takes the broadcast whole
// (record.BroadcastOutput, as ArchiveOutput does) is handed it with no
// file created; Run dials for the objects as received when it asks for
// them (a cmaf frame stays its moof+mdat) and for frames when it does
// not; what it reports counts in the recording's stats; Duration ends it.
func TestABroadcastOutputOfOnesOwnIsHandedTheBroadcastAndItsObjects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bc := model.NewBroadcast("demo")
	go demo.Publish(ctx, bc, demo.Options{Renditions: []string{"h264", "aac"}, Realtime: true, Container: catalog.ContainerCMAF})
	srv, url, pin, err := subscribe.ServeLoopback(bc, subscribe.ServerOptions{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	run := func(ctx context.Context, out *broadcastOutput, d time.Duration) ([]*record.Recording, error) {
		var recs []*record.Recording
		var mu sync.Mutex
		files, err := record.Run(ctx, record.Options{URL: url, Dial: subscribe.Options{TLSFingerprint: pin, Logger: quiet()},
			Broadcast: "demo", Output: out, Duration: d, Logger: quiet(),
			OnRecording: func(r *record.Recording) { mu.Lock(); recs = append(recs, r); mu.Unlock() }})
		if len(files) != 0 || out.created.Load() != 0 {
			t.Errorf("%d files reported and %d created, want none", len(files), out.created.Load())
		}
		if n := <-out.names; n != "demo" {
			t.Errorf("handed broadcast %q, want demo", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if err == nil && (len(recs) != 2 || recs[0] != recs[1] || recs[1].State() != record.StateEnded) {
			t.Fatalf("%d calls of OnRecording, want one recording started and ended", len(recs))
		}
		return recs, err
	}
	for _, objects := range []bool{true, false} {
		name := "frames"
		if objects {
			name = "objects"
		}
		t.Run(name, func(t *testing.T) {
			out := &broadcastOutput{objects: objects, track: "0.m4s", first: make(chan []byte, 1), names: make(chan string, 1)}
			recs, err := run(ctx, out, 0)
			if err != nil {
				t.Fatal(err)
			}
			first := <-out.first
			if isFragment := len(first) > 8 && string(first[4:8]) == "moof"; isFragment != objects {
				t.Errorf("the first video frame begins % x: a moof+mdat: %v, want %v (Objects %v)", first[:min(8, len(first))], isFragment, objects, objects)
			}
			if s := recs[1].Stats(); s.Frames != 1 || s.Bytes != int64(len(first)) {
				t.Errorf("the recording's stats say %d frames, %d bytes; want 1 frame of %d bytes", s.Frames, s.Bytes, len(first))
			}
		})
	}
	t.Run("duration", func(t *testing.T) {
		out := &broadcastOutput{untilEnd: true, names: make(chan string, 1)}
		dctx, dcancel := context.WithTimeout(ctx, time.Minute)
		defer dcancel()
		if _, err := run(dctx, out, 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if dctx.Err() != nil {
			t.Fatal("the recording ended with the test's context, not at its Duration")
		}
	})
}
