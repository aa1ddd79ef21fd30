package mkv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/at-wat/ebml-go"

	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
)

// TestEachCodecMuxesToAFileThatDecodesAndSeeks muxes every sample of
// testdata alone into a finalized file and checks it with ffmpeg (clean
// decode), ffprobe (codec, packet count, first/last timestamps, duration)
// and mkvmerge (no errors or warnings, codec ID, duration).
func TestEachCodecMuxesToAFileThatDecodesAndSeeks(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe", "mkvmerge")
	tests := []struct {
		name, sample string
		change       func(*input)
		probeCodec   string
		codecID      string
		docType      string
	}{
		{"H264WithAvcC", "h264", nil, "h264", "V_MPEG4/ISO/AVC", "matroska"},
		{"H264AnnexBBuildsAvcC", "h264", toAnnexB, "h264", "V_MPEG4/ISO/AVC", "matroska"},
		{"H264AnnexBSizeFromSPS", "h264", func(in *input) { toAnnexB(in); in.Track.Width, in.Track.Height = 0, 0 }, "h264", "V_MPEG4/ISO/AVC", "matroska"},
		{"H264SizeFromAvcC", "h264", func(in *input) { in.Track.Width, in.Track.Height = 0, 0 }, "h264", "V_MPEG4/ISO/AVC", "matroska"},
		{"H265WithHvcC", "h265", nil, "hevc", "V_MPEGH/ISO/HEVC", "matroska"},
		{"H265AnnexBBuildsHvcC", "h265", toAnnexB, "hevc", "V_MPEGH/ISO/HEVC", "matroska"},
		{"AV1WithAv1C", "av1", nil, "av1", "V_AV1", "webm"},
		{"AV1BuildsAv1CFromSequenceHeader", "av1", func(in *input) { in.Track.Description = nil }, "av1", "V_AV1", "webm"},
		{"VP8", "vp8", nil, "vp8", "V_VP8", "webm"},
		{"VP8SizeFromKeyframe", "vp8", func(in *input) { in.Track.Width, in.Track.Height = 0, 0 }, "vp8", "V_VP8", "webm"},
		{"VP9", "vp9", nil, "vp9", "V_VP9", "webm"},
		{"VP9SizeFromKeyframe", "vp9", func(in *input) { in.Track.Width, in.Track.Height = 0, 0 }, "vp9", "V_VP9", "webm"},
		{"OpusWithOpusHead", "opus", nil, "opus", "A_OPUS", "webm"},
		{"OpusBuildsOpusHead", "opus", func(in *input) { in.Track.Description = nil }, "opus", "A_OPUS", "webm"},
		{"AACWithASC", "aac", nil, "aac", "A_AAC", "matroska"},
		{"AACBuildsASC", "aac", func(in *input) { in.Track.Description = nil }, "aac", "A_AAC", "matroska"},
		{"FLAC", "flac", nil, "flac", "A_FLAC", "matroska"},
		{"MP3", "mp3", nil, "mp3", "A_MPEG/L3", "matroska"},
		{"AC3", "ac3", nil, "ac3", "A_AC3", "matroska"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := mediatest.SampleInput(tc.sample, 7)
			if tc.change != nil {
				tc.change(&in)
			}
			path := muxFile(t, "out.mkv", Options{}, in)
			mediatest.DecodeClean(t, path)

			p := mediatest.Probe(t, path)
			if len(p.Streams) != 1 || p.Streams[0].CodecName != tc.probeCodec {
				t.Fatalf("ffprobe streams %+v, want one %s", p.Streams, tc.probeCodec)
			}
			if in.Track.Kind == mux.Video && (p.Streams[0].Width != 320 || p.Streams[0].Height != 180) {
				t.Errorf("size %dx%d, want 320x180", p.Streams[0].Width, p.Streams[0].Height)
			}
			got, want := streamPTS(t, p, 0), expectedPTS(in, in.Frames[0].Timestamp)
			if tc.sample == "opus" {
				// ffmpeg shifts Opus by the CodecDelay (the OpusHead
				// pre-skip) so that the first decoded sample is at 0.
				skip := int64(0)
				if in.Track.Description != nil {
					skip = (int64(binary.LittleEndian.Uint16(in.Track.Description[10:]))*1000 + 24000) / 48000
				}
				for i := range want {
					want[i] -= skip
				}
			}
			if len(got) != len(in.Frames) {
				t.Fatalf("ffprobe counts %d packets, wrote %d frames", len(got), len(in.Frames))
			}
			if !equalWithin(got, want, 1) {
				t.Errorf("packet times (ms) differ from the input:\n got %v\nwant %v", got, want)
			}
			dur, err := strconv.ParseFloat(p.Format.Duration, 64)
			if err != nil || dur <= 0 {
				t.Errorf("ffprobe format duration %q, want a positive number", p.Format.Duration)
			}

			m := mkvmergeClean(t, path)
			if len(m.Tracks) != 1 || m.Tracks[0].Properties.CodecID != tc.codecID {
				t.Errorf("mkvmerge tracks %+v, want codec %s", m.Tracks, tc.codecID)
			}
			wantDur := mediatest.LoadSample(tc.sample).Duration()
			if d := m.Container.Properties.Duration / 1e6; d < wantDur/1000-2 || d > wantDur/1000+2 {
				t.Errorf("mkvmerge duration %d ms, want %d ms", d, wantDur/1000)
			}
			if dt := docType(t, path); dt != tc.docType {
				t.Errorf("DocType %q, want %q", dt, tc.docType)
			}
		})
	}
}

// toAnnexB turns an H.264/H.265 input into the browser's form: Annex B,
// parameter sets in band, no description.
func toAnnexB(in *input) {
	s := mediatest.LoadSample(in.Track.Name + mediatest.AnnexBSuffix)
	in.Track.Description, in.Frames = nil, mediatest.FramesOf(s, in.Track.ID)
}

func equalWithin(a, b []int64, tol int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d < -tol || d > tol {
			return false
		}
	}
	return true
}

// docType reads the DocType from the EBML header with mkvinfo.
func docType(t *testing.T, path string) string {
	t.Helper()
	out, _ := mediatest.Run(t, "mkvinfo", path)
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "|+ Document type: "); ok {
			return v
		}
	}
	t.Fatalf("no DocType in mkvinfo output:\n%s", out)
	return ""
}

// TestSeekToMiddleOfFinalizedFileStartsAtKeyframe checks that a finalized
// h264+aac file carries one CuePoint per video keyframe and that seeking
// to the middle lands on the keyframe at or before the target and decodes
// cleanly from there.
func TestSeekToMiddleOfFinalizedFileStartsAtKeyframe(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe", "mkvinfo")
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	path := muxFile(t, "seek.mkv", Options{}, v, a)

	var keys []int64
	for _, f := range v.Frames {
		if f.Keyframe {
			keys = append(keys, f.Timestamp/1000)
		}
	}
	out, _ := mediatest.Run(t, "mkvinfo", "-v", "-v", path)
	if n := strings.Count(out, "+ Cue point at "); n != len(keys) {
		t.Errorf("mkvinfo shows %d cue points, want %d (one per video keyframe)", n, len(keys))
	}
	// ms: the middle, and not exactly on a keyframe
	target := mediatest.LoadSample("h264").Duration()/1000/2 + 10
	want := int64(-1)
	for _, k := range keys {
		if k <= target {
			want = k
		}
	}
	p := mediatest.Probe(t, path, "-select_streams", "v:0", "-read_intervals", fmt.Sprintf("%.3f%%+#1", float64(target)/1000))
	if len(p.Packets) == 0 {
		t.Fatal("ffprobe read no packet after seeking")
	}
	first := p.Packets[0]
	if !strings.Contains(first.Flags, "K") {
		t.Errorf("first packet after seeking to %d ms is not a keyframe: %+v", target, first)
	}
	if got := streamPTS(t, p, 0)[0]; got != want {
		t.Errorf("seek to %d ms landed at %d ms, want the keyframe at %d ms", target, got, want)
	}
	mediatest.DecodeClean(t, path, "-ss", fmt.Sprintf("%.3f", float64(target)/1000))
}

// TestLiveFormThroughAPipeDecodes writes to an os.Pipe (a WriteSeeker that
// cannot seek) read by ffmpeg, which must decode every frame without a
// message; the same bytes are the unknown-size live form.
func TestLiveFormThroughAPipeDecodes(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg")
	v, a := mediatest.SampleInput("vp9", 1), mediatest.SampleInput("opus", 2)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var framemd5, stderr bytes.Buffer
	cmd := exec.Command("ffmpeg", "-v", "error", "-i", "pipe:0", "-map", "0", "-f", "framemd5", "-")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pr, &framemd5, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	w := NewWriter(pw, Options{})
	if w.Seekable() {
		t.Fatal("a pipe must give the live form")
	}
	mediatest.Feed(t, w, v, a)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("ffmpeg decoding the pipe reported:\n%s", stderr.String())
	}
	counts := map[string]int{}
	for line := range strings.Lines(framemd5.String()) {
		if !strings.HasPrefix(line, "#") {
			counts[strings.TrimSpace(strings.Split(line, ",")[0])]++
		}
	}
	if counts["0"] != len(v.Frames) {
		t.Errorf("ffmpeg decoded %d video frames from the pipe, wrote %d", counts["0"], len(v.Frames))
	}
	// Opus decodes to one frame per packet.
	if counts["1"] != len(a.Frames) {
		t.Errorf("ffmpeg decoded %d audio frames from the pipe, wrote %d", counts["1"], len(a.Frames))
	}
}

// TestLiveFormHasUnknownSizesAndNoCues checks the bytes of the live form:
// Segment and Clusters of unknown size, no Cues, and still readable by
// mkvmerge without warnings.
func TestLiveFormHasUnknownSizesAndNoCues(t *testing.T) {
	mediatest.RequireTools(t, "mkvmerge", "ffmpeg")
	var buf bytes.Buffer
	w := NewWriter(nonSeeker{&buf}, Options{})
	mediatest.Feed(t, w, mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	seg := bytes.Index(b, []byte{0x18, 0x53, 0x80, 0x67})
	if seg < 0 || !bytes.Equal(b[seg+4:seg+12], []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
		t.Errorf("segment size is not unknown")
	}
	if n := bytes.Count(b, []byte{0x1f, 0x43, 0xb6, 0x75, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); n != w.Counters().Clusters || n == 0 {
		t.Errorf("%d unknown-size clusters, stats say %d", n, w.Counters().Clusters)
	}
	if bytes.Contains(b, []byte{0x1c, 0x53, 0xbb, 0x6b}) {
		t.Error("live form contains Cues")
	}
	path := filepath.Join(t.TempDir(), "live.mkv")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	mkvmergeClean(t, path)
	mediatest.DecodeClean(t, path)
}

// TestMultiTrackFilesChooseTheirDocType muxes h264+aac (matroska) and
// vp9+opus (webm) and checks both streams of each.
func TestMultiTrackFilesChooseTheirDocType(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe", "mkvmerge", "mkvinfo")
	for _, tc := range []struct {
		v, a, docType string
		codecs        []string
	}{
		{"h264", "aac", "matroska", []string{"h264", "aac"}},
		{"vp9", "opus", "webm", []string{"vp9", "opus"}},
	} {
		t.Run(tc.v+"+"+tc.a, func(t *testing.T) {
			v, a := mediatest.SampleInput(tc.v, 10), mediatest.SampleInput(tc.a, 20)
			path := muxFile(t, "multi.mkv", Options{}, v, a)
			mediatest.DecodeClean(t, path)
			mkvmergeClean(t, path)
			if dt := docType(t, path); dt != tc.docType {
				t.Errorf("DocType %q, want %q", dt, tc.docType)
			}
			p := mediatest.Probe(t, path)
			if len(p.Streams) != 2 {
				t.Fatalf("%d streams, want 2", len(p.Streams))
			}
			for i, in := range []input{v, a} {
				if p.Streams[i].CodecName != tc.codecs[i] {
					t.Errorf("stream %d is %s, want %s", i, p.Streams[i].CodecName, tc.codecs[i])
				}
				got := streamPTS(t, p, i)
				if len(got) != len(in.Frames) {
					t.Errorf("stream %d: %d packets, wrote %d", i, len(got), len(in.Frames))
					continue
				}
				want := expectedPTS(in, 0)
				if tc.a == "opus" && i == 1 {
					skip := (int64(binary.LittleEndian.Uint16(in.Track.Description[10:]))*1000 + 24000) / 48000
					for j := range want {
						want[j] -= skip
					}
				}
				if !equalWithin([]int64{got[0], got[len(got)-1]}, []int64{want[0], want[len(want)-1]}, 1) {
					t.Errorf("stream %d: first/last %d/%d ms, want %d/%d", i, got[0], got[len(got)-1], want[0], want[len(want)-1])
				}
			}
		})
	}
}

// clusterTimes parses the file with ebml-go and returns each Cluster's
// timestamp (ms).
func clusterTimes(t *testing.T, b []byte) []uint64 {
	t.Helper()
	var f struct {
		Segment struct {
			Cluster []struct {
				Timecode uint64 `ebml:"Timecode"`
			} `ebml:"Cluster"`
		} `ebml:"Segment"`
	}
	if err := ebml.Unmarshal(bytes.NewReader(b), &f); err != nil {
		t.Fatalf("ebml-go cannot read the output back: %v", err)
	}
	var ts []uint64
	for _, c := range f.Segment.Cluster {
		ts = append(ts, c.Timecode)
	}
	return ts
}

// TestDiscontinuityStartsNewClusterWithoutStretchingDuration feeds opus,
// a 2 s gap, then opus again; with Discontinuity the first frame after the
// gap opens a Cluster, and Duration ends one frame after the last frame.
func TestDiscontinuityStartsNewClusterWithoutStretchingDuration(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe", "mkvmerge")
	a := mediatest.SampleInput("opus", 1)
	const gap = 2_000_000
	resume := a.Frames[len(a.Frames)-1].Timestamp + 20_000 + gap
	for _, disc := range []bool{false, true} {
		t.Run(fmt.Sprintf("discontinuity=%v", disc), func(t *testing.T) {
			f, path := mediatest.CreateFile(t, "gap.mkv")
			w := NewWriter(f, Options{MaxClusterDuration: 30 * time.Second})
			mediatest.Feed(t, w, a)
			for i, fr := range a.Frames {
				if err := w.WriteFrame(mux.Frame{TrackID: 1, Timestamp: resume + fr.Timestamp, Keyframe: true, Payload: fr.Payload, Discontinuity: disc && i == 0}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			clusters := clusterTimes(t, b)
			want := []uint64{0}
			if disc {
				want = append(want, uint64(resume/1000))
			}
			if fmt.Sprint(clusters) != fmt.Sprint(want) {
				t.Errorf("cluster times %v ms, want %v", clusters, want)
			}
			mediatest.DecodeClean(t, path)
			if n := len(mediatest.Probe(t, path).Packets); n != 2*len(a.Frames) {
				t.Errorf("%d packets, wrote %d", n, 2*len(a.Frames))
			}
			m := mkvmergeClean(t, path)
			wantDur := (resume + a.Frames[len(a.Frames)-1].Timestamp + 20_000) / 1000
			if d := m.Container.Properties.Duration / 1e6; d != wantDur {
				t.Errorf("duration %d ms, want %d ms", d, wantDur)
			}
		})
	}
}

// TestTimestampsAreRebasedUnlessKept shifts a sample by 100 s: the file
// starts at 0 by default and at 100 s with KeepTimestamps.
func TestTimestampsAreRebasedUnlessKept(t *testing.T) {
	mediatest.RequireTools(t, "ffprobe")
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			in := mediatest.SampleInput("vp8", 1).Shift(100_000_000)
			path := muxFile(t, "keep.mkv", Options{KeepTimestamps: keep}, in)
			got := streamPTS(t, mediatest.Probe(t, path), 0)
			want := int64(0)
			if keep {
				want = 100_000
			}
			if got[0] != want {
				t.Errorf("first frame at %d ms, want %d", got[0], want)
			}
		})
	}
}

// TestDocTypeWebMRefusesOtherCodecs checks the forced WebM profile and the
// refusal of codecs Matroska cannot carry.
func TestDocTypeWebMRefusesOtherCodecs(t *testing.T) {
	w := NewWriter(io.Discard, Options{DocType: "webm"})
	if err := w.AddTrack(mux.Track{ID: 1, Kind: mux.Video, Codec: "vp09.00.10.08", Width: 2, Height: 2}); err != nil {
		t.Fatalf("webm refused vp9: %v", err)
	}
	err := w.AddTrack(mux.Track{ID: 2, Kind: mux.Video, Codec: "avc1.64001f", Description: []byte{1}})
	var uc *mux.UnsupportedCodecError
	if !errors.Is(err, mux.ErrUnsupportedCodec) || !errors.As(err, &uc) || uc.Suggest != "mkv" || uc.Container != "webm" {
		t.Fatalf("webm took h264: %v", err)
	}
	if !strings.Contains(err.Error(), "use mkv") {
		t.Errorf("error does not say what to do: %v", err)
	}

	m := NewWriter(io.Discard, Options{})
	if err := m.AddTrack(mux.Track{ID: 1, Kind: mux.Audio, Codec: "pcm-s16"}); !errors.Is(err, mux.ErrUnsupportedCodec) {
		t.Errorf("pcm: %v, want ErrUnsupportedCodec", err)
	}
	if err := NewWriter(io.Discard, Options{DocType: "avi"}).AddTrack(mux.Track{ID: 1, Kind: mux.Audio, Codec: "opus"}); err == nil {
		t.Error("unknown DocType accepted")
	}
	if err := m.AddTrack(mux.Track{ID: 3, Kind: mux.Audio, Codec: "flac"}); !errors.Is(err, ErrMissingConfig) {
		t.Errorf("flac without STREAMINFO: %v, want ErrMissingConfig", err)
	}
	if err := m.AddTrack(mux.Track{ID: 4, Kind: mux.Audio, Codec: "vp8"}); err == nil {
		t.Error("a video codec was accepted on an audio track")
	}
	// Seven channels have no MPEG-4 channelConfiguration (7 means 7.1).
	if err := m.AddTrack(mux.Track{ID: 5, Kind: mux.Audio, Codec: "mp4a.40.2", SampleRate: 48000, Channels: 7}); !errors.Is(err, ErrMissingConfig) {
		t.Errorf("aac with 7 channels and no AudioSpecificConfig: %v, want ErrMissingConfig", err)
	}
}

func TestAACWithoutDescriptionGetsTheChannelConfigurationOfItsCount(t *testing.T) {
	for _, tc := range []struct {
		channels int
		cc       uint8
	}{{1, 1}, {2, 2}, {6, 6}, {8, 7}} {
		w := NewWriter(io.Discard, Options{})
		if err := w.AddTrack(mux.Track{ID: 1, Kind: mux.Audio, Codec: "mp4a.40.2", SampleRate: 44100, Channels: tc.channels}); err != nil {
			t.Errorf("%d channels: %v", tc.channels, err)
			continue
		}
		var asc mpeg4audio.AudioSpecificConfig
		e := w.byID[1].entry
		if err := asc.Unmarshal(e.CodecPrivate); err != nil || asc.ChannelConfig != tc.cc || asc.SampleRate != 44100 || e.Audio.Channels != uint64(tc.channels) {
			t.Errorf("%d channels: CodecPrivate %x (%+v, %v), Channels %d; want channelConfiguration %d",
				tc.channels, e.CodecPrivate, asc, err, e.Audio.Channels, tc.cc)
		}
	}
}

// TestTrackAddedAfterHeaderIsRefusedWithErrLateTrack: once a frame made
// the header, AddTrack fails with mux.ErrLateTrack and the file goes on.
func TestTrackAddedAfterHeaderIsRefusedWithErrLateTrack(t *testing.T) {
	a := mediatest.SampleInput("opus", 1)
	w := NewWriter(io.Discard, Options{})
	if err := w.AddTrack(a.Track); err != nil {
		t.Fatal(err)
	}
	f := a.Frames[0]
	if err := w.WriteFrame(mux.Frame{TrackID: 1, Timestamp: f.Timestamp, Keyframe: true, Payload: f.Payload}); err != nil {
		t.Fatal(err)
	}
	err := w.AddTrack(mediatest.SampleInput("vp9", 2).Track)
	if !errors.Is(err, mux.ErrLateTrack) {
		t.Fatalf("late track: %v, want ErrLateTrack", err)
	}
	if err := w.WriteFrame(mux.Frame{TrackID: 1, Timestamp: 20_000, Keyframe: true, Payload: f.Payload}); err != nil {
		t.Errorf("writing goes on after a refused late track: %v", err)
	}
}

// TestLateTrackWithoutConfigurationJoinsAtItsFirstKeyframe: a video track
// added after the header whose configuration comes in band (H.264 in
// Annex B without a description, AV1 without av1C: a browser publisher
// whose catalog lists its audio first) gets its TrackEntry when its first
// keyframe brings the configuration; the frames before it are dropped,
// counted; the file decodes with both tracks whole from there.
func TestLateTrackWithoutConfigurationJoinsAtItsFirstKeyframe(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	for _, tc := range []struct{ video, audio, file string }{
		{"h264-annexb", "aac", "late.mkv"},
		{"av1", "opus", "late.webm"},
	} {
		t.Run(tc.video, func(t *testing.T) {
			a, v := mediatest.SampleInput(tc.audio, 1), mediatest.SampleInput(tc.video, 2)
			v.Track.Description = nil
			f, path := mediatest.CreateFile(t, tc.file)
			w := NewWriter(f, Options{})
			if err := w.AddTrack(a.Track); err != nil {
				t.Fatal(err)
			}
			// The audio alone makes the header.
			for _, fr := range a.Frames[:5] {
				if err := w.WriteFrame(mux.Frame{TrackID: 1, Timestamp: fr.Timestamp, Keyframe: true, Payload: fr.Payload}); err != nil {
					t.Fatal(err)
				}
			}
			if !w.started {
				t.Fatal("the header waits; this test needs it written")
			}
			if err := w.AddTrack(v.Track); err != nil {
				t.Fatalf("late track without configuration: %v", err)
			}
			// The video joins mid-GOP: its frames before the next keyframe
			// have nothing to decode from.
			skip := 1
			for skip < len(v.Frames) && !v.Frames[skip].Keyframe {
				skip++
			}
			if skip == len(v.Frames) {
				t.Fatalf("%s: one keyframe only", tc.video)
			}
			v.Frames = v.Frames[1:]
			a.Frames = a.Frames[5:]
			for _, fr := range mediatest.Interleave(a, v) {
				if err := w.WriteFrame(fr); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got := w.Stats().Dropped; got != int64(skip-1) {
				t.Errorf("dropped %d frames, want the %d video frames before the keyframe", got, skip-1)
			}
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			if len(p.Streams) != 2 {
				t.Fatalf("%d streams, want 2", len(p.Streams))
			}
			for i, want := range []int{len(a.Frames) + 5, len(v.Frames) - (skip - 1)} {
				if got := len(streamPTS(t, p, i)); got != want {
					t.Errorf("stream %d: %d packets, want %d", i, got, want)
				}
			}
		})
	}
}

// TestTrackAddedWhileHeaderWaitsIsWritten: while a track waits for its
// configuration the header is not written, so a new track still joins.
func TestTrackAddedWhileHeaderWaitsIsWritten(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	v, a, late := mediatest.SampleInput("av1", 1), mediatest.SampleInput("opus", 2), mediatest.SampleInput("vp8", 3)
	v.Track.Description = nil // waits for the sequence header in its first keyframe
	f, path := mediatest.CreateFile(t, "wait.webm")
	w := NewWriter(f, Options{})
	for _, in := range []input{v, a} {
		if err := w.AddTrack(in.Track); err != nil {
			t.Fatal(err)
		}
	}
	// Audio first: the av1 track has no av1C yet, so this is buffered.
	af := a.Frames[0]
	if err := w.WriteFrame(mux.Frame{TrackID: 2, Timestamp: af.Timestamp, Keyframe: true, Payload: af.Payload}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTrack(late.Track); err != nil {
		t.Fatalf("track added before the header: %v", err)
	}
	a.Frames = a.Frames[1:]
	for _, fr := range mediatest.Interleave(v, a, late) {
		if err := w.WriteFrame(fr); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	if len(p.Streams) != 3 {
		t.Fatalf("%d streams, want 3", len(p.Streams))
	}
	for i, want := range []int{len(v.Frames), len(a.Frames) + 1, len(late.Frames)} {
		if got := len(streamPTS(t, p, i)); got != want {
			t.Errorf("stream %d: %d packets, want %d", i, got, want)
		}
	}
}

// TestHeaderWaitGivesUpOnTrackWithoutConfig: an AV1 track whose keyframes
// carry no sequence header is left out after HeaderWait, with a warning and
// its frames counted as dropped; the other track is written whole.
func TestHeaderWaitGivesUpOnTrackWithoutConfig(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	a := mediatest.SampleInput("opus", 2)
	var logs bytes.Buffer
	f, path := mediatest.CreateFile(t, "giveup.webm")
	w := NewWriter(f, Options{HeaderWait: time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := w.AddTrack(mux.Track{ID: 1, Kind: mux.Video, Codec: "av01.0.04M.08"}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTrack(a.Track); err != nil {
		t.Fatal(err)
	}
	videoFrames := 0
	for _, fr := range a.Frames {
		if err := w.WriteFrame(mux.Frame{TrackID: 2, Timestamp: fr.Timestamp, Keyframe: true, Payload: fr.Payload}); err != nil {
			t.Fatal(err)
		}
		if fr.Timestamp%100_000 == 0 {
			// A temporal delimiter only: no sequence header.
			if err := w.WriteFrame(mux.Frame{TrackID: 1, Timestamp: fr.Timestamp, Keyframe: true, Payload: []byte{0x12, 0}}); err != nil {
				t.Fatal(err)
			}
			videoFrames++
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := w.Stats().Dropped; got != int64(videoFrames) {
		t.Errorf("dropped %d frames, want the %d video frames", got, videoFrames)
	}
	if !strings.Contains(logs.String(), "track left out") {
		t.Errorf("no warning about the left-out track in the log:\n%s", logs.String())
	}
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	if len(p.Streams) != 1 || p.Streams[0].CodecName != "opus" || len(p.Packets) != len(a.Frames) {
		t.Errorf("want only the %d opus packets, got streams %+v and %d packets", len(a.Frames), p.Streams, len(p.Packets))
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

// TestMisuseGetsSentinelErrors covers unknown tracks, removed tracks, use
// after Close and a failing writer.
func TestMisuseGetsSentinelErrors(t *testing.T) {
	a := mediatest.SampleInput("opus", 1)
	fr := mux.Frame{TrackID: 1, Keyframe: true, Payload: a.Frames[0].Payload}

	w := NewWriter(io.Discard, Options{})
	if err := w.AddTrack(a.Track); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTrack(a.Track); err == nil {
		t.Error("the same track ID was accepted twice")
	}
	if err := w.WriteFrame(mux.Frame{TrackID: 9, Payload: []byte{1}}); !errors.Is(err, mux.ErrUnknownTrack) {
		t.Errorf("unknown track: %v", err)
	}
	if err := w.WriteFrame(mux.Frame{TrackID: 9, Payload: []byte{1}, Discontinuity: true}); !errors.Is(err, mux.ErrUnknownTrack) {
		t.Errorf("discontinuity on unknown track: %v", err)
	}
	if err := w.WriteFrame(fr); err != nil {
		t.Fatal(err)
	}
	if err := w.RemoveTrack(1); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFrame(fr); !errors.Is(err, mux.ErrUnknownTrack) {
		t.Errorf("frame of a removed track: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.WriteFrame(fr); !errors.Is(err, mux.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}

	fw := NewWriter(&failWriter{n: 1}, Options{})
	if err := fw.AddTrack(a.Track); err != nil {
		t.Fatal(err)
	}
	_ = fw.WriteFrame(fr) // header
	err := fw.WriteFrame(fr)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("write error not reported: %v", err)
	}
	if err2 := fw.WriteFrame(fr); err2 == nil {
		t.Error("write error is not sticky")
	}
}

// TestAV1ConfigBuiltFromSequenceHeaderMatchesFFmpegs compares the av1C the
// writer builds from the first keyframe with the one ffmpeg wrote for the
// sample.
func TestAV1ConfigBuiltFromSequenceHeaderMatchesFFmpegs(t *testing.T) {
	in := mediatest.SampleInput("av1", 1)
	want := in.Track.Description
	in.Track.Description = nil
	tr := &track{Track: in.Track, family: "av1"}
	if err := tr.configure(); err != nil {
		t.Fatal(err)
	}
	if !tr.configureFromFrame(in.Frames[0].Payload, true) {
		t.Fatal("no configuration from the first keyframe")
	}
	if !bytes.Equal(tr.entry.CodecPrivate, want) {
		t.Errorf("av1C\n got % x\nwant % x", tr.entry.CodecPrivate, want)
	}
}

// TestAnnexBTrackWaitsForItsFirstKeyframe starts an Annex B H.264 track
// mid-GOP next to AAC: the video frames before the first keyframe are
// dropped and counted, the audio that arrived meanwhile is kept, and the
// avcC built from the in-band parameter sets holds the sample's SPS/PPS.
func TestAnnexBTrackWaitsForItsFirstKeyframe(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe", "mkvmerge")
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	wantPS, _, err := h26x.ParseAVCDecoderConfig(v.Track.Description)
	if err != nil {
		t.Fatal(err)
	}
	toAnnexB(&v)
	const skip = 5
	v.Frames = v.Frames[skip:]
	firstKey := slices.IndexFunc(v.Frames, func(f mux.Frame) bool { return f.Keyframe })
	if firstKey <= 0 {
		t.Fatalf("sample has no keyframe after frame %d", skip)
	}

	f, path := mediatest.CreateFile(t, "annexb.mkv")
	w := NewWriter(f, Options{})
	mediatest.Feed(t, w, v, a)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := w.Stats().Dropped; got != int64(firstKey) {
		t.Errorf("dropped %d frames, want the %d video frames before the first keyframe", got, firstKey)
	}
	mediatest.DecodeClean(t, path)
	mkvmergeClean(t, path)
	p := mediatest.Probe(t, path)
	if n := len(streamPTS(t, p, 0)); n != len(v.Frames)-firstKey {
		t.Errorf("%d video packets, want %d", n, len(v.Frames)-firstKey)
	}
	if n := len(streamPTS(t, p, 1)); n != len(a.Frames) {
		t.Errorf("%d audio packets, want all %d", n, len(a.Frames))
	}
	if got := streamPTS(t, p, 1)[0]; got != 0 {
		t.Errorf("audio starts at %d ms, want 0 (buffered while the video waited)", got)
	}

	tr := w.byID[1]
	gotPS, _, err := h26x.ParseAVCDecoderConfig(tr.entry.CodecPrivate)
	if err != nil {
		t.Fatalf("built avcC does not parse: %v", err)
	}
	if !gotPS.Equal(wantPS) {
		t.Error("built avcC holds other parameter sets than the sample's avcC")
	}
}

// TestUnfinishedFileIsPlayable stops before Close, as a crash would: the
// file on disk is the live form and decodes with every frame written.
func TestUnfinishedFileIsPlayable(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	f, path := mediatest.CreateFile(t, "crash.mkv")
	w := NewWriter(f, Options{})
	mediatest.Feed(t, w, v, a)
	// no w.Close()
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	if n := len(p.Packets); n != len(v.Frames)+len(a.Frames) {
		t.Errorf("%d packets in the unfinished file, wrote %d frames", n, len(v.Frames)+len(a.Frames))
	}
}

// TestHeaderWaitBoundCountsEachHeldFrame feeds tiny frames that never
// advance the clock while a track waits for its configuration: the bound
// on held media must count what each frame costs to hold, not only its
// payload bytes, or a million one-byte frames sit in memory unbounded by
// HeaderWait.
func TestHeaderWaitBoundCountsEachHeldFrame(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(nonSeeker{&out}, Options{})
	for _, tr := range []mux.Track{
		{ID: 1, Kind: mux.Video, Codec: "vp8"}, // waits for a keyframe with its size
		{ID: 2, Kind: mux.Audio, Codec: "opus", SampleRate: 48000, Channels: 2},
	} {
		if err := w.AddTrack(tr); err != nil {
			t.Fatal(err)
		}
	}
	const limit = 1 << 20 // at least 64 MiB held with the bookkeeping
	n := 0
	for ; n < limit && out.Len() == 0; n++ {
		if err := w.WriteFrame(mux.Frame{TrackID: 2, Payload: []byte{0xfc}}); err != nil {
			t.Fatal(err)
		}
	}
	if out.Len() == 0 {
		t.Fatalf("header still held back after %d one-byte frames", n)
	}
	if w.Stats().Frames != int64(n) {
		t.Errorf("Stats.Frames = %d, want the %d held frames written", w.Stats().Frames, n)
	}
}

// TestTrackAddedAfterHeaderJoinsASeekableFile: a rendition a catalog
// update adds 2 s into a recording is written into the room kept after
// Tracks: the finished file carries it from then on, every frame at its
// time, and ffmpeg and mkvmerge read all three tracks.
func TestTrackAddedAfterHeaderJoinsASeekableFile(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe", "mkvmerge")
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	late := mediatest.SampleInput("opus", 3)
	const at = 2_000_000
	origin := v.Frames[0].Timestamp
	late = late.Shift(origin + at - late.Frames[0].Timestamp)
	f, path := mediatest.CreateFile(t, "late.mkv")
	w := NewWriter(f, Options{})
	for _, in := range []input{v, a} {
		if err := w.AddTrack(in.Track); err != nil {
			t.Fatal(err)
		}
	}
	added := false
	for _, fr := range mediatest.Interleave(v, a, late) {
		if fr.TrackID == 3 && !added {
			if err := w.AddTrack(late.Track); err != nil {
				t.Fatalf("late track: %v", err)
			}
			added = true
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
	if len(p.Streams) != 3 {
		t.Fatalf("%d streams, want 3", len(p.Streams))
	}
	// ffmpeg shows Opus times less its CodecDelay (pre-skip, 6.5 ms).
	near := func(a, b int64) bool { return a-b < 10 && b-a < 10 }
	got, want := streamPTS(t, p, 2), expectedPTS(late, origin)
	if len(got) != len(want) || !near(got[0], want[0]) || !near(got[len(got)-1], want[len(want)-1]) {
		t.Fatalf("late track: %d packets from %d ms to %d ms, want %d from %d to %d",
			len(got), got[0], got[len(got)-1], len(want), want[0], want[len(want)-1])
	}
	out, _ := mediatest.Run(t, "mkvmerge", "-J", path)
	if n := strings.Count(out, `"codec_id"`); n != 3 {
		t.Fatalf("mkvmerge sees %d tracks, want 3:\n%s", n, out)
	}
}

// TestFramesLessThanAMillisecondApartKeepDistinctTimes: a camera under
// load delivers frames a fraction of a millisecond apart; on Matroska's
// millisecond timeline they must not share a time (ffmpeg reports
// "non monotonically increasing dts" and players drop one), so each later
// one moves to the next free millisecond, and none moves further than the
// frames that caused it.
func TestFramesLessThanAMillisecondApartKeepDistinctTimes(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	in := mediatest.SampleInput("vp8", 1)
	if len(in.Frames) < 12 {
		t.Fatalf("sample has %d frames", len(in.Frames))
	}
	frames := append([]mux.Frame(nil), in.Frames...)
	// Frames 5, 6 and 7 arrive 300 µs after each other; 10 and 11 share
	// frame 9's time exactly.
	for i, d := range map[int]int64{5: 300, 6: 600, 7: 900} {
		frames[i].Timestamp = frames[4].Timestamp + d
	}
	frames[10].Timestamp, frames[11].Timestamp = frames[9].Timestamp, frames[9].Timestamp
	in.Frames = frames
	path := muxFile(t, "close.mkv", Options{}, in)

	if msgs, err := mediatest.DecodeAtFileTimes(path); err != nil || msgs != "" {
		t.Errorf("ffmpeg decoding with the file's own times: %v\n%s", err, msgs)
	}
	got := streamPTS(t, mediatest.Probe(t, path), 0)
	if len(got) != len(frames) {
		t.Fatalf("%d packets, wrote %d", len(got), len(frames))
	}
	origin := frames[0].Timestamp
	for i := range got {
		if i > 0 && got[i] <= got[i-1] {
			t.Errorf("packet %d at %d ms, the one before at %d ms", i, got[i], got[i-1])
		}
		// The sorted times match the frames' own, rounded, within the
		// 2 ms a run of three collisions can push a frame.
		want := (frames[i].Timestamp - origin + 500) / 1000
		if d := got[i] - want; d < 0 || d > 2 {
			t.Errorf("frame %d at %d ms, its time is %d ms", i, got[i], want)
		}
	}
}

// TestVideoKeepsOneFrameATickWhenAudioStartsFirst writes the H.264 sample
// (B-frames) with an audio sample starting a fraction of a frame, or frames
// and a fraction, before the video's keyframe, as a join whose audio came
// first does. On Matroska's millisecond timeline 30 fps frames lie 33, 33
// and 34 ms apart, each up to half a millisecond off its time; ffmpeg
// decodes video onto a 1/framerate grid counted from the file's start (the
// audio's first block, less Opus's CodecDelay) and, with that start about
// half a frame off the video's grid, found two frames on one tick every
// third frame ("non monotonically increasing dts to muxer in stream 0: 5
// >= 5": the e2e matrix over WebTransport, the MediaMTX rows). Each lead
// must decode clean with both ffmpegs, with the catalog's framerate and
// without one (estimated from the frames), rebased and with the kept
// times, and every video frame keep its time within a millisecond.
func TestVideoKeepsOneFrameATickWhenAudioStartsFirst(t *testing.T) {
	tools := []mediatest.Tools{mediatest.SystemFFmpeg(t), mediatest.NewFFmpeg(t)}
	v := mediatest.LoadSample("h264")
	// 16.25-17 ms and 83 ms (2.5 frames) put the start half a frame off
	// the grid; 0, 16 and 50 ms do not.
	for _, audio := range []string{"aac", "opus"} {
		for _, lead := range []int64{0, 16_000, 16_250, 16_500, 16_667, 17_000, 50_000, 83_000} {
			for _, keep := range []bool{false, true} {
				for _, rate := range []float64{v.Framerate, 0} {
					name := fmt.Sprintf("%s/Lead%dus/Keep%v/Framerate%v", audio, lead, keep, rate)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						const start = 5_000_000
						vin := mediatest.InputOf(v, 1).Shift(start)
						vin.Track.Framerate = rate
						vin.Frames = vin.Frames[:30] // the rounding repeats with every frame triple
						ain := mediatest.SampleInput(audio, 2).Shift(start - lead)
						ain.Frames = ain.Frames[:len(ain.Frames)/4]
						path := muxFile(t, "lead.mkv", Options{KeepTimestamps: keep}, vin, ain)
						for _, tl := range tools {
							tl.DecodeClean(t, path)
						}
						origin := int64(0)
						if !keep {
							origin = min(vin.Frames[0].Timestamp, ain.Frames[0].Timestamp)
						}
						got := streamPTS(t, tools[0].Probe(t, path), 0)
						want := expectedPTS(vin, origin)
						if len(got) != len(want) {
							t.Fatalf("%d video packets, wrote %d", len(got), len(want))
						}
						for i := range got {
							if d := got[i] - want[i]; d < -1 || d > 1 {
								t.Errorf("video frame %d at %d ms, its time is %d ms", i, got[i], want[i])
							}
						}
					})
				}
			}
		}
	}
}

// TestWriterHoldsNoFrameBetweenWrites: once a frame is written, the
// Writer keeps no copy of it (a recording that waits for media holds no
// buffer the size of its largest frame), and the file still holds it
// whole.
func TestWriterHoldsNoFrameBetweenWrites(t *testing.T) {
	const size = 1 << 19
	in := mediatest.SampleInput("aac", 1)
	var out bytes.Buffer
	w := NewWriter(&out, Options{})
	mediatest.Write(t, w, mediatest.Tracks(in), nil)
	heap := func() uint64 {
		// Twice: the shared block buffers go at the second collection.
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	out.Grow(2 * size)
	before := heap()
	if err := w.WriteFrame(mux.Frame{TrackID: 1, Keyframe: true, Payload: make([]byte, size)}); err != nil {
		t.Fatal(err)
	}
	if grown := int64(heap()) - int64(before); grown > size/2 {
		t.Fatalf("the heap grew by %d bytes after writing a %d-byte frame", grown, size)
	}
	if out.Len() < size {
		t.Fatalf("%d bytes written, want the frame's %d and more", out.Len(), size)
	}
	runtime.KeepAlive(w)
}
