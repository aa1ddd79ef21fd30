package mp4_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/mp4"
)

// TestPipeOutputPlaysAsItArrives streams fragmented MP4 into ffmpeg's
// stdin: ffmpeg hands out packets of the first fragments before the rest
// is written, and the whole stream decodes cleanly.
func TestPipeOutputPlaysAsItArrives(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg")
	ins := []mediatest.Input{loop(mediatest.SampleInput("h264", 1), 2), loop(mediatest.SampleInput("aac", 2), 2)}
	frames := mediatest.Interleave(ins...)

	copyCmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-probesize", "32", "-analyzeduration", "0",
		"-i", "pipe:0", "-map", "0", "-c", "copy", "-f", "framecrc", "-")
	stdin, _ := copyCmd.StdinPipe()
	stdout, _ := copyCmd.StdoutPipe()
	var stderr bytes.Buffer
	copyCmd.Stderr = &stderr
	if err := copyCmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := mp4.NewWriter(stdin, mp4.Options{})
	mediatest.Write(t, w, mediatest.Tracks(ins...), nil)
	half := len(frames) / 2
	for _, f := range frames[:half] {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	// Wait for ffmpeg to hand out a packet: it read the stream as it came.
	lines := bufio.NewScanner(stdout)
	packets := 0
	for packets == 0 && lines.Scan() {
		if !strings.HasPrefix(lines.Text(), "#") {
			packets++
		}
	}
	if packets == 0 {
		t.Fatalf("ffmpeg gave no packet from the first half of the stream: %s", stderr.String())
	}
	for _, f := range frames[half:] {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	for lines.Scan() {
		if !strings.HasPrefix(lines.Text(), "#") {
			packets++
		}
	}
	if err := copyCmd.Wait(); err != nil || stderr.Len() > 0 {
		t.Fatalf("ffmpeg on the pipe: %v\n%s", err, stderr.String())
	}
	if packets != len(frames) {
		t.Errorf("ffmpeg read %d packets from the pipe, %d frames went in", packets, len(frames))
	}
	// The same bytes decode cleanly.
	var buf bytes.Buffer
	w2 := mp4.NewWriter(&buf, mp4.Options{})
	mediatest.Feed(t, w2, ins...)
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	dec := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-i", "pipe:0", "-map", "0", "-f", "null", "-")
	dec.Stdin = &buf
	if out, err := dec.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("decoding the stream from a pipe: %v\n%s", err, out)
	}
}

// killChildEnv makes the test binary the recorder that TestKilledRecording
// kills.
const killChildEnv = "MP4_TEST_KILL_CHILD"

// TestRecorderUntilKilled is the child of TestKilledRecordingPlaysToItsLastFragment:
// it records looping media into the file named by killChildEnv as fast as
// it can, printing the number of fragments written each time it grows,
// until it is killed.
func TestRecorderUntilKilled(t *testing.T) {
	path := os.Getenv(killChildEnv)
	if path == "" {
		t.Skip("only run as the child of TestKilledRecordingPlaysToItsLastFragment")
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := mp4.NewWriter(f, mp4.Options{Path: path})
	ins := []mediatest.Input{mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)}
	mediatest.Write(t, w, mediatest.Tracks(ins...), nil)
	frames := mediatest.Interleave(ins...)
	period := mediatest.LoadSample("aac").Duration()
	reported := 0
	for i := 0; ; i++ {
		fr := frames[i%len(frames)]
		fr.Timestamp += int64(i/len(frames)) * period
		if err := w.WriteFrame(fr); err != nil {
			t.Fatal(err)
		}
		if n := w.Counters().Fragments; n > reported {
			reported = n
			// A parent that went away closes the pipe: stop then, and
			// never record more than a bounded amount.
			if _, err := fmt.Printf("fragments %d\n", n); err != nil || n > 1000 {
				return
			}
		}
	}
}

// TestKilledRecordingPlaysToItsLastFragment kills a recorder with SIGKILL
// once it has written a few fragments and checks that what it left decodes
// and holds at least the frames of those fragments.
func TestKilledRecordingPlaysToItsLastFragment(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	path := tempPath(t, "killed.mp4")
	cmd := proctest.Command(os.Args[0], "-test.run=^TestRecorderUntilKilled$", "-test.v")
	cmd.Env = append(os.Environ(), killChildEnv+"="+path)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	fragments := 0
	for fragments < 4 && lines.Scan() {
		if n, ok := strings.CutPrefix(lines.Text(), "fragments "); ok {
			fragments, _ = strconv.Atoi(n)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if fragments < 4 {
		t.Fatalf("the recorder reported %d fragments before it ended", fragments)
	}
	boxes := topBoxes(t, path)
	if len(boxes) < 2+2*fragments || boxes[0] != "ftyp" || boxes[1] != "moov" {
		t.Fatalf("killed recording's boxes %s, want ftyp,moov and %d fragments", compactBoxes(boxes), fragments)
	}
	whole := trimToWholeFragments(t, path)
	// What a player gets from the killed file: every frame of its whole
	// fragments, decoded without an error.
	mediatest.DecodeClean(t, whole)
	p := mediatest.Probe(t, whole)
	if got := len(p.Packets); got < fragments*30 {
		t.Errorf("killed recording holds %d packets in %d fragments, want at least 30 per fragment", got, fragments)
	}
	// ffmpeg also reads the killed file as it is, a torn last fragment
	// included, without failing.
	if err := exec.Command("ffmpeg", "-nostdin", "-v", "quiet", "-i", path, "-map", "0", "-f", "null", "-").Run(); err != nil {
		t.Errorf("ffmpeg on the killed file as it is: %v", err)
	}
	if st, _ := os.Stat(path); st != nil && p.Format.Duration == "" {
		t.Errorf("no duration for the killed file")
	}
}

// trimToWholeFragments copies path up to its last whole box, which is
// where a killed recording's last whole fragment ends.
func trimToWholeFragments(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	end := 0
	for end+8 <= len(b) {
		size := int(uint32(b[end])<<24 | uint32(b[end+1])<<16 | uint32(b[end+2])<<8 | uint32(b[end+3]))
		if size < 8 || end+size > len(b) {
			break
		}
		next := end + size
		if string(b[end+4:end+8]) == "moof" {
			// A moof counts only with its whole mdat.
			if next+8 > len(b) {
				break
			}
			msize := int(uint32(b[next])<<24 | uint32(b[next+1])<<16 | uint32(b[next+2])<<8 | uint32(b[next+3]))
			if next+msize > len(b) {
				break
			}
			next += msize
		}
		end = next
	}
	out := tempPath(t, "whole.mp4")
	if err := os.WriteFile(out, b[:end], 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDiscontinuityKeepsTheGapWithoutStretchingAFrame feeds two runs of
// media 5 s apart, the second marked as a discontinuity: both forms keep
// every timestamp (the gap included), the finished file lasts the whole
// span, and in the fragments the frame before the gap keeps a frame's
// duration.
func TestDiscontinuityKeepsTheGapWithoutStretchingAFrame(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	const gap = 5_000_000
	join := func(name string, id int) mediatest.Input {
		a := mediatest.SampleInput(name, id)
		period := mediatest.LoadSample(name).Duration()
		b := a.Shift(period + gap)
		b.Frames = mediatest.AfterDiscontinuity(b.Frames)
		a.Frames = append(a.Frames, b.Frames...)
		return a
	}
	ins := []mediatest.Input{join("h264", 1), join("aac", 2)}
	for _, fm := range forms {
		t.Run(fm.name, func(t *testing.T) {
			path := muxFile(t, "gap.mp4", fm.finished, mp4.Options{FinishByCopy: fm.byCopy}, ins...)
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			for i, in := range ins {
				checkPackets(t, path, p, i, in, 0, 1000)
			}
			if fm.finished {
				checkLayout(t, path, true, p, mediatest.LoadSample("aac").Duration()*2+gap, frameUs(ins[0]))
				return
			}
			// The last video frame before the gap lasts one frame.
			durs := packetDurations(t, path, 0)
			n := len(mediatest.LoadSample("h264").Frames)
			if d := durs[n-1]; d > 40_000 {
				t.Errorf("the video frame before the gap lasts %d µs, want one frame (33 ms)", d)
			}
		})
	}
}

// TestAGapWithoutADiscontinuityKeepsDecodeTimesOnTheFrameGrid loses video
// frames before a keyframe with no discontinuity said (the tail of a GOP
// and the next GOP, as a resume whose groups went missing without a word),
// and the audio of the same time. Before, the DTS estimate spread the gap
// over the frames after it (the keyframe's DTS 0.58 s before its PTS, then
// decode times in steps of 37.5 and 45.8 ms): ffprobe guessed 240 fps,
// and ffmpeg 5.1 put the decoded video on a 27 fps grid and repeated
// timestamps ("non monotonically increasing dts"). Every form must decode
// clean, hold the frames that went in, and read as 30 fps.
func TestAGapWithoutADiscontinuityKeepsDecodeTimesOnTheFrameGrid(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	for _, gap := range []struct {
		name     string
		from, to int // video frames [from, to) of three loops are lost
	}{
		{"GOPTailAndNextGOP", 27, 60},
		{"TwoFramesAndNextGOP", 58, 90},
		{"GOPTailAndTwoGOPs", 77, 150},
	} {
		v := loop(mediatest.SampleInput("h264", 1), 3)
		a := loop(mediatest.SampleInput("aac", 2), 3)
		lostFrom, lostTo := v.Frames[gap.from].Timestamp, v.Frames[gap.to].Timestamp
		v.Frames = slices.Delete(slices.Clone(v.Frames), gap.from, gap.to)
		a.Frames = slices.DeleteFunc(slices.Clone(a.Frames), func(f mux.Frame) bool {
			return f.Timestamp >= lostFrom && f.Timestamp < lostTo
		})
		ins := []mediatest.Input{v, a}
		for _, fm := range forms {
			t.Run(gap.name+"/"+fm.name, func(t *testing.T) {
				t.Parallel()
				path := muxFile(t, "gap.mp4", fm.finished, mp4.Options{FinishByCopy: fm.byCopy}, ins...)
				mediatest.DecodeClean(t, path)
				p := mediatest.Probe(t, path)
				for i, in := range ins {
					checkPackets(t, path, p, i, in, origin(ins...), 1000)
				}
				out, _ := mediatest.Run(t, "ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "stream=r_frame_rate", "-of", "csv=p=0", path)
				if got := strings.TrimSpace(out); got != "30/1" {
					t.Errorf("ffprobe guesses the video at %s fps, want 30/1", got)
				}
			})
		}
	}
}

// packetDurations returns the durations, in µs, of stream index's packets.
func packetDurations(t *testing.T, path string, index int) []int64 {
	t.Helper()
	out, _ := mediatest.Run(t, "ffprobe", "-v", "error", "-select_streams", strconv.Itoa(index),
		"-show_entries", "packet=duration_time", "-of", "csv=p=0", path)
	var ds []int64
	for _, l := range strings.Fields(out) {
		f, err := strconv.ParseFloat(strings.Trim(l, ","), 64)
		if err != nil {
			t.Fatalf("packet duration %q", l)
		}
		ds = append(ds, int64(f*1e6+0.5))
	}
	return ds
}

// TestTimestampsAreRebasedUnlessKept: the first frame is at 0 by default;
// with KeepTimestamps the fragments keep the broadcast's times, and the
// finished file starts at its first frame (a regular MP4 has no start time
// but an empty edit that players would show as blank).
func TestTimestampsAreRebasedUnlessKept(t *testing.T) {
	mediatest.RequireTools(t, "ffprobe")
	const at = 3_600_000_000
	ins := []mediatest.Input{mediatest.SampleInput("h264", 1).Shift(at), mediatest.SampleInput("aac", 2).Shift(at)}
	for _, tc := range []struct {
		name     string
		keep     bool
		finished bool
		origin   int64
	}{
		{"Rebased", false, false, at},
		{"RebasedFinished", false, true, at},
		{"Kept", true, false, 0},
		{"KeptFinished", true, true, at},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := muxFile(t, "ts.mp4", tc.finished, mp4.Options{KeepTimestamps: tc.keep}, ins...)
			p := mediatest.Probe(t, path)
			for i, in := range ins {
				checkPackets(t, path, p, i, in, tc.origin, 1000)
			}
		})
	}
}

// TestTrackAddedAfterTheHeaderIsRefusedWithErrLateTrack: the moov that the
// fragments (and a pipe) start with cannot grow.
func TestTrackAddedAfterTheHeaderIsRefusedWithErrLateTrack(t *testing.T) {
	w := mp4.NewWriter(nopWriter{}, mp4.Options{})
	in := mediatest.SampleInput("aac", 1)
	mediatest.Write(t, w, []mux.Track{in.Track}, in.Frames[:3])
	if err := w.AddTrack(mediatest.SampleInput("h264", 2).Track); !errors.Is(err, mux.ErrLateTrack) {
		t.Fatalf("AddTrack after the header: %v, want ErrLateTrack", err)
	}
	if err := w.WriteFrame(in.Frames[3]); err != nil {
		t.Fatalf("the other tracks go on: %v", err)
	}
}

// limitedFile writes to a file until limit bytes, then fails every write
// as a full disk does.
type limitedFile struct {
	f     *os.File
	limit int64
	n     int64
}

var errDiskFull = errors.New("no space left on device")

func (l *limitedFile) Write(p []byte) (int, error) {
	if l.n+int64(len(p)) > l.limit {
		k, _ := l.f.Write(p[:l.limit-l.n])
		l.n += int64(k)
		return k, errDiskFull
	}
	k, err := l.f.Write(p)
	l.n += int64(k)
	return k, err
}

// TestFullDiskEndsTheRecordingAndLeavesItPlayable: the write error comes
// back from WriteFrame and Close, nothing is written after it, the file is
// not finished, and its whole fragments decode.
func TestFullDiskEndsTheRecordingAndLeavesItPlayable(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	f, path := mediatest.CreateFile(t, "full.mp4")
	out := &limitedFile{f: f, limit: 90_000}
	w := mp4.NewWriter(out, mp4.Options{Path: path})
	ins := []mediatest.Input{mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)}
	mediatest.Write(t, w, mediatest.Tracks(ins...), nil)
	var werr error
	for _, fr := range mediatest.Interleave(ins...) {
		if werr = w.WriteFrame(fr); werr != nil {
			break
		}
	}
	if !errors.Is(werr, errDiskFull) {
		t.Fatalf("WriteFrame on a full disk: %v, want the write error", werr)
	}
	if err := w.Close(); !errors.Is(err, errDiskFull) {
		t.Errorf("Close after the write error: %v, want it again", err)
	}
	if w.Counters().Finished {
		t.Error("a recording that failed was finished")
	}
	if st, _ := os.Stat(path); st.Size() != out.limit {
		t.Errorf("file holds %d bytes, the disk took %d", st.Size(), out.limit)
	}
	whole := trimToWholeFragments(t, path)
	mediatest.DecodeClean(t, whole)
	if p := mediatest.Probe(t, whole); len(p.Packets) < 30 {
		t.Errorf("the fragments written before the disk filled hold %d packets", len(p.Packets))
	}
}

// TestFinishRefusesAFileItDidNotWrite: when Options.Path is not the file
// the writer wrote (here it grew behind its back), Close says so and leaves
// the recording fragmented and playable.
func TestFinishRefusesAFileItDidNotWrite(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg")
	f, path := mediatest.CreateFile(t, "other.mp4")
	w := mp4.NewWriter(f, mp4.Options{Path: path})
	mediatest.Feed(t, w, mediatest.SampleInput("h264", 1))
	if _, err := f.Write([]byte{0, 0, 0, 8, 'f', 'r', 'e', 'e'}); err != nil { // a free box, behind the muxer
		t.Fatal(err)
	}
	err := w.Close()
	if err == nil || !strings.Contains(err.Error(), "left fragmented") {
		t.Fatalf("Close on a file that changed: %v, want an error saying it stays fragmented", err)
	}
	if boxes := compactBoxes(topBoxes(t, path)); boxes != "ftyp,moov,moof,mdat,free,moof,mdat" {
		t.Errorf("boxes %s, want the fragments kept", boxes)
	}
	mediatest.DecodeClean(t, trimToWholeFragments(t, path))
}

// TestMisuseGetsSentinelErrors covers the contract's error cases.
func TestMisuseGetsSentinelErrors(t *testing.T) {
	w := mp4.NewWriter(nopWriter{}, mp4.Options{})
	in := mediatest.SampleInput("aac", 1)
	if err := w.AddTrack(in.Track); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTrack(in.Track); err == nil {
		t.Error("a track added twice was accepted")
	}
	if err := w.WriteFrame(mux.Frame{TrackID: 9, Payload: []byte{1}}); !errors.Is(err, mux.ErrUnknownTrack) {
		t.Errorf("frame of an unknown track: %v", err)
	}
	if err := w.RemoveTrack(9); !errors.Is(err, mux.ErrUnknownTrack) {
		t.Errorf("removing an unknown track: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.WriteFrame(in.Frames[0]); !errors.Is(err, mux.ErrClosed) {
		t.Errorf("WriteFrame after Close: %v", err)
	}
	if err := w.AddTrack(mediatest.SampleInput("h264", 2).Track); !errors.Is(err, mux.ErrClosed) {
		t.Errorf("AddTrack after Close: %v", err)
	}
}

// TestRemovedTrackEndsAndTheOthersGoOn removes the audio track halfway.
func TestRemovedTrackEndsAndTheOthersGoOn(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	for _, fm := range forms {
		t.Run(fm.name, func(t *testing.T) {
			f, path := mediatest.CreateFile(t, "rm.mp4")
			opts := mp4.Options{FinishByCopy: fm.byCopy}
			if fm.finished {
				opts.Path = path
			}
			w := mp4.NewWriter(f, opts)
			mediatest.Write(t, w, mediatest.Tracks(v, a), nil)
			frames := mediatest.Interleave(v, a)
			kept := 0
			for i, fr := range frames {
				if i == len(frames)/2 {
					if err := w.RemoveTrack(2); err != nil {
						t.Fatal(err)
					}
				}
				if fr.TrackID == 2 && i >= len(frames)/2 {
					continue
				}
				if fr.TrackID == 2 {
					kept++
				}
				if err := w.WriteFrame(fr); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			if got := len(p.PacketsOf(1)); got != kept {
				t.Errorf("audio packets %d, want the %d written before the removal", got, kept)
			}
			if got := len(p.PacketsOf(0)); got != len(v.Frames) {
				t.Errorf("video packets %d, want %d", got, len(v.Frames))
			}
		})
	}
}

// writeRecorder keeps every Write it gets as a separate buffer.
type writeRecorder struct{ writes [][]byte }

func (r *writeRecorder) Write(p []byte) (int, error) {
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

// TestEachFragmentIsOneWrite: after the header, every Write the Writer
// makes is one whole moof+mdat, so an output that passes on whole Writes
// (the CLI's file output) never ends inside a fragment's boxes, and the
// fragments' bytes make a file that decodes to every frame.
func TestEachFragmentIsOneWrite(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	ins := []mediatest.Input{loop(mediatest.SampleInput("h264", 1), 3), loop(mediatest.SampleInput("aac", 2), 3)}
	for _, tc := range []struct {
		name string
		ins  []mediatest.Input
	}{{"h264+aac", ins}, {"aac", ins[1:]}, {"h264", ins[:1]}} {
		t.Run(tc.name, func(t *testing.T) {
			var rec writeRecorder
			w := mp4.NewWriter(&rec, mp4.Options{})
			mediatest.Feed(t, w, tc.ins...)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if len(rec.writes) != 1+w.Counters().Fragments {
				t.Fatalf("%d writes for a header and %d fragments", len(rec.writes), w.Counters().Fragments)
			}
			for i, b := range rec.writes[1:] {
				path := tempPath(t, "fragment.mp4")
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				if boxes := strings.Join(topBoxes(t, path), ","); boxes != "moof,mdat" {
					t.Fatalf("write %d holds %s, want one moof,mdat", i+1, boxes)
				}
			}
			path := tempPath(t, "all.mp4")
			if err := os.WriteFile(path, bytes.Join(rec.writes, nil), 0o644); err != nil {
				t.Fatal(err)
			}
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			for i, in := range tc.ins {
				checkPackets(t, path, p, i, in, origin(tc.ins...), 1000)
			}
		})
	}
}
