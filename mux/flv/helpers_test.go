package flv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"

	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
)

// probeStream is what ffprobe says about one stream.
type probeStream struct {
	codec    string
	frames   int     // decoded frames (-count_frames)
	channels int     // audio
	width    int     // video
	pts, dts []int64 // packet times in ms, file order
}

// probe returns the streams of path keyed by "video"/"audio", as tl's
// ffprobe sees them.
func probe(t *testing.T, tl mediatest.Tools, path string) map[string]*probeStream {
	t.Helper()
	p := tl.Probe(t, path, "-count_frames")
	out := map[string]*probeStream{}
	for _, st := range p.Streams {
		s := &probeStream{codec: st.CodecName, channels: st.Channels, width: st.Width}
		s.frames, _ = strconv.Atoi(st.NbReadFrames)
		out[st.CodecType] = s
	}
	for _, pk := range p.Packets {
		s := out[pk.CodecType]
		if s == nil {
			t.Fatalf("ffprobe: packet of unknown stream type %q", pk.CodecType)
		}
		if pk.PTS == nil || pk.DTS == nil {
			t.Fatalf("ffprobe: packet without pts or dts: %+v", pk)
		}
		s.pts = append(s.pts, *pk.PTS)
		s.dts = append(s.dts, *pk.DTS)
	}
	return out
}

// interleave merges the samples' frames as the engine delivers them (see
// mediatest.Interleave). Track i gets ID i+1; offset (µs) is added to every
// timestamp.
func interleave(offset int64, samples ...*samples.Sample) []mux.Frame {
	ins := make([]mediatest.Input, len(samples))
	for i, s := range samples {
		ins[i] = mediatest.InputOf(s, i+1).Shift(offset)
	}
	return mediatest.Interleave(ins...)
}

// writeFile muxes frames of tracks into dir/name with opts.
func writeFile(t *testing.T, name string, opts Options, tracks []mux.Track, frames []mux.Frame) string {
	t.Helper()
	f, path := mediatest.CreateFile(t, name)
	w := NewWriter(f, opts)
	mediatest.Write(t, w, tracks, frames)
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return path
}

// checkTimestamps compares ffprobe's packet times with the input frames of
// one track: same count, presentation times equal up to a constant shift
// (the rebase) within 1 ms of rounding, and decode times increasing.
func checkTimestamps(t *testing.T, kind string, got *probeStream, in []mux.Frame) {
	t.Helper()
	if len(got.pts) != len(in) {
		t.Fatalf("%s: %d packets in the file, %d frames written", kind, len(got.pts), len(in))
	}
	shift := got.pts[0] - in[0].Timestamp/1000
	for i, f := range in {
		want := f.Timestamp/1000 + shift
		if d := got.pts[i] - want; d < -1 || d > 1 {
			t.Fatalf("%s packet %d: pts %d ms, want %d (input %d µs)", kind, i, got.pts[i], want, f.Timestamp)
		}
		if i > 0 && got.dts[i] < got.dts[i-1] {
			t.Fatalf("%s packet %d: dts %d after %d goes back", kind, i, got.dts[i], got.dts[i-1])
		}
		if got.dts[i] > got.pts[i] {
			t.Fatalf("%s packet %d: dts %d after pts %d", kind, i, got.dts[i], got.pts[i])
		}
	}
}

// framesOfTrack returns the frames of track id.
func framesOfTrack(frames []mux.Frame, id int) []mux.Frame {
	var out []mux.Frame
	for _, f := range frames {
		if f.TrackID == id {
			out = append(out, f)
		}
	}
	return out
}

// flvTag is one tag read back by readFLV.
type flvTag struct {
	typ  byte
	ts   uint32
	body []byte
}

// readFLV parses an FLV file strictly: header, every tag's size and
// PreviousTagSize. It is the tests' independent check of the framing.
func readFLV(b []byte) (flags byte, tags []flvTag, err error) {
	if len(b) < 13 || string(b[:3]) != "FLV" || b[3] != 1 {
		return 0, nil, errors.New("no FLV header")
	}
	flags = b[4]
	if off := binary.BigEndian.Uint32(b[5:9]); off != 9 {
		return 0, nil, fmt.Errorf("data offset %d", off)
	}
	if binary.BigEndian.Uint32(b[9:13]) != 0 {
		return 0, nil, errors.New("PreviousTagSize0 not 0")
	}
	b = b[13:]
	for len(b) > 0 {
		if len(b) < 11 {
			return 0, nil, fmt.Errorf("truncated tag header (%d bytes)", len(b))
		}
		size := int(b[1])<<16 | int(b[2])<<8 | int(b[3])
		ts := uint32(b[7])<<24 | uint32(b[4])<<16 | uint32(b[5])<<8 | uint32(b[6])
		if len(b) < 11+size+4 {
			return 0, nil, fmt.Errorf("truncated tag body")
		}
		if prev := binary.BigEndian.Uint32(b[11+size:]); int(prev) != 11+size {
			return 0, nil, fmt.Errorf("PreviousTagSize %d, tag is %d", prev, 11+size)
		}
		tags = append(tags, flvTag{typ: b[0], ts: ts, body: b[11 : 11+size]})
		b = b[11+size+4:]
	}
	return flags, tags, nil
}

// readFLVFile reads the file at path and parses it with readFLV; either
// failing fails the test.
func readFLVFile(t *testing.T, path string) []flvTag {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, tags, err := readFLV(b)
	if err != nil {
		t.Fatal(err)
	}
	return tags
}

// codecCase is a row of the decode tests: samples written as tracks 1,
// 2, ... and the codec ffprobe must report for each stream type.
type codecCase struct {
	name    string
	samples []string
	codecs  map[string]string // ffprobe codec_type -> codec_name
	noDesc  bool              // drop the catalog description, as browsers publish Opus
}

// checkCodecCase writes tc's samples, interleaved from start (µs), to a
// file and checks it with tl: ffmpeg decodes it without a complaint, and
// ffprobe finds one stream per kind with the codec tc names, as many
// decoded frames as were written and their timestamps (checkTimestamps).
// more, if not nil, checks each stream further before its timestamps.
func checkCodecCase(t *testing.T, tl mediatest.Tools, tc codecCase, start int64, more func(t *testing.T, kind string, st *probeStream, tr mux.Track)) {
	t.Helper()
	var samples []*samples.Sample
	var tracks []mux.Track
	for i, n := range tc.samples {
		s := mediatest.LoadSample(n)
		samples = append(samples, s)
		tr := mediatest.TrackOf(s, i+1)
		if tc.noDesc {
			tr.Description = nil
		}
		tracks = append(tracks, tr)
	}
	frames := interleave(start, samples...)
	path := writeFile(t, tc.name+".flv", Options{}, tracks, frames)
	tl.DecodeClean(t, path)
	got := probe(t, tl, path)
	if len(got) != len(tc.codecs) {
		t.Fatalf("ffprobe found %d streams, want %d", len(got), len(tc.codecs))
	}
	for i, tr := range tracks {
		kind := tr.Kind.String()
		st := got[kind]
		if st == nil || st.codec != tc.codecs[kind] {
			t.Fatalf("%s stream: %+v, want codec %s", kind, st, tc.codecs[kind])
		}
		in := framesOfTrack(frames, i+1)
		if st.frames != len(in) {
			t.Errorf("%s: ffmpeg decoded %d frames, %d written", kind, st.frames, len(in))
		}
		if more != nil {
			more(t, kind, st, tr)
		}
		checkTimestamps(t, kind, st, in)
	}
}

// sortedCopy returns a sorted copy of v.
func sortedCopy(v []int64) []int64 {
	c := append([]int64(nil), v...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c
}
