package ts_test

import (
	"bytes"
	"errors"
	"strconv"
	"testing"

	"github.com/asticode/go-astits"

	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/ts"
)

// ticks converts microseconds to 90 kHz ticks as the writer does.
func ticks(us int64) int64 { return (us*9 + 50) / 100 }

// firstPID is the PID of the first track added.
const firstPID = 0x100

type wantStream struct {
	codec      string // ffprobe codec_name
	streamType astits.StreamType
}

var wantByCodec = map[string]wantStream{
	"h264": {"h264", astits.StreamTypeH264Video},
	"h265": {"hevc", astits.StreamTypeH265Video},
	"aac":  {"aac", astits.StreamTypeAACAudio},
	"opus": {"opus", astits.StreamTypePrivateData},
	"mp3":  {"mp3", 0x03},
	"ac3":  {"ac3", 0x81},
}

// checkOutput runs every external and internal check on an output written
// from ins (each input's frames all written), and returns the reports.
func checkOutput(t *testing.T, out []byte, ins ...input) (mediatest.ProbeResult, tsReport) {
	t.Helper()
	path := writeFile(t, out)
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	if len(p.Streams) != len(ins) {
		t.Fatalf("ffprobe sees %d streams, want %d", len(p.Streams), len(ins))
	}
	r := demux(t, out)

	// Timeline: the earliest frame starts the output; video's first DTS is
	// zero, so the first PTS of the earliest track is its DTS reserve.
	base := ins[0].Frames[0].Timestamp
	for _, in := range ins {
		base = min(base, in.Frames[0].Timestamp)
	}
	var offset int64
	for i, in := range ins {
		if in.Track.Kind != mux.Video {
			continue
		}
		pk := p.PacketsOf(pidStream(t, p, firstPID+uint16(i)).Index)
		if len(pk) == 0 || pk[0].DTS == nil || pk[0].PTS == nil {
			t.Fatalf("video track %d: no timestamps", i)
		}
		if *pk[0].DTS < 0 {
			t.Errorf("video track %d: first DTS %d below zero", i, *pk[0].DTS)
		}
		offset = max(offset, *pk[0].PTS-*pk[0].DTS)
	}
	if offset > 9000 {
		t.Errorf("DTS reserve %d ticks, want a small one (<= 100 ms)", offset)
	}

	for i, in := range ins {
		pid := firstPID + uint16(i)
		want := wantByCodec[mux.CodecFamily(in.Track.Codec)]
		checkStream(t, p, pid, want.codec, len(in.Frames), ticks(in.Frames[0].Timestamp-base)+offset)
		if got := r.pmtStreams[pid]; got != want.streamType {
			t.Errorf("PID %#x: stream type %#x, want %#x", pid, got, want.streamType)
		}
		if r.pes[pid] != len(in.Frames) {
			t.Errorf("PID %#x: astits demuxes %d PES, want %d", pid, r.pes[pid], len(in.Frames))
		}
		if in.Track.Kind == mux.Video {
			keys := 0
			for _, f := range in.Frames {
				if f.Keyframe {
					keys++
				}
			}
			if r.rai[pid] != keys {
				t.Errorf("PID %#x: %d PES with random_access_indicator, want %d keyframes", pid, r.rai[pid], keys)
			}
		}
	}
	if r.pcrGaps > 0 {
		t.Errorf("%d PCR gaps above 40 ms", r.pcrGaps)
	}
	wantPCR := uint16(0)
	for i, in := range ins {
		if in.Track.Kind == mux.Video {
			wantPCR = firstPID + uint16(i)
			break
		}
	}
	if wantPCR == 0 {
		wantPCR = firstPID
	}
	if r.pcrPID != wantPCR {
		t.Errorf("PCR PID %#x, want %#x", r.pcrPID, wantPCR)
	}
	if len(r.lateDTS) > 0 {
		t.Errorf("%d PES decode before the PCR that precedes them: %v", len(r.lateDTS), r.lateDTS[:min(3, len(r.lateDTS))])
	}
	if len(r.pcrs) == 0 {
		t.Error("no PCR written")
	}
	if len(r.tablesAt) == 0 || r.tablesAt[0] != 0 {
		t.Errorf("output does not start with a PAT (PATs at packets %v)", r.tablesAt)
	}
	return p, r
}

func TestEachCodecMuxesToAStreamFFmpegDecodes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []string
	}{
		{"h264 with B-frames", []string{"h264"}},
		{"h265 with B-frames", []string{"h265"}},
		{"aac only", []string{"aac"}},
		{"opus only", []string{"opus"}},
		{"mp3 only", []string{"mp3"}},
		{"ac3 only", []string{"ac3"}},
		{"h264 and aac", []string{"h264", "aac"}},
		{"h265 and opus", []string{"h265", "opus"}},
		{"h264, ac3 and mp3", []string{"h264", "ac3", "mp3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ins []input
			for i, s := range tc.samples {
				ins = append(ins, mediatest.SampleInput(s, i+1))
			}
			out, w := muxAll(t, ts.Options{}, ins...)
			checkOutput(t, out, ins...)
			st := w.Counters()
			total := 0
			for _, in := range ins {
				total += len(in.Frames)
			}
			if st.Frames != int64(total) || st.Packets*188 != int64(len(out)) || st.DroppedAudio+st.DroppedVideo+st.DroppedLate != 0 || st.Dropped != 0 {
				t.Errorf("Counters = %+v, want %d frames, %d bytes out, nothing dropped", st, total, len(out))
			}
			if st.Bytes != payloadBytes(ins...) || st.Bytes == 0 {
				t.Errorf("Stats.Bytes = %d, want the %d payload bytes given", st.Bytes, payloadBytes(ins...))
			}
		})
	}
}

func TestPATAndPMTPrecedeEveryKeyframe(t *testing.T) {
	in := mediatest.SampleInput("h264", 1)
	out, _ := muxAll(t, ts.Options{}, in)
	// Each keyframe's PES must come right after a PAT and a PMT.
	var pkts [][]byte
	for i := 0; i+188 <= len(out); i += 188 {
		pkts = append(pkts, out[i:i+188])
	}
	keys := 0
	for i, p := range pkts {
		pid := uint16(p[1]&0x1F)<<8 | uint16(p[2])
		pusi := p[1]&0x40 != 0
		hasAF := p[3]&0x20 != 0
		if pid != firstPID || !pusi || !hasAF || p[4] == 0 || p[5]&0x40 == 0 {
			continue
		}
		keys++
		if i < 2 {
			t.Fatalf("keyframe at packet %d has no room for tables", i)
		}
		pat := uint16(pkts[i-2][1]&0x1F)<<8 | uint16(pkts[i-2][2])
		pmt := uint16(pkts[i-1][1]&0x1F)<<8 | uint16(pkts[i-1][2])
		if pat != 0 || pmt != 0x1000 {
			t.Errorf("keyframe PES at packet %d preceded by PIDs %#x, %#x; want PAT, PMT", i, pat, pmt)
		}
		if p[5]&0x10 == 0 {
			t.Errorf("keyframe PES at packet %d carries no PCR", i)
		}
	}
	if keys != 4 {
		t.Errorf("found %d keyframe PES, want 4", keys)
	}
}

func TestUnsupportedCodecsAreRejectedSuggestingMKV(t *testing.T) {
	for _, codec := range []string{"av01.0.04M.08", "vp8", "vp09.00.10.08", "flac", "pcm", "theora"} {
		t.Run(codec, func(t *testing.T) {
			w := ts.NewWriter(&bytes.Buffer{}, ts.Options{})
			err := w.AddTrack(mux.Track{ID: 1, Codec: codec, SampleRate: 48000, Channels: 2})
			var uce *mux.UnsupportedCodecError
			if !errors.As(err, &uce) || !errors.Is(err, mux.ErrUnsupportedCodec) {
				t.Fatalf("AddTrack(%s) = %v, want *mux.UnsupportedCodecError", codec, err)
			}
			if uce.Container != "ts" || uce.Codec != codec || uce.Suggest != "mkv" {
				t.Errorf("error = %+v, want container ts, codec %s, suggest mkv", uce, codec)
			}
		})
	}
}

func TestAudioBeforeTheFirstVideoKeyframeIsDroppedAndCounted(t *testing.T) {
	v := mediatest.SampleInput("h264", 1)
	// Video starts 30 frames in, mid-GOP: the first keyframe is at 1 s.
	v.Frames = v.Frames[25:]
	a := mediatest.SampleInput("aac", 2)
	w, buf := startWriter(t, ts.Options{}, v, a)
	firstKey := int64(-1)
	var droppedVideo, droppedAudio, keptAudio int
	for _, f := range mediatest.Interleave(v, a) {
		if f.TrackID == 1 && f.Keyframe && firstKey < 0 {
			firstKey = f.Timestamp
		}
		switch {
		case f.TrackID == 1 && firstKey < 0:
			droppedVideo++
		case f.TrackID == 2 && firstKey < 0:
			droppedAudio++
		case f.TrackID == 2:
			keptAudio++
		}
		if buf.Len() != 0 && firstKey < 0 {
			t.Fatal("bytes written before the first video keyframe")
		}
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st := w.Counters()
	if st.DroppedAudio != int64(droppedAudio) || st.DroppedVideo != int64(droppedVideo) || droppedAudio == 0 || droppedVideo == 0 {
		t.Errorf("Stats = %+v, want %d audio and %d video frames dropped", st, droppedAudio, droppedVideo)
	}
	p := mediatest.Probe(t, writeFile(t, buf.Bytes()))
	ap := p.PacketsOf(pidStream(t, p, 0x101).Index)
	vp := p.PacketsOf(pidStream(t, p, 0x100).Index)
	if len(ap) != keptAudio {
		t.Errorf("ffprobe counts %d audio packets, want %d", len(ap), keptAudio)
	}
	if len(vp) == 0 || !bytes.Contains([]byte(vp[0].Flags), []byte("K")) || *vp[0].DTS != 0 {
		t.Errorf("first video packet %+v, want a keyframe at DTS 0", vp[0])
	}
	mediatest.DecodeClean(t, writeFile(t, buf.Bytes()))
}

func TestTimestampsStartNearZeroUnlessKept(t *testing.T) {
	const start = 3600 * 1_000_000 // one hour in
	a := mediatest.SampleInput("aac", 1).Shift(start)
	out, _ := muxAll(t, ts.Options{}, a)
	p := mediatest.Probe(t, writeFile(t, out))
	if pk := p.PacketsOf(0); *pk[0].PTS != 0 {
		t.Errorf("first PTS %d, want 0", *pk[0].PTS)
	}

	out, _ = muxAll(t, ts.Options{KeepTimestamps: true}, a)
	p = mediatest.Probe(t, writeFile(t, out))
	if pk := p.PacketsOf(0); *pk[0].PTS != ticks(start) {
		t.Errorf("KeepTimestamps: first PTS %d, want %d", *pk[0].PTS, ticks(start))
	}
}

func TestKeptTimestampsWrapAt33Bits(t *testing.T) {
	// Start 1 s before the 33-bit wrap: the file crosses it after 1 s.
	const wrapUs = (int64(1) << 33) * 100 / 9
	v := mediatest.SampleInput("h264", 1).Shift(wrapUs - 1_000_000)
	a := mediatest.SampleInput("aac", 2).Shift(wrapUs - 1_000_000)
	out, _ := muxAll(t, ts.Options{KeepTimestamps: true}, v, a)
	path := writeFile(t, out)
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	for _, s := range p.Streams {
		pk := p.PacketsOf(s.Index)
		want := map[int64]int{0x100: len(v.Frames), 0x101: len(a.Frames)}
		pid, err := strconv.ParseInt(s.ID, 0, 32)
		if err != nil {
			t.Fatal(err)
		}
		if len(pk) != want[pid] {
			t.Errorf("stream %s: %d packets, want %d", s.ID, len(pk), want[pid])
		}
		// ffprobe unwraps: DTS keep increasing across the wrap.
		for i := 1; i < len(pk); i++ {
			if *pk[i].DTS <= *pk[i-1].DTS {
				t.Fatalf("stream %s: DTS %d after %d at packet %d", s.ID, *pk[i].DTS, *pk[i-1].DTS, i)
			}
		}
		// ffprobe unwraps around the wrap point: the frames before it come
		// out negative, those after it small and positive.
		first, last := *pk[0].DTS, *pk[len(pk)-1].DTS
		if span := last - first; span < 3*90000 || span > 5*90000 {
			t.Errorf("stream %s: DTS from %d to %d, want about 4 s across the wrap", s.ID, first, last)
		}
		if first >= 0 || last <= 0 {
			t.Errorf("stream %s: DTS from %d to %d do not straddle the wrap", s.ID, first, last)
		}
	}
	r := demux(t, out)
	wrapped := false
	for i := 1; i < len(r.pcrs); i++ {
		if r.pcrs[i] < r.pcrs[i-1] {
			wrapped = true
		}
	}
	if !wrapped {
		t.Error("PCR never wrapped")
	}
}

func TestTrackAddedMidExportGetsANewPMTVersion(t *testing.T) {
	v := mediatest.SampleInput("h264", 1)
	a := mediatest.SampleInput("aac", 2)
	var buf bytes.Buffer
	w := ts.NewWriter(&buf, ts.Options{})
	if err := w.AddTrack(v.Track); err != nil {
		t.Fatal(err)
	}
	const joinAt = 2_000_000
	var late input
	late.Track = a.Track
	for _, f := range a.Frames {
		if f.Timestamp >= joinAt {
			late.Frames = append(late.Frames, f)
		}
	}
	writeAddingLate(t, w, a.Track, mediatest.Interleave(v, late))
	out := buf.Bytes()
	r := demux(t, out)
	versions := map[uint8]bool{}
	for _, v := range r.pmtVersions {
		versions[v] = true
	}
	if len(versions) != 2 || r.pmtVersions[0] == r.pmtVersions[len(r.pmtVersions)-1] {
		t.Errorf("PMT versions %v, want two distinct ones", r.pmtVersions)
	}
	if len(r.pmtStreams) != 2 {
		t.Errorf("last PMT lists %v, want video and audio", r.pmtStreams)
	}
	if r.pes[0x101] != len(late.Frames) {
		t.Errorf("astits demuxes %d audio PES, want %d", r.pes[0x101], len(late.Frames))
	}
	path := writeFile(t, out)
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	checkStream(t, p, 0x100, "h264", len(v.Frames), *p.PacketsOf(pidStream(t, p, 0x100).Index)[0].PTS)
	reserve := *p.PacketsOf(pidStream(t, p, 0x100).Index)[0].PTS
	checkStream(t, p, 0x101, "aac", len(late.Frames), ticks(late.Frames[0].Timestamp)+reserve)
}

func TestVideoJoiningAnAudioOnlyProgramTakesThePCR(t *testing.T) {
	a := mediatest.SampleInput("aac", 1)
	v := mediatest.SampleInput("h264", 2).Shift(1_000_000)
	v.Frames = v.Frames[:len(v.Frames)-30] // end with the audio
	var buf bytes.Buffer
	w := ts.NewWriter(&buf, ts.Options{})
	if err := w.AddTrack(a.Track); err != nil {
		t.Fatal(err)
	}
	writeAddingLate(t, w, v.Track, mediatest.Interleave(a, v))
	r := demux(t, buf.Bytes())
	if r.pcrPID != 0x101 {
		t.Errorf("PCR PID %#x, want the video PID 0x101", r.pcrPID)
	}
	if r.pcrGaps > 0 || len(r.lateDTS) > 0 {
		t.Errorf("%d PCR gaps, late DTS %v", r.pcrGaps, r.lateDTS)
	}
	path := writeFile(t, buf.Bytes())
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	checkStream(t, p, 0x100, "aac", len(a.Frames), 0)
	checkStream(t, p, 0x101, "h264", len(v.Frames), ticks(v.Frames[0].Timestamp))
}

func TestVideoTracksWaitForEachOthersFirstKeyframe(t *testing.T) {
	// The H.265 track starts 1 s later: the H.264 second is held, not lost.
	h264 := mediatest.SampleInput("h264", 1)
	h265 := mediatest.SampleInput("h265", 2).Shift(1_000_000)
	a := mediatest.SampleInput("aac", 3)
	w, buf := startWriter(t, ts.Options{}, h264, h265, a)
	var audioKept input
	audioKept.Track = a.Track
	for _, f := range mediatest.Interleave(h264, h265, a) {
		if f.TrackID == 3 && f.Timestamp >= 1_000_000 {
			audioKept.Frames = append(audioKept.Frames, f)
		}
		if f.TrackID != 2 && f.Timestamp < 1_000_000 && buf.Len() > 0 {
			t.Fatal("output written before the H.265 keyframe")
		}
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st := w.Counters(); st.DroppedAudio != int64(len(a.Frames)-len(audioKept.Frames)) || st.DroppedVideo != 0 {
		t.Errorf("Stats = %+v, want %d audio frames dropped and no video", st, len(a.Frames)-len(audioKept.Frames))
	}
	checkOutput(t, buf.Bytes(), h264, h265, audioKept)
}

func TestRemovedTrackLeavesThePMT(t *testing.T) {
	v := mediatest.SampleInput("h264", 1)
	a := mediatest.SampleInput("aac", 2)
	w, buf := startWriter(t, ts.Options{}, v, a)
	const leaveAt = 2_000_000
	audio := writeRemovingAt(t, w, mediatest.Interleave(v, a), 2, leaveAt)
	r := demux(t, buf.Bytes())
	if _, ok := r.pmtStreams[0x101]; ok || len(r.pmtStreams) != 1 {
		t.Errorf("last PMT lists %v, want the video track only", r.pmtStreams)
	}
	if r.pes[0x101] != audio {
		t.Errorf("%d audio PES, want %d", r.pes[0x101], audio)
	}
	mediatest.DecodeClean(t, writeFile(t, buf.Bytes()))
}

func TestRemovingThePCRTrackMovesThePCR(t *testing.T) {
	v := mediatest.SampleInput("h264", 1)
	a := mediatest.SampleInput("aac", 2)
	w, buf := startWriter(t, ts.Options{}, v, a)
	// The video's frames after its removal are refused (ErrUnknownTrack).
	writeRemovingAt(t, w, mediatest.Interleave(v, a), 1, 2_000_000)
	r := demux(t, buf.Bytes())
	if r.pcrPID != 0x101 {
		t.Errorf("PCR PID %#x after removing the video, want the audio PID 0x101", r.pcrPID)
	}
	if r.pcrGaps > 0 {
		t.Errorf("%d PCR gaps above 40 ms", r.pcrGaps)
	}
	mediatest.DecodeClean(t, writeFile(t, buf.Bytes()))
}

func TestDiscontinuityMarksPacketsAndWaitsForAKeyframe(t *testing.T) {
	for _, keep := range []bool{false, true} {
		name := "rebased"
		if keep {
			name = "kept timestamps"
		}
		t.Run(name, func(t *testing.T) {
			v := mediatest.SampleInput("h264", 1)
			a := mediatest.SampleInput("aac", 2)
			w, buf := startWriter(t, ts.Options{KeepTimestamps: keep}, v, a)
			// Break at 1.5 s (mid-GOP): video must wait for the 2 s keyframe.
			const breakAt = 1_500_000
			broken := map[int]bool{}
			var written = map[int]int{}
			for _, f := range mediatest.Interleave(v, a) {
				if f.Timestamp >= breakAt && !broken[f.TrackID] {
					f.Discontinuity = true
					broken[f.TrackID] = true
				}
				if err := w.WriteFrame(f); err != nil {
					t.Fatal(err)
				}
				written[f.TrackID]++
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			st := w.Counters()
			if st.DroppedVideo == 0 {
				t.Errorf("Stats = %+v, want video frames dropped until the next keyframe", st)
			}
			r := demux(t, buf.Bytes())
			if r.di[0x100] == 0 || r.di[0x101] == 0 {
				t.Errorf("discontinuity_indicator on %v, want both PIDs", r.di)
			}
			path := writeFile(t, buf.Bytes())
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			if got := len(p.PacketsOf(pidStream(t, p, 0x100).Index)); int64(got) != int64(len(v.Frames))-st.DroppedVideo {
				t.Errorf("ffprobe counts %d video packets, want %d", got, int64(len(v.Frames))-st.DroppedVideo)
			}
			if got := len(p.PacketsOf(pidStream(t, p, 0x101).Index)); got != len(a.Frames) {
				t.Errorf("ffprobe counts %d audio packets, want %d", got, len(a.Frames))
			}
		})
	}
}

func TestUseAfterCloseFails(t *testing.T) {
	w := ts.NewWriter(&bytes.Buffer{}, ts.Options{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFrame(mux.Frame{TrackID: 1, Payload: []byte{1}}); !errors.Is(err, mux.ErrClosed) {
		t.Errorf("WriteFrame after Close = %v, want ErrClosed", err)
	}
	if err := w.AddTrack(mux.Track{ID: 1, Codec: "opus"}); !errors.Is(err, mux.ErrClosed) {
		t.Errorf("AddTrack after Close = %v, want ErrClosed", err)
	}
}

func TestUnknownTrackFramesFail(t *testing.T) {
	w := ts.NewWriter(&bytes.Buffer{}, ts.Options{})
	if err := w.WriteFrame(mux.Frame{TrackID: 7, Payload: []byte{1}}); !errors.Is(err, mux.ErrUnknownTrack) {
		t.Errorf("WriteFrame = %v, want ErrUnknownTrack", err)
	}
	if err := w.WriteFrame(mux.Frame{TrackID: 7, Payload: []byte{1}, Discontinuity: true}); !errors.Is(err, mux.ErrUnknownTrack) {
		t.Errorf("Discontinuity = %v, want ErrUnknownTrack", err)
	}
	if err := w.RemoveTrack(7); !errors.Is(err, mux.ErrUnknownTrack) {
		t.Errorf("RemoveTrack = %v, want ErrUnknownTrack", err)
	}
}

func TestParameterSetsSentAloneBeforeTheKeyframeAreKept(t *testing.T) {
	in := mediatest.SampleInput("h264-annexb", 1)
	// Move the first keyframe's SPS/PPS into a frame of their own, not
	// flagged as a keyframe, as some encoders send them.
	nalus, err := h26x.SplitAnnexB(in.Frames[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	var ps, rest [][]byte
	for _, n := range nalus {
		if h26x.IsParameterSet(h26x.H264, n) {
			ps = append(ps, n)
		} else {
			rest = append(rest, n)
		}
	}
	psFrame := in.Frames[0]
	psFrame.Keyframe, psFrame.Payload = false, h26x.AppendAnnexB(nil, ps)
	in.Frames[0].Payload = h26x.AppendAnnexB(nil, rest)
	var buf bytes.Buffer
	w := ts.NewWriter(&buf, ts.Options{})
	if err := w.AddTrack(in.Track); err != nil {
		t.Fatal(err)
	}
	for _, f := range append([]mux.Frame{psFrame}, in.Frames...) {
		if err := w.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Frames != int64(len(in.Frames)) {
		t.Errorf("Stats = %+v, want all %d frames written", st, len(in.Frames))
	}
	checkOutput(t, buf.Bytes(), in)
}

type failingWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (f *failingWriter) Write(b []byte) (int, error) {
	if f.n -= len(b); f.n < 0 {
		return 0, errDiskFull
	}
	return len(b), nil
}

func TestOutputErrorsAreStickyAndWrapped(t *testing.T) {
	in := mediatest.SampleInput("aac", 1)
	w := ts.NewWriter(&failingWriter{n: 188 * 20}, ts.Options{})
	if err := w.AddTrack(in.Track); err != nil {
		t.Fatal(err)
	}
	var first error
	for _, f := range in.Frames {
		if err := w.WriteFrame(f); err != nil {
			first = err
			break
		}
	}
	if !errors.Is(first, errDiskFull) {
		t.Fatalf("WriteFrame error = %v, want one wrapping the output error", first)
	}
	if err := w.WriteFrame(in.Frames[len(in.Frames)-1]); !errors.Is(err, errDiskFull) {
		t.Errorf("WriteFrame after a failed write = %v, want the same error", err)
	}
	if err := w.Close(); !errors.Is(err, errDiskFull) {
		t.Errorf("Close = %v, want the output error", err)
	}
}

// A malformed frame is a logged skip, as in the FLV and MKV muxers: the
// engine ends the export on any WriteFrame error, so returning one would end
// a recording over a single bad frame from the network.
func TestMalformedFramesAreSkippedAndTheStreamGoesOn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		track int // 0: video, 1: audio
		bad   func([]byte) []byte
	}{
		{"truncated H.264 NAL unit", 0, func(p []byte) []byte { return p[:len(p)-1] }},
		{"AAC frame too large for ADTS", 1, func([]byte) []byte { return make([]byte, 9000) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ins := []input{mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)}
			// Corrupt a copy of frame 10 of one track.
			in := &ins[tc.track]
			in.Frames = append([]mux.Frame(nil), in.Frames...)
			in.Frames[10].Payload = tc.bad(append([]byte(nil), in.Frames[10].Payload...))
			w, buf := startWriter(t, ts.Options{}, ins...)
			for _, f := range mediatest.Interleave(ins...) {
				if err := w.WriteFrame(f); err != nil {
					t.Fatalf("WriteFrame at %dus: %v, want the bad frame skipped", f.Timestamp, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got := w.Counters().Rejected; got != 1 {
				t.Errorf("Stats.Rejected = %d, want 1", got)
			}
			p := mediatest.Probe(t, writeFile(t, buf.Bytes()))
			for i, in := range ins {
				want := len(in.Frames)
				if i == tc.track {
					want--
				}
				if got := len(p.PacketsOf(pidStream(t, p, firstPID+uint16(i)).Index)); got != want {
					t.Errorf("PID %#x: ffprobe counts %d packets, want %d", firstPID+i, got, want)
				}
			}
		})
	}
}

// payloadBytes sums the payload bytes of the inputs' frames.
func payloadBytes(ins ...mediatest.Input) int64 {
	var n int64
	for _, in := range ins {
		for _, f := range in.Frames {
			n += int64(len(f.Payload))
		}
	}
	return n
}
