package hls_test

import (
	"bytes"
	"math"
	"testing"

	amp4 "github.com/abema/go-mp4"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/hls"
)

// A video frame whose end its publisher gave (hang's end marker: the
// engine's EndFrame) lasts until then in its segment, as in an MP4 file:
// the last frame before an outage and the last of the package, where no
// next frame gives the duration. The segment's duration in the state (and
// so in the playlists and the MPD) ends there too.
func TestAnEndMarkerGivesTheLastVideoSampleOfASegmentItsDuration(t *testing.T) {
	t.Parallel()
	v, a := looped("h264", 0, 1), looped("aac", 1, 1)
	const gap = 30_000_000
	ends := []int64{50_000, 100_000} // µs after the frame; frames are 33.3 ms apart
	run1 := mediatest.Interleave(v, a)
	frames := append(run1, mediatest.AfterDiscontinuity(mediatest.Interleave(v.Shift(gap), a.Shift(gap)))...)
	// The last video frame before the outage, and the last of all.
	var marked []int
	for i, f := range frames {
		if f.TrackID != 0 {
			continue
		}
		if i < len(run1) {
			marked = append(marked[:0], i)
		} else {
			marked = append(marked[:1], i)
		}
	}
	type segment struct {
		uri        string
		start, dur int64
		lastTicks  int64 // the duration of its last sample
	}
	// pkg records the frames with or without the end markers and returns
	// the video segment that ends at the outage and the last one, and the
	// video timescale.
	pkg := func(markers bool) ([]segment, int64) {
		st := newStore(t)
		// A file per segment: each segment's boxes read whole (the end
		// marker is the same in either layout).
		w := hls.NewWriter(hls.Options{Store: st, SegmentFiles: true})
		mediatest.Write(t, w, mediatest.Tracks(v, a), nil)
		for i, f := range frames {
			must(t, w.WriteFrame(f))
			for k, m := range marked {
				if m == i && markers {
					must(t, w.EndFrame(0, f.Timestamp+ends[k]))
				}
			}
		}
		must(t, w.Close())
		mediatest.DecodeClean(t, st.path("index.m3u8"))
		mediatest.DecodeClean(t, overHTTP(t, st, "index.mpd"))
		init, err := st.ReadFile("v0-init.mp4")
		must(t, err)
		mdhd, err := amp4.ExtractBoxWithPayload(bytes.NewReader(init), nil, amp4.BoxPath{amp4.BoxTypeMoov(), amp4.BoxTypeTrak(), amp4.BoxTypeMdia(), amp4.BoxTypeMdhd()})
		if err != nil || len(mdhd) != 1 {
			t.Fatalf("mdhd: %v (%d boxes)", err, len(mdhd))
		}
		var out []segment
		for _, r := range readState(t, st).Renditions {
			if r.ID != "v0" {
				continue
			}
			for i, s := range r.Segments {
				if !(i+1 < len(r.Segments) && r.Segments[i+1].Disc) && i != len(r.Segments)-1 {
					continue
				}
				b, err := st.ReadFile(s.URI)
				must(t, err)
				truns, err := amp4.ExtractBoxWithPayload(bytes.NewReader(b), nil, amp4.BoxPath{amp4.BoxTypeMoof(), amp4.BoxTypeTraf(), amp4.BoxTypeTrun()})
				if err != nil || len(truns) == 0 {
					t.Fatalf("%s: trun: %v", s.URI, err)
				}
				ents := truns[len(truns)-1].Payload.(*amp4.Trun).Entries
				out = append(out, segment{s.URI, s.Start, s.Dur, int64(ents[len(ents)-1].SampleDuration)})
			}
		}
		if len(out) != 2 {
			t.Fatalf("video segments %+v: want one discontinuity", out)
		}
		return out, int64(mdhd[0].Payload.(*amp4.Mdhd).Timescale)
	}
	with, scale := pkg(true)
	without, _ := pkg(false)
	for k, seg := range with {
		if want := ends[k] * scale / 1_000_000; seg.lastTicks != want {
			t.Errorf("%s: the last sample lasts %d ticks, want %d (%d µs, its end marker)", seg.uri, seg.lastTicks, want, ends[k])
		}
		// Without the marker the last sample lasts an estimate (a frame):
		// the last frame sits at the same place, and the segment ends
		// ends[k] after it instead of the estimate.
		est := without[k].lastTicks * 1_000_000 / scale
		lastWith, lastWithout := seg.start+seg.dur-ends[k], without[k].start+without[k].dur-est
		if math.Abs(float64(lastWith-lastWithout)) > 1000 || seg.start != without[k].start {
			t.Errorf("%s: the segment [%d, %d) µs does not end %d µs after its last frame (at %d µs, as without the marker)", seg.uri, seg.start, seg.start+seg.dur, ends[k], lastWithout)
		}
	}
	origin := firstTimestamp(v, a)
	if want := frames[marked[0]].Timestamp - origin + ends[0]; with[0].start+with[0].dur != want {
		t.Errorf("the segment before the outage ends at %d µs, want %d (its last frame's end marker)", with[0].start+with[0].dur, want)
	}
}
