package record_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// markedBroadcast publishes the vp9 sample (its catalog with a clock) with
// hang's markers: a
// discontinuity marker group between its second and third groups, and an
// end marker closing the last group 100 ms after its last frame (three
// frames' worth: no estimate gives it).
func markedBroadcast(t *testing.T) (*model.Broadcast, *samples.Sample) {
	t.Helper()
	s := samples.MustLoadSample("vp9")
	cat, err := demo.Catalog([]string{"vp9"})
	if err != nil {
		t.Fatal(err)
	}
	cat.Clock = &catalog.Clock{Wall: 212976000000000} // PTS 0 at 2026-10-01T00:00:00Z
	data, _ := cat.Marshal()
	bc := model.NewBroadcast("marked")
	cg, _ := bc.CreateTrack(catalog.TrackName).AppendGroup()
	cg.WriteFrame(model.Frame{Payload: data})
	cg.Close(nil)
	tr := bc.CreateTrack(cat.Renditions()[0].Name)
	tr.SetKeepGroups(1 << 10)
	var g *model.Group
	groups := 0
	for _, f := range s.Frames {
		if f.Keyframe {
			if g != nil {
				g.Close(nil)
			}
			if groups++; groups == 3 {
				m, _ := tr.AppendGroup()
				m.WriteFrame(model.Frame{Timestamp: f.Timestamp, Marker: true})
				m.Close(nil)
			}
			g, _ = tr.AppendGroup()
		}
		g.WriteFrame(model.Frame{Timestamp: f.Timestamp, Payload: f.Payload})
	}
	g.WriteFrame(model.Frame{Timestamp: s.Frames[len(s.Frames)-1].Timestamp + 100_000, Marker: true})
	g.Close(nil)
	bc.Close(nil)
	if groups < 3 {
		t.Fatalf("the sample has %d groups, the test needs 3", groups)
	}
	return bc, s
}

// TestMarkersReachNoFileAndTheEndMarkerEndsIt: a recording of a broadcast
// with hang's markers holds every media frame and no marker, breaks its
// timeline at the discontinuity marker, and ends where the end marker says
// (MKV Duration, MP4 last sample), through the recorder's outputs; its
// catalog clock dates it (MKV DateUTC, MP4 creation_time).
func TestMarkersReachNoFileAndTheEndMarkerEndsIt(t *testing.T) {
	for _, tc := range []struct {
		ext     string
		segment time.Duration // through the segmenting muxer
	}{{"mkv", 0}, {"mp4", 0}, {"mkv", time.Minute}} {
		t.Run(fmt.Sprint(tc.ext, tc.segment), func(t *testing.T) {
			t.Parallel()
			bc, s := markedBroadcast(t)
			dir := t.TempDir()
			name, path := "marked."+tc.ext, filepath.Join(dir, "marked."+tc.ext)
			if tc.segment > 0 {
				name, path = "marked-{n}."+tc.ext, filepath.Join(dir, "marked-0."+tc.ext)
			}
			out, err := record.Files(filepath.Join(dir, name), record.FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := record.New(record.Options{Output: out, Segment: tc.segment})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := rec.Record(ctx, record.Local(bc), "marked"); err != nil {
				t.Fatal(err)
			}
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			pk := p.PacketsOf(0)
			if len(pk) != len(s.Frames) {
				t.Fatalf("%d packets, the broadcast has %d frames (and 2 markers)", len(pk), len(s.Frames))
			}
			if tr := rec.Tracks(); len(tr) != 1 || tr[0].Gaps != 1 || tr[0].Written != int64(len(s.Frames)) {
				t.Fatalf("tracks %+v: want one gap and every frame written", tr)
			}
			first, _ := strconv.ParseFloat(pk[0].PTSTime, 64)
			last, _ := strconv.ParseFloat(pk[len(pk)-1].PTSTime, 64)
			want := last - first + 0.1
			if d, _ := p.Format.Seconds(); math.Abs(d-want) > 0.0015 {
				t.Errorf("the file lasts %.4f s, want %.4f: up to the end marker", d, want)
			}
			// The catalog's clock dates the file: its first frame's wall time.
			tags, _ := mediatest.Run(t, "ffprobe", "-v", "error", "-show_entries", "format_tags=creation_time", "-of", "default=nw=1:nk=1", path)
			at := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(s.Frames[0].Timestamp) * time.Microsecond)
			if got, want := strings.TrimSpace(tags), at.Format("2006-01-02T15:04:05.000000Z"); got != want {
				t.Errorf("creation_time %q, want %q (the catalog clock's time of the first frame)", got, want)
			}
		})
	}
}
