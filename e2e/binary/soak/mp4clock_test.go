package soak

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
)

// The soak reads each fault's loss from the packet times of the files,
// which --keep-timestamps puts on the publishers' clock. A finished MP4
// does not keep them: a regular MP4 has no start time, so it starts at its
// first frame (mux/mp4's package doc); only its fragments, while it is
// recorded (or after a kill), carry the broadcast's times (tfdt). The
// five-minute soak on 3ae7b0a (live26) took the MP4 recorder's last run,
// which began at 57.5 s after a full disk and was finished at the end,
// for a file of the publishers' clock: the hole of the publisher restart
// at 271.3 s showed at 213.8 s, inside the window of the 3.1 s blip at
// 213.1 s, and the soak reported a 2.58 s loss for a blip whose every
// frame was written (and 0.00 s for the full disk at 52.1 s, whose hole
// the shifted file covered). The soak now reads where each MP4 of the
// last runs starts before the finish, and places the finished file there.

// mp4Starts returns, for each MP4 file of paths that holds a fragment,
// where it starts on the publishers' clock: its earliest packet time, read
// from its fragments while it is still being recorded (before the finish
// moves it to 0).
func mp4Starts(t *testing.T, paths []string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, path := range paths {
		// The first fragment holds the first frame of every track
		// (a track's frames before the header wait with it).
		b, err := exec.Command("ffprobe", "-v", "quiet", "-read_intervals", "%+#400",
			"-show_entries", "packet=pts_time", "-of", "csv=p=0", path).Output()
		if err != nil {
			continue // no fragment yet: the caller waits or says so
		}
		first := math.Inf(1)
		for _, f := range strings.Fields(string(b)) {
			if v, err := strconv.ParseFloat(strings.TrimSuffix(f, ","), 64); err == nil {
				first = min(first, v)
			}
		}
		if !math.IsInf(first, 1) {
			out[path] = first
		}
	}
	return out
}

// waitMP4Starts reads mp4Starts of every MP4 of the run directories runs
// (their recorders still running), waiting up to 15 s for each to hold a
// fragment; a file that holds none by then is reported.
func waitMP4Starts(t *testing.T, runs ...string) map[string]float64 {
	t.Helper()
	var paths []string
	for _, dir := range runs {
		p, _ := filepath.Glob(filepath.Join(dir, "*.mp4"))
		paths = append(paths, p...)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		starts := mp4Starts(t, paths)
		if len(starts) == len(paths) {
			return starts
		}
		if time.Now().After(deadline) {
			for _, p := range paths {
				if _, ok := starts[p]; !ok {
					t.Errorf("%s: no fragment to read its start on the publishers' clock from", p)
				}
			}
			return starts
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// filePackets returns the packets of path by codec (cmdtest.PacketsByCodec)
// on the publishers' clock: a finished MP4 is moved to its start read
// before the finish (starts, from waitMP4Starts); a finished MP4 whose
// start was not read is reported, since its times say nothing of the
// faults.
func filePackets(t *testing.T, path string, starts map[string]float64) map[string]*cmdtest.StreamPackets {
	t.Helper()
	got := cmdtest.PacketsByCodec(t, path)
	if filepath.Ext(path) != ".mp4" {
		return got
	}
	start, ok := starts[path]
	if !ok {
		if finishedMP4(t, path) {
			t.Errorf("%s: a finished MP4 whose start on the publishers' clock was not read before the finish", filepath.Base(path))
		}
		return got
	}
	first := math.Inf(1)
	for _, sp := range got {
		if len(sp.Pts) > 0 {
			first = min(first, sp.Pts[0])
		}
	}
	if math.IsInf(first, 1) {
		return got
	}
	// 0 for a file the finish left as it was (a failed write): its
	// fragments are on the publishers' clock already.
	shift := start - first
	for _, sp := range got {
		for i := range sp.Pts {
			sp.Pts[i] += shift
		}
		for i := range sp.KeyPts {
			sp.KeyPts[i] += shift
		}
	}
	return got
}

// finishedMP4 reports whether path is a regular MP4 (a moov and no moof
// among its top-level boxes), not fragments.
func finishedMP4(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	moov := false
	var hdr [16]byte
	for off := int64(0); ; {
		if _, err := f.ReadAt(hdr[:8], off); err != nil {
			break
		}
		size := int64(binary.BigEndian.Uint32(hdr[:4]))
		switch typ := string(hdr[4:8]); typ {
		case "moof":
			return false
		case "moov":
			moov = true
		}
		if size == 1 {
			if _, err := f.ReadAt(hdr[8:16], off+8); err != nil {
				break
			}
			size = int64(binary.BigEndian.Uint64(hdr[8:16]))
		}
		if size < 8 {
			break // to the end of the file, or broken: no more boxes
		}
		off += size
	}
	return moov
}

// A finished MP4 starts at its first frame; the soak places it on the
// publishers' clock, where the fragments had it, so that its packets are
// those another container recorded of the same frames at the same times.
// The publisher's clock reads 20 s when the recorders join: the old
// reading (the finished file's own times) put the MP4 at 0-4 s, 20 s
// before the FLV of the same frames.
func TestTheSoakReadsAFinishedMP4OnThePublishersClock(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	certFile, keyFile, pin := cmdtest.PublisherCert(t, dir)
	const late = 20 * time.Second
	epoch := time.Now().Add(-late)
	pub := cmdtest.StartPublisher(t, ctx, "127.0.0.1:0", certFile, keyFile, epoch,
		"MOQ_EXPORT_TEST_BROADCASTS="+cmdtest.SoakBroadcasts, "MOQ_EXPORT_TEST_VERSIONS=moq-transport-22")
	exts := []string{"mp4", "flv"}
	var recs []*cmdtest.RecorderRun
	for _, ext := range exts {
		recs = append(recs, cmdtest.StartRecorder(t, ctx, dir, "moql://"+pub.Addr+"/", "--tls-fingerprint", pin,
			"--record-all", "--keep-timestamps", "-o", filepath.Join(ext, "{broadcast}."+ext)))
	}
	for _, r := range recs {
		if r.WaitMedia(4*time.Second) == 0 {
			r.Wait()
			t.Fatalf("no progress past 4 s:\n%s", r.Log.String())
		}
	}
	starts := waitMP4Starts(t, filepath.Join(dir, "mp4"))
	for _, r := range recs {
		r.Cmd.Process.Signal(os.Interrupt)
	}
	for i, r := range recs {
		if err := r.Wait(); err != nil {
			t.Fatalf("%s recorder: %v\n%s", exts[i], err, r.Log.String())
		}
	}
	for _, b := range []string{"legacy", "loc", "cmaf"} {
		mp4Path := filepath.Join(dir, "mp4", b+".mp4")
		if !finishedMP4(t, mp4Path) {
			t.Fatalf("%s: not finished: the test is about a finished MP4", mp4Path)
		}
		mp4 := filePackets(t, mp4Path, starts)
		flv := filePackets(t, filepath.Join(dir, "flv", b+".flv"), nil)
		for _, codec := range []string{"h264", "aac"} {
			m, f := mp4[codec], flv[codec]
			if m == nil || f == nil || len(m.Pts) == 0 || len(f.Pts) == 0 {
				t.Errorf("%s %s: no packets (mp4 %v, flv %v)", b, codec, m != nil, f != nil)
				continue
			}
			what := fmt.Sprintf("%s %s", b, codec)
			if m.Pts[0] < late.Seconds()-1 {
				t.Errorf("%s: the MP4 starts at %.3f s, before the publisher's clock read %.0f s when the recorders joined", what, m.Pts[0], late.Seconds())
			}
			// Frame by frame where both recorded: the same times, to
			// the containers' precision (unmatchedTimes).
			from, to := max(m.Pts[0], f.Pts[0]), min(m.Pts[len(m.Pts)-1], f.Pts[len(f.Pts)-1])
			if to-from < 2 {
				t.Errorf("%s: the MP4 (%.3f-%.3f s) and the FLV (%.3f-%.3f s) share %.3f s of the publisher's clock, want the 2 s and more both recorded",
					what, m.Pts[0], m.Pts[len(m.Pts)-1], f.Pts[0], f.Pts[len(f.Pts)-1], max(0, to-from))
				continue
			}
			if unmatched := unmatchedTimes(m.Pts, f.Pts, from, to); len(unmatched) > 0 {
				t.Errorf("%s: %d MP4 packets between %.3f and %.3f s have no FLV packet within 2 ms, the first at %.3f s", what, len(unmatched), from, to, unmatched[0])
			}
			if unmatched := unmatchedTimes(f.Pts, m.Pts, from, to); len(unmatched) > 0 {
				t.Errorf("%s: %d FLV packets between %.3f and %.3f s have no MP4 packet within 2 ms, the first at %.3f s", what, len(unmatched), from, to, unmatched[0])
			}
			t.Logf("%s: MP4 %.3f-%.3f s, FLV %.3f-%.3f s, MP4 less FLV %+.2f to %+.2f ms", what,
				m.Pts[0], m.Pts[len(m.Pts)-1], f.Pts[0], f.Pts[len(f.Pts)-1], 1000*nearestDiff(m.Pts, f.Pts, from, to, math.Min), 1000*nearestDiff(m.Pts, f.Pts, from, to, math.Max))
		}
	}
}

// unmatchedTimes returns the times of a (sorted) in [from, to] that have
// no time of b (sorted) within 2 ms: FLV truncates to whole milliseconds
// (up to 1 ms early), and a finished MP4 starts a track that begins after
// the first with an edit list in milliseconds (up to 0.5 ms either way);
// neighbouring frames are 21 ms (AAC) and 33 ms (video) apart.
func unmatchedTimes(a, b []float64, from, to float64) []float64 {
	const tol = 0.002
	var out []float64
	for _, v := range a {
		if v < from || v > to {
			continue
		}
		i, _ := slices.BinarySearch(b, v-tol)
		if i == len(b) || b[i] > v+tol {
			out = append(out, v)
		}
	}
	return out
}

// nearestDiff folds, with pick (min or max), the differences between each
// time of a (sorted) in [from, to] and the nearest time of b (sorted).
func nearestDiff(a, b []float64, from, to float64, pick func(x, y float64) float64) float64 {
	out, first := 0.0, true
	for _, v := range a {
		if v < from || v > to || len(b) == 0 {
			continue
		}
		i, _ := slices.BinarySearch(b, v)
		d := math.Inf(1)
		for _, j := range []int{i - 1, i} {
			if j >= 0 && j < len(b) && math.Abs(v-b[j]) < math.Abs(d) {
				d = v - b[j]
			}
		}
		if first {
			out, first = d, false
		} else {
			out = pick(out, d)
		}
	}
	return out
}
