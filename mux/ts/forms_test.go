package ts_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/eac3"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg1audio"

	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/ts"
)

func TestBothH26xInputFormsGiveTheSameStream(t *testing.T) {
	for _, name := range []string{"h264", "h265"} {
		t.Run(name, func(t *testing.T) {
			avcc := mediatest.SampleInput(name, 1)
			ab := mediatest.SampleInput(name+mediatest.AnnexBSuffix, 1)
			if ab.Track.Description != nil {
				t.Fatal("Annex B sample still has a description")
			}
			outAVCC, _ := muxAll(t, ts.Options{}, avcc)
			outAB, _ := muxAll(t, ts.Options{}, ab)
			checkOutput(t, outAB, ab)
			if !bytes.Equal(outAVCC, outAB) {
				t.Error("Annex B input muxes differently from AVCC input")
			}
		})
	}
}

func TestAnnexBKeyframeBeforeParameterSetsIsDropped(t *testing.T) {
	in := mediatest.SampleInput("h264-annexb", 1)
	// Strip the in-band parameter sets of the first GOP's keyframe.
	nalus, err := h26x.SplitAnnexB(in.Frames[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	var slices [][]byte
	for _, n := range nalus {
		if !h26x.IsParameterSet(h26x.H264, n) {
			slices = append(slices, n)
		}
	}
	in.Frames[0].Payload = h26x.AppendAnnexB(nil, slices)
	out, w := muxAll(t, ts.Options{}, in)
	// The whole first GOP waits: 30 frames.
	if st := w.Counters(); st.DroppedVideo != 30 || st.Frames != int64(len(in.Frames)-30) {
		t.Errorf("Stats = %+v, want the first GOP (30 frames) dropped", st)
	}
	in.Frames = in.Frames[30:]
	checkOutput(t, out, in)
}

// encodeAudio makes a short sine in codec with ffmpeg and splits it into
// frames with split, which returns the frame length and sample count.
func encodeAudio(t *testing.T, codec, format string, rate int, split func([]byte) (int, int, error)) input {
	t.Helper()
	mediatest.RequireTools(t, "ffmpeg")
	p := filepath.Join(t.TempDir(), "a."+format)
	mediatest.Run(t, "ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=2:sample_rate="+strconv.Itoa(rate),
		"-ac", "2", "-c:a", codec, "-f", format, p)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	in := input{Track: mux.Track{ID: 1, Kind: mux.Audio, Codec: codec, SampleRate: rate, Channels: 2}}
	var samples int64
	for len(b) > 0 {
		n, count, err := split(b)
		if err != nil || n <= 0 || n > len(b) {
			t.Fatalf("split %s at frame %d: %v", codec, len(in.Frames), err)
		}
		in.Frames = append(in.Frames, mux.Frame{TrackID: 1, Timestamp: samples * 1_000_000 / int64(rate), Keyframe: true, Payload: b[:n]})
		samples += int64(count)
		b = b[n:]
	}
	return in
}

func TestEAC3AndMP2PassThrough(t *testing.T) {
	splitEAC3 := func(b []byte) (int, int, error) {
		var s eac3.SyncInfo
		if err := s.Unmarshal(b); err != nil {
			return 0, 0, err
		}
		return s.FrameSize(), s.NumBlocks() * 256, nil
	}
	splitMPEG := func(b []byte) (int, int, error) {
		var h mpeg1audio.FrameHeader
		if err := h.Unmarshal(b); err != nil {
			return 0, 0, err
		}
		return h.FrameLen(), h.SampleCount(), nil
	}
	for _, tc := range []struct {
		name, codec, format string
		rate                int
		split               func([]byte) (int, int, error)
		probeCodec          string
		streamType          uint8
	}{
		{"eac3", "eac3", "eac3", 48000, splitEAC3, "eac3", 0x87},
		{"mp2 48 kHz", "mp2", "mp2", 48000, splitMPEG, "mp2", 0x03},
		{"mp2 24 kHz (MPEG-2 LSF)", "mp2", "mp2", 24000, splitMPEG, "mp2", 0x04},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := encodeAudio(t, tc.codec, tc.format, tc.rate, tc.split)
			out, _ := muxAll(t, ts.Options{}, in)
			path := writeFile(t, out)
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			if len(p.Streams) != 1 {
				t.Fatalf("ffprobe sees %d streams", len(p.Streams))
			}
			checkStream(t, p, 0x100, tc.probeCodec, len(in.Frames), 0)
			r := demux(t, out)
			if got := uint8(r.pmtStreams[0x100]); got != tc.streamType {
				t.Errorf("stream type %#x, want %#x", got, tc.streamType)
			}
			if r.pes[0x100] != len(in.Frames) || r.pcrGaps != 0 {
				t.Errorf("%d PES (want %d), %d PCR gaps", r.pes[0x100], len(in.Frames), r.pcrGaps)
			}
		})
	}
}
