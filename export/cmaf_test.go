package export_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/internal/testutil/cmaftest"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/flv"
	"github.com/moq-export/moq-export/mux/mkv"
	"github.com/moq-export/moq-export/mux/mp4"
	"github.com/moq-export/moq-export/mux/ts"
	"github.com/moq-export/moq-export/subscribe"
)

// containers are the muxers a CMAF rendition is recorded into, with
// whether the container keeps each sample's bytes as they are (so that the
// packet sizes must match the source's).
var cmafContainers = []struct {
	ext       string
	caps      mux.Caps
	new       func(f *os.File) mux.Muxer
	sameBytes bool
}{
	{"flv", flv.Caps, func(f *os.File) mux.Muxer { return flv.NewWriter(f, flv.Options{}) }, true},
	{"mkv", mkv.Caps, func(f *os.File) mux.Muxer { return mkv.NewWriter(f, mkv.Options{}) }, true},
	{"ts", ts.Caps, func(f *os.File) mux.Muxer { return ts.NewWriter(f, ts.Options{}) }, false},
	{"mp4", mp4.Caps, func(f *os.File) mux.Muxer { return mp4.NewWriter(f, mp4.Options{Path: f.Name()}) }, true},
}

// TestCMAFRecordingsMatchTheSourcePackets is the whole CMAF path: ffmpeg
// makes a plain MP4 of each test codec and remuxes it to fragmented MP4
// (one fragment per frame, and one per GOP); a publisher splits that into
// the single-track moof+mdat frames and the catalog (init, no
// description) that `moq import fmp4` publishes, on a loopback moq-lite
// session; one export per container records it. ffprobe's packet list of
// every recording (presentation and decode times, keyframe flags, sizes
// where the container keeps the bytes) must match the source MP4's, and
// ffmpeg must decode it without a message.
func TestCMAFRecordingsMatchTheSourcePackets(t *testing.T) {
	cmaftest.RequireFFmpeg(t)
	tools := mediatest.NewFFmpeg(t) // reads Enhanced FLV (hvc1, av01, vp09, Opus)
	dir := t.TempDir()
	for _, c := range cmaftest.Codecs {
		// Each codec's source is made inside its own subtest: a -run that
		// names one case (…/opus/gop) encodes only that codec. It once
		// encoded all six (x265 and libaom the slowest) for every case it
		// ran, 30 s a run at load 40: -count=20 of one case overran go
		// test's 10-minute limit in ffmpeg, with nothing failed.
		t.Run(c.Name, func(t *testing.T) {
			src := cmaftest.Encode(t, dir, c, "2")
			want := cmaftest.Packets(t, "ffprobe", src, 0)
			for _, form := range []cmaftest.Form{cmaftest.EveryFrame, cmaftest.PerGOP} {
				t.Run(cmaftest.FormName(form), func(t *testing.T) {
					f := cmaftest.Fragmented(t, src, form)
					var id uint32
					for k := range f.Inits {
						id = k
					}
					out := recordCMAF(t, filepath.Join(dir, c.Name+"-"+cmaftest.FormName(form)), cmaftest.Track{Name: "0.m4s", File: f, ID: id})
					if len(out) == 0 {
						t.Fatal("no container carries the codec")
					}
					for ext, path := range out {
						sameBytes := false
						for _, ct := range cmafContainers {
							if ct.ext == ext {
								sameBytes = ct.sameBytes
							}
						}
						tools.DecodeClean(t, path)
						got := cmaftest.Packets(t, tools.FFprobe, path, 0)
						if err := samePackets(got, want, sameBytes); err != nil {
							t.Errorf("%s: %v", ext, err)
						}
					}
				})
			}
		})
	}
}

// samePackets compares a recording's packets with the source's: times
// relative to the first packet, within the 1 ms of FLV and Matroska. The
// decode times are the muxers' own (the model carries presentation times;
// the muxers derive decode times from the slice headers, as for legacy
// input): after the estimator's start-up (the first mini-GOP) they must
// follow the source's at a constant distance.
func samePackets(got, want []cmaftest.Packet, sameBytes bool) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d packets, source has %d", len(got), len(want))
	}
	const tol = 1000
	near := func(a, b int64) bool { return a-b <= tol && b-a <= tol }
	for i := range got {
		g, w := got[i], want[i]
		if !near(g.PTS-got[0].PTS, w.PTS-want[0].PTS) || g.Key != w.Key || (sameBytes && g.Size != w.Size) {
			return fmt.Errorf("packet %d: pts+%d key %v size %d, source pts+%d key %v size %d",
				i, g.PTS-got[0].PTS, g.Key, g.Size, w.PTS-want[0].PTS, w.Key, w.Size)
		}
	}
	mid := len(got) / 2
	if got[mid].DTS == noTime || want[mid].DTS == noTime {
		return nil // no decode times in this container
	}
	offset := (got[mid].DTS - got[0].PTS) - (want[mid].DTS - want[0].PTS)
	for i := startup; i < len(got); i++ {
		if d := (got[i].DTS - got[0].PTS) - (want[i].DTS - want[0].PTS); !near(d, offset) {
			return fmt.Errorf("packet %d: dts %d from the first pts, source %d (other packets: %+d)",
				i, got[i].DTS-got[0].PTS, want[i].DTS-want[0].PTS, offset)
		}
	}
	return nil
}

const noTime = -1 << 63

// startup is how many packets the decode time estimate needs to lock on
// (x265's first mini-GOP is three frames long).
const startup = 4

// recordCMAF publishes tracks over a loopback session and records them
// into every container that carries them; it returns the files by
// extension.
func recordCMAF(t *testing.T, base string, tracks ...cmaftest.Track) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	pub, err := cmaftest.NewPublisher("cmaf", tracks...)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Write(1); err != nil {
		t.Fatal(err)
	}
	srv, url, pin, err := subscribe.ServeLoopback(pub.B, subscribe.ServerOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	sess, err := subscribe.Dial(ctx, url, subscribe.Options{TLSFingerprint: pin, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	rb := sess.Broadcast("cmaf")
	// Subscribe every track and wait for its first fragment: the rest is
	// published once the exports read, so none of it goes before a
	// subscription (which starts at the live edge).
	for _, tr := range tracks {
		mt, err := rb.Track(tr.Name)
		if err != nil {
			t.Fatal(err)
		}
		waitFrame(t, ctx, mt)
	}
	cat := catalogOf(t, pub.B)
	out := map[string]string{}
	type running struct {
		e    *export.Export
		m    mux.Muxer
		f    *os.File
		done chan error
	}
	var runs []*running
	for _, ct := range cmafContainers {
		carried := true
		for _, r := range cat.Renditions() {
			if ct.caps.Check(export.TrackFromRendition(r, 1)) != nil {
				carried = false
			}
		}
		if !carried {
			continue
		}
		path := base + "." + ct.ext
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		m := ct.new(f)
		// The whole clip arrives at once, its groups in any order: a
		// stalled group is waited for, not skipped.
		r := &running{e: export.New(rb, m, export.Options{Logger: quiet, Latency: time.Hour}), m: m, f: f, done: make(chan error, 1)}
		go func() { r.done <- r.e.Run(ctx) }()
		runs = append(runs, r)
		out[ct.ext] = path
	}
	// Every export has its tracks subscribed before the rest is written.
	for _, r := range runs {
		waitFor(t, ctx, func() bool { return r.e.Stats().Tracks == len(tracks) })
	}
	if err := pub.Write(-1); err != nil {
		t.Fatal(err)
	}
	pub.End()
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := <-r.done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("export: %v", err)
			}
			r.f.Close()
		}()
	}
	wg.Wait()
	pub.B.Close(nil)
	return out
}

func catalogOf(t *testing.T, b *model.Broadcast) *catalog.Catalog {
	t.Helper()
	tr, err := b.Track(catalog.TrackName)
	if err != nil {
		t.Fatal(err)
	}
	seq, _ := tr.LatestGroup()
	frames, _, _ := tr.Group(seq).Frames(0)
	c, err := catalog.Parse(frames[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFrame waits until track tr holds a frame.
func waitFrame(t *testing.T, ctx context.Context, tr *model.Track) {
	t.Helper()
	c := tr.Subscribe(time.Hour)
	defer c.Close()
	rs := model.NewReadySet()
	c.Watch(rs)
	for {
		for {
			ev, ok := c.Next()
			if !ok {
				break
			}
			if ev.Kind == model.EventFrame {
				return
			}
			if ev.Kind == model.EventEnd {
				t.Fatalf("track %s ended before a frame: %v", tr.Name(), ev.Err)
			}
		}
		select {
		case <-rs.Wakeup():
			rs.Take(nil)
		case <-ctx.Done():
			t.Fatalf("no frame on %s", tr.Name())
		}
	}
}

// waitFor polls cond (a state another goroutine reaches) until it holds.
func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not reached")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
