package mp4_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/mp4"
)

// form is one of the outputs of a Writer.
type form struct {
	name     string
	finished bool
	byCopy   bool // Options.FinishByCopy
}

var forms = []form{{"Fragmented", false, false}, {"Finished", true, false}, {"FinishedByCopy", true, true}}

// muxFile muxes ins into a new file name and returns its path; finished
// sets Options.Path so Close finishes it.
func muxFile(t *testing.T, name string, finished bool, opts mp4.Options, ins ...mediatest.Input) string {
	t.Helper()
	f, path := mediatest.CreateFile(t, name)
	if finished {
		opts.Path = path
	}
	w := mp4.NewWriter(f, opts)
	mediatest.Feed(t, w, ins...)
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := w.Counters().Finished; got != finished {
		t.Fatalf("Stats().Finished = %v, want %v", got, finished)
	}
	return path
}

// topBoxes lists the types of the top-level boxes of an MP4 file.
func topBoxes(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for len(b) >= 8 {
		size := uint64(binary.BigEndian.Uint32(b))
		hdr := uint64(8)
		if size == 1 && len(b) >= 16 {
			size, hdr = binary.BigEndian.Uint64(b[8:]), 16
		}
		if size < hdr || size > uint64(len(b)) {
			out = append(out, string(b[4:8])+"(truncated)")
			break
		}
		out = append(out, string(b[4:8]))
		b = b[size:]
	}
	return out
}

// compactBoxes joins runs of moof,mdat as "moof,mdat..." for messages and
// comparisons.
func compactBoxes(boxes []string) string {
	s := strings.Join(boxes, ",")
	for strings.Contains(s, "moof,mdat,moof,mdat") {
		s = strings.ReplaceAll(s, "moof,mdat,moof,mdat", "moof,mdat")
	}
	return s
}

// packetUs returns a packet's pts and dts in microseconds.
func packetUs(t *testing.T, p mediatest.Packet, timeBase string) (pts, dts int64) {
	t.Helper()
	num, den, ok := strings.Cut(strings.Trim(timeBase, ","), "/")
	if !ok {
		t.Fatalf("time base %q", timeBase)
	}
	n, _ := strconv.ParseInt(num, 10, 64)
	d, _ := strconv.ParseInt(den, 10, 64)
	conv := func(v *int64) int64 {
		if v == nil {
			t.Fatalf("packet without a timestamp: %+v", p)
		}
		return int64(math.Round(float64(*v) * float64(n) * 1e6 / float64(d)))
	}
	return conv(p.PTS), conv(p.DTS)
}

// timeBases returns the time base of each stream, by index.
func timeBases(t *testing.T, path string) []string {
	t.Helper()
	out, _ := mediatest.Run(t, "ffprobe", "-v", "error", "-show_entries", "stream=time_base", "-of", "csv=p=0", path)
	return strings.Fields(out)
}

// checkPackets compares ffprobe's packets of stream index with the input
// frames: the same count, presentation times within tol µs of the input
// rebased by origin, keyframe flags, and decode times that increase and do
// not pass the presentation times (equal to them for codecs without
// reordering).
func checkPackets(t *testing.T, path string, p mediatest.ProbeResult, index int, in mediatest.Input, origin, tol int64) {
	t.Helper()
	tb := timeBases(t, path)
	pk := p.PacketsOf(index)
	if len(pk) != len(in.Frames) {
		t.Fatalf("stream %d (%s): ffprobe lists %d packets, %d frames went in", index, in.Track.Codec, len(pk), len(in.Frames))
	}
	reorders := in.Track.Kind == mux.Video && slices.Contains([]string{"h264", "h265"}, mux.CodecFamily(in.Track.Codec))
	var prevDTS int64
	bad := 0
	for i, f := range in.Frames {
		pts, dts := packetUs(t, pk[i], tb[index])
		want := f.Timestamp - origin
		if d := pts - want; (d < -tol || d > tol) && bad < 5 {
			bad++
			t.Errorf("stream %d packet %d: pts %d µs, want %d µs (input %d)", index, i, pts, want, f.Timestamp)
		}
		key := strings.Contains(pk[i].Flags, "K")
		if wantKey := f.Keyframe || in.Track.Kind == mux.Audio; key != wantKey && bad < 5 {
			bad++
			t.Errorf("stream %d packet %d: keyframe flag %v, want %v", index, i, key, wantKey)
		}
		if i > 0 && dts <= prevDTS && bad < 5 {
			bad++
			t.Errorf("stream %d packet %d: dts %d µs does not increase (previous %d)", index, i, dts, prevDTS)
		}
		if dts > pts+tol && bad < 5 {
			bad++
			t.Errorf("stream %d packet %d: dts %d µs after pts %d µs", index, i, dts, pts)
		}
		if !reorders && abs(dts-pts) > tol && bad < 5 {
			bad++
			t.Errorf("stream %d packet %d: dts %d µs, want the pts %d µs", index, i, dts, pts)
		}
		prevDTS = dts
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// toAnnexB turns an H.264/H.265 input into the browser's form: Annex B,
// parameter sets in band, no description.
func toAnnexB(in *mediatest.Input) {
	s := mediatest.LoadSample(in.Track.Name + mediatest.AnnexBSuffix)
	in.Track.Description, in.Frames = nil, mediatest.FramesOf(s, in.Track.ID)
}

// origin is the first timestamp of the inputs: where a rebased file starts.
func origin(ins ...mediatest.Input) int64 {
	o := int64(math.MaxInt64)
	for _, in := range ins {
		for _, f := range in.Frames {
			o = min(o, f.Timestamp)
		}
	}
	return o
}

// loop returns in repeated n times back to back (timestamps shifted by the
// sample's duration each time), for longer media.
func loop(in mediatest.Input, n int) mediatest.Input {
	period := mediatest.LoadSample(in.Track.Name).Duration()
	out := mediatest.Input{Track: in.Track}
	for i := range n {
		out.Frames = append(out.Frames, in.Shift(int64(i)*period).Frames...)
	}
	return out
}

func tempPath(t *testing.T, name string) string { return filepath.Join(t.TempDir(), name) }
