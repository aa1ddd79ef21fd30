package hls_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/hls"
)

// liveBroadcast is 12 s of H.264 (a keyframe every second), AAC and
// WebVTT subtitles as a publisher that started at wall clock base sends
// them: a frame of broadcast time ts is sent at base+ts.
type liveBroadcast struct {
	v, a, s mediatest.Input
	frames  []mux.Frame // in the order a recorder's jitter buffer hands them on
	base    time.Time
}

func newLiveBroadcast(base time.Time) liveBroadcast {
	v, a, s := looped("h264", 0, 3), looped("aac", 1, 3), mediatest.TextInput(2, 3)
	return liveBroadcast{v: v, a: a, s: s, frames: mediatest.Interleave(v, a, s), base: base}
}

// join returns what a recorder that joins the broadcast when its
// newest frame is at edge receives until to: the video from its newest
// keyframe at or before edge (its group), the audio and subtitles from
// that keyframe's time, as the engine hands a live join on.
func (b liveBroadcast) join(edge, to int64) []mux.Frame {
	key := int64(0)
	for _, f := range b.v.Frames {
		if f.Keyframe && f.Timestamp <= edge {
			key = f.Timestamp
		}
	}
	var out []mux.Frame
	video := false
	for _, f := range b.frames {
		if f.Timestamp >= to {
			break
		}
		if f.TrackID == 0 && f.Timestamp == key {
			video = true
		}
		if (f.TrackID == 0 && video) || (f.TrackID != 0 && f.Timestamp >= key) {
			out = append(out, f)
		}
	}
	return out
}

// record writes frames into the package in st as a recorder that joined
// the broadcast when its newest frame was at edge receives them: the
// frames up to edge at once (its group's, when the recorder joins),
// each later one when it is sent, 40 ms after.
func (b liveBroadcast) record(t *testing.T, st *dirStore, frames []mux.Frame, edge int64) hls.Counters {
	t.Helper()
	var now time.Time
	w := hls.NewWriter(hls.Options{Store: st, SegmentDuration: time.Second, Now: func() time.Time { return now }})
	for _, tr := range mediatest.Tracks(b.v, b.a, b.s) {
		must(t, w.AddTrack(tr))
	}
	for _, f := range frames {
		now = b.base.Add(time.Duration(max(f.Timestamp, edge))*time.Microsecond + 40*time.Millisecond)
		must(t, w.WriteFrame(f))
	}
	must(t, w.Close())
	return w.Counters()
}

// payloadHashes returns the SHA-256 of each frame's payload of track
// id, in the order given.
func payloadHashes(frames []mux.Frame, id int) []string {
	var out []string
	for _, f := range frames {
		if f.TrackID == id {
			s := sha256.Sum256(f.Payload)
			out = append(out, "SHA256:"+hex.EncodeToString(s[:]))
		}
	}
	return out
}

// packageHashes returns the hash of every packet ffprobe reads from
// rendition id's playlist, in order, and their presentation times in µs.
func packageHashes(t *testing.T, st *dirStore, id string) (hashes []string, pts []int64) {
	t.Helper()
	for _, p := range mediatest.Probe(t, st.path(id+".m3u8"), "-show_data_hash", "sha256").Packets {
		hashes = append(hashes, p.DataHash)
		sec, _ := strconv.ParseFloat(p.PTSTime, 64)
		pts = append(pts, int64(sec*1e6+0.5))
	}
	return hashes, pts
}

// TestARecorderRestartedOntoItsPackageWritesNoFrameTwice: a recording of
// a live broadcast into a package ends inside a group of pictures (at
// 2.5 s), and the recorder, restarted at once, joins the same broadcast
// at that group's keyframe (2 s), which the package holds. The
// continued run is on the package's timeline: what the package holds is
// not written again, the video starts at the next keyframe (3 s) and the
// audio with it, at their published times; every packet of the package
// is a published frame, each once, in order, and ffmpeg decodes it.
// A recorder restarted after the broadcast's next keyframe loses nothing
// and keeps its frames' times too. A restarted publisher, whose times
// start again on another clock, and a package whose state an older
// version wrote, are continued after the package's end, as before.
func TestARecorderRestartedOntoItsPackageWritesNoFrameTwice(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	base := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	pub := newLiveBroadcast(base)
	restarted := newLiveBroadcast(base.Add(20 * time.Second)) // its times start again
	const end = 2_500_000                                     // where the first run stops
	cases := []struct {
		name string
		// The continued run: the publisher, when the recorder joined it
		// (its newest frame), until when it records; oldState: the
		// package's state as an older version wrote it (no source).
		pub      liveBroadcast
		edge, to int64
		oldState bool
		// want: the run is on the package's timeline, and the broadcast
		// time from which its frames are in the package (its video from
		// the first keyframe there); otherwise all of them.
		rejoined bool
		from     int64
	}{
		{name: "restarted at once, it joins at the keyframe the package ends in",
			pub: pub, edge: end + 300_000, to: 4_000_000, rejoined: true, from: 3_000_000},
		{name: "restarted after the next keyframe, it loses nothing",
			pub: pub, edge: end + 1_000_000, to: 4_000_000, rejoined: true, from: 3_000_000},
		{name: "a restarted publisher's times start again after the package's end",
			pub: restarted, edge: 300_000, to: 3_000_000},
		{name: "a package an older version wrote is continued after its end",
			pub: pub, edge: end + 300_000, to: 4_000_000, oldState: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := newStore(t)
			first := pub.join(0, end)
			if got := pub.record(t, st, first, 0); got.Continued {
				t.Fatalf("the first run: %+v", got)
			}
			if c.oldState {
				dropSource(t, st)
			}
			second := c.pub.join(c.edge, c.to)
			got := c.pub.record(t, st, second, c.edge)
			if !got.Continued {
				t.Fatalf("the continued run: %+v", got)
			}
			kept := second
			if c.rejoined {
				kept = fromKeyframe(second, c.from)
			}
			for _, r := range []struct {
				id    string
				track int
			}{{"v0", 0}, {"a0", 1}} {
				hashes, pts := packageHashes(t, st, r.id)
				one, two := payloadHashes(first, r.track), payloadHashes(kept, r.track)
				if want := append(slices.Clone(one), two...); !slices.Equal(hashes, want) {
					t.Errorf("%s: %d packets, %d of them the same as one before; want the first run's %d, then the second run's %d",
						r.id, len(hashes), repeats(hashes), len(one), len(two))
				}
				if !c.rejoined || len(pts) <= len(one) {
					continue
				}
				// On the broadcast's timeline: the second run's first
				// packet is as far after the first run's as published.
				at := firstOf(kept, r.track) - firstOf(first, r.track)
				if d := pts[len(one)] - pts[0] - at; d < -1000 || d > 1000 {
					t.Errorf("%s: the second run's first packet is %d µs after the first run's, published %d µs after", r.id, pts[len(one)]-pts[0], at)
				}
			}
			// The subtitles' segments begin with the media's, after the
			// same discontinuity.
			var starts []int64
			for _, r := range readState(t, st).Renditions {
				for _, seg := range r.Segments {
					if seg.Disc {
						starts = append(starts, seg.Start)
					}
				}
			}
			if len(starts) != 3 || starts[2] != starts[0] {
				t.Errorf("the continued run's first segments start at %v (v0, a0, s0), want s0's with v0's", starts)
			}
			b, err := st.ReadFile("v0.m3u8")
			must(t, err)
			if strings.Count(string(b), "#EXT-X-DISCONTINUITY\n") != 1 {
				t.Errorf("v0 after the continued run, want one discontinuity:\n%s", b)
			}
			mediatest.DecodeClean(t, st.path("index.m3u8"))
		})
	}
}

// fromKeyframe returns the frames a run joining at from keeps: the video
// from its first keyframe at or after from, the others from that time.
func fromKeyframe(frames []mux.Frame, from int64) []mux.Frame {
	var out []mux.Frame
	at := int64(-1)
	for _, f := range frames {
		if at < 0 && f.TrackID == 0 && f.Keyframe && f.Timestamp >= from {
			at = f.Timestamp
		}
		if at >= 0 && (f.TrackID == 0 || f.Timestamp >= at) {
			out = append(out, f)
		}
	}
	return out
}

// firstOf returns the time of the first frame of track id.
func firstOf(frames []mux.Frame, id int) int64 {
	for _, f := range frames {
		if f.TrackID == id {
			return f.Timestamp
		}
	}
	return -1
}

// repeats counts the hashes that an earlier one equals.
func repeats(hashes []string) int {
	seen, n := map[string]bool{}, 0
	for _, h := range hashes {
		if seen[h] {
			n++
		}
		seen[h] = true
	}
	return n
}

// dropSource takes the broadcast's timeline out of the package's state,
// as a version before it wrote the state.
func dropSource(t *testing.T, st *dirStore) {
	t.Helper()
	b, err := st.ReadFile("index.state.json")
	must(t, err)
	var s map[string]any
	must(t, jsonUnmarshal(b, &s))
	if _, ok := s["source"]; !ok {
		t.Fatalf("the state holds no source:\n%s", b)
	}
	delete(s, "source")
	out, err := json.Marshal(s)
	must(t, err)
	must(t, st.WriteFile("index.state.json", out))
}

// TestChromiumPlaysAPackageARestartedRecorderContinuedThroughItsBreak:
// hls.js plays a package whose recording (to 1.5 s, inside a group of
// pictures) a restarted recorder continued on the broadcast's timeline
// (from the next keyframe, 2 s, to 2.6 s, after a discontinuity): from
// its start, back to 0.6 s after the first second, through the break, to
// its end.
func TestChromiumPlaysAPackageARestartedRecorderContinuedThroughItsBreak(t *testing.T) {
	pub := newLiveBroadcast(time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC))
	st := newStore(t)
	pub.record(t, st, pub.join(0, 1_500_000), 0)
	if got := pub.record(t, st, pub.join(1_800_000, 2_600_000), 1_800_000); !got.Continued {
		t.Fatalf("the continued run: %+v", got)
	}
	b, err := st.ReadFile("v0.m3u8")
	must(t, err)
	want := 0.0
	for _, m := range extinfRE.FindAllStringSubmatch(string(b), -1) {
		d, _ := strconv.ParseFloat(m[1], 64)
		want += d
	}
	if strings.Count(string(b), "#EXT-X-DISCONTINUITY\n") != 1 || want < 1.9 || want > 2.3 {
		t.Fatalf("v0 of the continued package (%.3f s):\n%s", want, b)
	}
	br := serve(t, st.dir)
	var r playResult
	if err := br.Eval(fmt.Sprintf(hlsPlay, -1, "index.m3u8"), &r); err != nil {
		t.Fatal(err)
	}
	t.Logf("hls.js: %+v", r)
	if !r.Ended || r.Frames == 0 || r.Duration < want-0.2 || r.Duration > want+0.3 {
		t.Fatalf("hls.js played the continued package: %+v; want its end, decoded frames and a duration of %.3f s", r, want)
	}
}
