package mp4_test

import (
	"errors"
	"io"
	"math"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/mp4"
)

// TestEveryCodecDecodesAndMatchesItsInput muxes every sample alone, in both
// forms, and checks the file with ffmpeg (clean decode) and ffprobe (codec,
// packet count, pts, dts, keyframe flags, duration, box layout).
func TestEveryCodecDecodesAndMatchesItsInput(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	tests := []struct {
		name, sample string
		change       func(*mediatest.Input)
		probeCodec   string
	}{
		{"H264WithAvcC", "h264", nil, "h264"},
		{"H264AnnexB", "h264", toAnnexB, "h264"},
		{"H265WithHvcC", "h265", nil, "hevc"},
		{"H265AnnexB", "h265", toAnnexB, "hevc"},
		{"AV1WithAv1C", "av1", nil, "av1"},
		{"AV1FromSequenceHeader", "av1", func(in *mediatest.Input) { in.Track.Description = nil }, "av1"},
		{"VP9", "vp9", nil, "vp9"},
		{"OpusWithOpusHead", "opus", nil, "opus"},
		{"OpusWithoutOpusHead", "opus", func(in *mediatest.Input) { in.Track.Description = nil }, "opus"},
		{"AACWithASC", "aac", nil, "aac"},
		{"AACWithoutASC", "aac", func(in *mediatest.Input) { in.Track.Description = nil }, "aac"},
		{"FLAC", "flac", nil, "flac"},
		{"MP3", "mp3", nil, "mp3"},
		{"AC3", "ac3", nil, "ac3"},
	}
	for _, tc := range tests {
		for _, fm := range forms {
			t.Run(tc.name+"/"+fm.name, func(t *testing.T) {
				in := mediatest.SampleInput(tc.sample, 7)
				if tc.change != nil {
					tc.change(&in)
				}
				path := muxFile(t, "out.mp4", fm.finished, mp4.Options{FinishByCopy: fm.byCopy}, in)
				mediatest.DecodeClean(t, path)
				p := mediatest.Probe(t, path)
				if len(p.Streams) != 1 || p.Streams[0].CodecName != tc.probeCodec {
					t.Fatalf("ffprobe streams %+v, want one %s", p.Streams, tc.probeCodec)
				}
				if in.Track.Kind == mux.Video && (p.Streams[0].Width != 320 || p.Streams[0].Height != 180) {
					t.Errorf("size %dx%d, want 320x180", p.Streams[0].Width, p.Streams[0].Height)
				}
				checkPackets(t, path, p, 0, in, in.Frames[0].Timestamp, 1000)
				checkLayout(t, path, fm.finished, p, mediatest.LoadSample(tc.sample).Duration(), frameUs(in))
			})
		}
	}
}

// frameUs is the input's smallest frame distance: the ±1 frame of a
// duration check.
func frameUs(in mediatest.Input) int64 {
	best := int64(math.MaxInt64)
	for i := 1; i < len(in.Frames); i++ {
		if d := abs(in.Frames[i].Timestamp - in.Frames[i-1].Timestamp); d > 0 {
			best = min(best, d)
		}
	}
	return best
}

// checkLayout checks the top-level boxes of either form and, for the
// finished one, that ffprobe's duration is the media's within a frame.
func checkLayout(t *testing.T, path string, finished bool, p mediatest.ProbeResult, wantUs, frame int64) {
	t.Helper()
	boxes := compactBoxes(topBoxes(t, path))
	if !finished {
		if boxes != "ftyp,moov,moof,mdat" {
			t.Errorf("fragmented file boxes %s, want ftyp,moov,moof,mdat...", boxes)
		}
		return
	}
	if boxes != "ftyp,moov,mdat" {
		t.Errorf("finished file boxes %s, want ftyp,moov,mdat", boxes)
	}
	d, err := p.Format.Seconds()
	if err != nil {
		t.Fatalf("ffprobe duration %q: %v", p.Format.Duration, err)
	}
	if got := int64(d * 1e6); abs(got-wantUs) > frame {
		t.Errorf("ffprobe duration %d µs, want %d µs ± one frame (%d µs)", got, wantUs, frame)
	}
}

// TestMixesDecodeAndMatchTheirInput muxes the track combinations a
// broadcast has into both forms and checks every stream.
func TestMixesDecodeAndMatchTheirInput(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	annexB := func(name string, id int) mediatest.Input {
		in := mediatest.SampleInput(name, id)
		toAnnexB(&in)
		return in
	}
	tests := []struct {
		name string
		ins  []mediatest.Input
	}{
		{"H264+AAC", []mediatest.Input{mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)}},
		{"BrowserH264+Opus", []mediatest.Input{annexB("h264", 1), mediatest.SampleInput("opus", 2)}},
		{"H265+AAC", []mediatest.Input{mediatest.SampleInput("h265", 1), mediatest.SampleInput("aac", 2)}},
		{"AV1+Opus", []mediatest.Input{mediatest.SampleInput("av1", 1), mediatest.SampleInput("opus", 2)}},
		{"VP9+Opus", []mediatest.Input{mediatest.SampleInput("vp9", 1), mediatest.SampleInput("opus", 2)}},
		{"H264+AC3+MP3", []mediatest.Input{mediatest.SampleInput("h264", 1), mediatest.SampleInput("ac3", 2), mediatest.SampleInput("mp3", 3)}},
		{"TwoVideos+FLAC", []mediatest.Input{mediatest.SampleInput("h264", 1), mediatest.SampleInput("h265", 2), mediatest.SampleInput("flac", 3)}},
		{"AudioStartsLate", []mediatest.Input{mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2).Shift(250_000)}},
	}
	for _, tc := range tests {
		for _, fm := range forms {
			t.Run(tc.name+"/"+fm.name, func(t *testing.T) {
				path := muxFile(t, "mix.mp4", fm.finished, mp4.Options{FinishByCopy: fm.byCopy}, tc.ins...)
				mediatest.DecodeClean(t, path)
				p := mediatest.Probe(t, path)
				if len(p.Streams) != len(tc.ins) {
					t.Fatalf("ffprobe finds %d streams, want %d", len(p.Streams), len(tc.ins))
				}
				o := origin(tc.ins...)
				var end int64
				for i, in := range tc.ins {
					checkPackets(t, path, p, i, in, o, 1000)
					s := mediatest.LoadSample(in.Track.Name)
					end = max(end, in.Frames[0].Timestamp-o+s.Duration())
				}
				checkLayout(t, path, fm.finished, p, end, frameUs(tc.ins[0]))
			})
		}
	}
}

// TestCodecsMP4CannotCarryAreRefusedWithAdvice checks Supports and AddTrack
// on what MP4 has no registration for.
func TestCodecsMP4CannotCarryAreRefusedWithAdvice(t *testing.T) {
	for _, tc := range []struct {
		track   mux.Track
		suggest string
	}{
		{mux.Track{ID: 1, Kind: mux.Video, Codec: "vp8"}, "webm or mkv"},
		{mux.Track{ID: 1, Kind: mux.Audio, Codec: "mp2"}, "mkv or ts"},
		{mux.Track{ID: 1, Kind: mux.Audio, Codec: "pcm"}, ""},
		{mux.Track{ID: 1, Kind: mux.Video, Codec: "theora"}, ""},
	} {
		err := mp4.Supports(tc.track)
		var uc *mux.UnsupportedCodecError
		if !errors.As(err, &uc) || uc.Container != "mp4" || uc.Suggest != tc.suggest {
			t.Errorf("Supports(%s) = %v, want an UnsupportedCodecError for mp4 suggesting %q", tc.track.Codec, err, tc.suggest)
		}
		w := mp4.NewWriter(nopWriter{}, mp4.Options{})
		if err := w.AddTrack(tc.track); !errors.Is(err, mux.ErrUnsupportedCodec) {
			t.Errorf("AddTrack(%s) = %v, want ErrUnsupportedCodec", tc.track.Codec, err)
		}
	}
	for _, codec := range []string{"avc1.64001f", "hvc1.1.6.L93.B0", "av01.0.08M.08", "vp09.00.10.08", "mp4a.40.2", "opus", "mp3", "ac-3", "ec-3"} {
		if err := mp4.Supports(mux.Track{Codec: codec, Kind: mux.CodecKind(mux.CodecFamily(codec)), SampleRate: 48000, Channels: 2}); err != nil {
			t.Errorf("Supports(%s) = %v, want nil", codec, err)
		}
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// TestSupportsAgreesWithAddTrack checks the pure Supports against AddTrack
// on the shared cases.
func TestSupportsAgreesWithAddTrack(t *testing.T) {
	mediatest.CheckSupports(t, mp4.Caps, func() mux.Muxer { return mp4.NewWriter(nopWriter{}, mp4.Options{}) },
		"aac", "ac3", "av1", "flac", "h264", "h264-annexb", "h265", "h265-annexb", "mp3", "opus", "vp9")
}

// TestStatsMatchFFprobe checks mux.Stats against the packets of the file.
func TestStatsMatchFFprobe(t *testing.T) {
	mediatest.CheckStats(t, "stats.mp4", func(w io.Writer) mux.Muxer { return mp4.NewWriter(w, mp4.Options{}) })
}
