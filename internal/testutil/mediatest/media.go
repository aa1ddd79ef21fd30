package mediatest

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/mux"
)

// AnnexBSuffix, appended to the name of an H.264/H.265 sample, asks
// LoadSample for the browser's form of it: Annex B payloads with in-band
// parameter sets and no description.
const AnnexBSuffix = "-annexb"

// LoadSample returns the embedded sample called name ("h264", "aac", ...),
// or its Annex B form for "h264-annexb" and "h265-annexb". Like
// samples.MustLoadSample it panics on a name that does not exist.
func LoadSample(name string) *samples.Sample {
	if base, ok := strings.CutSuffix(name, AnnexBSuffix); ok {
		return samples.MustLoadSample(base).MustAnnexB()
	}
	return samples.MustLoadSample(name)
}

// TrackOf returns the mux.Track of sample s with ID id.
func TrackOf(s *samples.Sample, id int) mux.Track {
	kind := mux.Audio
	if s.Kind == "video" {
		kind = mux.Video
	}
	return mux.Track{
		ID: id, Name: s.Name, Kind: kind, Codec: s.Codec, Description: s.Description,
		Width: s.Width, Height: s.Height, Framerate: s.Framerate,
		SampleRate: s.SampleRate, Channels: s.Channels,
	}
}

// FramesOf returns the frames of sample s, in decode order, as frames of
// track id.
func FramesOf(s *samples.Sample, id int) []mux.Frame {
	out := make([]mux.Frame, len(s.Frames))
	for i, f := range s.Frames {
		out[i] = mux.Frame{TrackID: id, Timestamp: f.Timestamp, Keyframe: f.Keyframe, Payload: f.Payload}
	}
	return out
}

// Input is one track and its frames in decode order, as a test feeds it to
// a muxer.
type Input struct {
	Track  mux.Track
	Frames []mux.Frame
}

// InputOf returns sample s as track id.
func InputOf(s *samples.Sample, id int) Input {
	return Input{Track: TrackOf(s, id), Frames: FramesOf(s, id)}
}

// SampleInput returns the embedded sample called name (see LoadSample) as
// track id.
func SampleInput(name string, id int) Input {
	return InputOf(LoadSample(name), id)
}

// Shift returns a copy of in with d microseconds added to every frame's
// timestamp; in is not changed.
func (in Input) Shift(d int64) Input {
	out := Input{Track: in.Track, Frames: make([]mux.Frame, len(in.Frames))}
	for i, f := range in.Frames {
		f.Timestamp += d
		out.Frames[i] = f
	}
	return out
}

// Tracks returns the tracks of ins, in order.
func Tracks(ins ...Input) []mux.Track {
	out := make([]mux.Track, len(ins))
	for i, in := range ins {
		out[i] = in.Track
	}
	return out
}

// Interleave merges the inputs' frames as the jitter buffer hands them to a
// muxer: decode order within a track, and across tracks the frame with the
// smallest key first, where a frame's key is the largest timestamp of its
// track so far (so a B-frame does not overtake the frame it follows). On
// equal keys the earlier input goes first.
func Interleave(ins ...Input) []mux.Frame {
	pos := make([]int, len(ins))
	keys := make([]int64, len(ins)) // largest timestamp released per input
	n := 0
	for _, in := range ins {
		n += len(in.Frames)
	}
	out := make([]mux.Frame, 0, n)
	for {
		best, bestKey := -1, int64(0)
		for i, in := range ins {
			if pos[i] >= len(in.Frames) {
				continue
			}
			key := in.Frames[pos[i]].Timestamp
			if pos[i] > 0 {
				key = max(key, keys[i])
			}
			if best < 0 || key < bestKey {
				best, bestKey = i, key
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, ins[best].Frames[pos[best]])
		keys[best] = bestKey
		pos[best]++
	}
}

// AfterDiscontinuity returns a copy of frames with mux.Frame.Discontinuity
// set on the first frame of each track: every track's timeline broke just
// before them (a publisher restart).
func AfterDiscontinuity(frames []mux.Frame) []mux.Frame {
	out := slices.Clone(frames)
	seen := map[int]bool{}
	for i := range out {
		if !seen[out[i].TrackID] {
			seen[out[i].TrackID] = true
			out[i].Discontinuity = true
		}
	}
	return out
}

// Write adds tracks to w and writes frames in order, failing t at the
// first error. It does not close w.
func Write(t testing.TB, w mux.Muxer, tracks []mux.Track, frames []mux.Frame) {
	t.Helper()
	for _, tr := range tracks {
		if err := w.AddTrack(tr); err != nil {
			t.Fatalf("AddTrack(%d %s): %v", tr.ID, tr.Codec, err)
		}
	}
	for _, f := range frames {
		if err := w.WriteFrame(f); err != nil {
			t.Fatalf("WriteFrame(track %d at %d µs): %v", f.TrackID, f.Timestamp, err)
		}
	}
}

// Feed adds the inputs' tracks to w and writes their frames in Interleave
// order, failing t at the first error. It does not close w.
func Feed(t testing.TB, w mux.Muxer, ins ...Input) {
	t.Helper()
	Write(t, w, Tracks(ins...), Interleave(ins...))
}

// CreateFile creates the file name in a fresh t.TempDir, to be muxed into
// and then checked by path; it is closed when the test ends.
func CreateFile(t testing.TB, name string) (f *os.File, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

// MeanPayload returns the mean payload size of frames in bytes, for
// b.SetBytes in a benchmark whose operation is one frame.
func MeanPayload(frames []mux.Frame) int64 {
	if len(frames) == 0 {
		return 0
	}
	var total int64
	for _, f := range frames {
		total += int64(len(f.Payload))
	}
	return total / int64(len(frames))
}

// BenchMux is the muxer benchmark loop: one operation is one frame of the
// interleaved inputs, looped with period µs added on every pass, so ns/op
// and allocs/op are per frame and MB/s counts payload bytes. w gets the
// inputs' tracks first and is closed at the end, outside the timing.
func BenchMux(b *testing.B, w mux.Muxer, period int64, ins ...Input) {
	b.Helper()
	frames := Interleave(ins...)
	if len(frames) == 0 {
		b.Fatal("no frames to benchmark")
	}
	Write(b, w, Tracks(ins...), nil)
	b.SetBytes(MeanPayload(frames))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := frames[i%len(frames)]
		f.Timestamp += int64(i/len(frames)) * period
		if err := w.WriteFrame(f); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// SupportCases are tracks a container may or may not carry: every sample,
// the Annex B forms, an unknown codec, a broken configuration record and a
// codec on a track of the wrong kind.
func SupportCases() []mux.Track {
	var out []mux.Track
	for i, name := range []string{"h264", "h265", "av1", "vp8", "vp9", "aac", "opus", "flac", "mp3", "ac3", "h264" + AnnexBSuffix, "h265" + AnnexBSuffix} {
		tr := TrackOf(LoadSample(name), i+1)
		tr.Name = name
		out = append(out, tr)
	}
	bad := TrackOf(LoadSample("h264"), len(out)+1)
	bad.Name, bad.Description = "h264-bad-avcC", []byte{1, 2}
	wrong := TrackOf(LoadSample("aac"), len(out)+2)
	wrong.Name, wrong.Kind = "aac-as-video", mux.Video
	return append(out,
		mux.Track{ID: len(out) + 3, Name: "theora", Kind: mux.Video, Codec: "theora"},
		bad, wrong)
}

// CheckSupports checks that caps.Supports and the AddTrack of a fresh muxer
// from newMuxer agree on every SupportCases track (both accept, or both
// refuse, with ErrUnsupportedCodec in both errors or in neither), and that
// the tracks accepted are the ones named in want.
func CheckSupports(t testing.TB, caps mux.Caps, newMuxer func() mux.Muxer, want ...string) {
	t.Helper()
	if caps.Supports == nil {
		t.Fatal("caps without Supports")
	}
	var ok []string
	for _, tr := range SupportCases() {
		serr := caps.Check(tr)
		m := newMuxer()
		aerr := m.AddTrack(tr)
		_ = m.Close()
		if (serr == nil) != (aerr == nil) || errors.Is(serr, mux.ErrUnsupportedCodec) != errors.Is(aerr, mux.ErrUnsupportedCodec) {
			t.Errorf("%s (%s): Supports says %v, AddTrack says %v", tr.Name, tr.Codec, serr, aerr)
		}
		if serr == nil {
			ok = append(ok, tr.Name)
		}
	}
	slices.Sort(ok)
	slices.Sort(want)
	if !slices.Equal(ok, want) {
		t.Errorf("%s carries %v, want %v", caps.Container, ok, want)
	}
}

// CheckStats checks a muxer's mux.Stats against ffprobe: it muxes h264 and
// aac into a file named name (its extension says the container), once
// whole and once joining the video mid-GOP, and checks that Frames is the
// number of packets ffprobe counts, that every frame given is written or
// counted as dropped, that Bytes is the payload bytes given when nothing
// was dropped, and that the whole input is written without drops.
func CheckStats(t *testing.T, name string, newMuxer func(io.Writer) mux.Muxer) {
	t.Helper()
	v, a := SampleInput("h264", 1), SampleInput("aac", 2)
	midGOP := v
	midGOP.Frames = v.Frames[1:]
	for _, tc := range []struct {
		name  string
		video Input
	}{{"whole", v}, {"mid-GOP", midGOP}} {
		t.Run(tc.name, func(t *testing.T) {
			f, path := CreateFile(t, name)
			m := newMuxer(f)
			frames := Interleave(tc.video, a)
			Write(t, m, Tracks(tc.video, a), frames)
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			st := m.Stats()
			var given int64
			for _, fr := range frames {
				given += int64(len(fr.Payload))
			}
			if n := len(Probe(t, path).Packets); st.Frames != int64(n) {
				t.Errorf("Stats.Frames = %d, ffprobe counts %d packets", st.Frames, n)
			}
			if st.Frames+st.Dropped != int64(len(frames)) {
				t.Errorf("Stats %+v: %d frames given", st, len(frames))
			}
			if tc.name == "whole" && (st.Dropped != 0 || st.Bytes != given) {
				t.Errorf("Stats %+v, want nothing dropped and %d payload bytes", st, given)
			}
			if st.Dropped == 0 && st.Bytes != given || st.Dropped > 0 && (st.Bytes >= given || st.Bytes == 0) {
				t.Errorf("Stats %+v: Bytes does not match the %d payload bytes given", st, given)
			}
		})
	}
}
