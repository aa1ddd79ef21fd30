package flv

import (
	"bytes"
	"errors"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
)

func TestCodecsFLVCannotCarryAreRejectedWithASuggestion(t *testing.T) {
	cases := []struct {
		codec   string
		kind    mux.Kind
		suggest string
	}{
		{"vp8", mux.Video, "mkv"},
		{"flac", mux.Audio, "mkv"},
		{"pcm-s16", mux.Audio, "mkv"},
		{"mp2", mux.Audio, "ts"},
		{"ac-3", mux.Audio, "ts"},
		{"ec-3", mux.Audio, "ts"},
		{"theora", mux.Video, "mkv"},
	}
	for _, tc := range cases {
		t.Run(tc.codec, func(t *testing.T) {
			w := NewWriter(&bytes.Buffer{}, Options{})
			err := w.AddTrack(mux.Track{ID: 1, Kind: tc.kind, Codec: tc.codec})
			var uc *mux.UnsupportedCodecError
			if !errors.As(err, &uc) || !errors.Is(err, mux.ErrUnsupportedCodec) {
				t.Fatalf("AddTrack(%s) = %v, want *mux.UnsupportedCodecError", tc.codec, err)
			}
			if uc.Container != "flv" || uc.Suggest != tc.suggest || uc.Codec != tc.codec {
				t.Fatalf("error %+v, want container flv, suggest %s", uc, tc.suggest)
			}
		})
	}
}

func TestBadDescriptionsAreRejectedAtAddTrack(t *testing.T) {
	cases := []mux.Track{
		{ID: 1, Kind: mux.Video, Codec: "avc1.64001f", Description: []byte{0, 1, 2}},
		{ID: 1, Kind: mux.Video, Codec: "hvc1.1.6.L93.B0", Description: []byte{2, 0, 0, 0, 0, 0, 0, 0}},
		{ID: 1, Kind: mux.Audio, Codec: "mp4a.40.2", Description: []byte{0xff}},
		{ID: 1, Kind: mux.Audio, Codec: "mp4a.40.2"},                                 // no description, no rate
		{ID: 1, Kind: mux.Audio, Codec: "mp4a.40.2", SampleRate: 48000, Channels: 7}, // no channelConfiguration
		{ID: 1, Kind: mux.Audio, Codec: "opus", Description: []byte("OpusTail1234567890123")},
		{ID: 1, Kind: mux.Audio, Codec: "opus", Channels: 9},
		{ID: 1, Kind: mux.Video, Codec: "av01.0.04M.08", Description: []byte{1, 2, 3, 4}},
		{ID: 1, Kind: mux.Audio, Codec: "avc1.64001f"}, // kind mismatch
	}
	for _, tr := range cases {
		w := NewWriter(&bytes.Buffer{}, Options{})
		if err := w.AddTrack(tr); err == nil {
			t.Errorf("AddTrack(%s, %x, %d ch) accepted", tr.Codec, tr.Description, tr.Channels)
		}
	}
}

func TestBuiltConfigurationRecordsMatchEncoderOutput(t *testing.T) {
	// The embedded Opus sample's OpusHead comes from libopus via ffmpeg.
	opus := samples.MustLoadSample("opus")
	got, err := buildOpusHead(48000, 2)
	if err != nil || !bytes.Equal(got, opus.Description) {
		t.Errorf("OpusHead %x (%v), libopus wrote %x", got, err, opus.Description)
	}
	six, err := buildOpusHead(48000, 6)
	if err != nil || len(six) != 19+2+6 || six[18] != 1 || six[19] != 4 || six[20] != 2 {
		t.Errorf("5.1 OpusHead %x (%v)", six, err)
	}
	// The AV1 sample's av1C: profile 0, 8 bit, 4:2:0 (level differs: the
	// codec string was derived separately).
	av1 := samples.MustLoadSample("av1")
	a := buildAV1C(av1.Codec)
	if a[0] != av1.Description[0] || a[2] != av1.Description[2] || a[1]>>5 != av1.Description[1]>>5 {
		t.Errorf("av1C %x, encoder wrote %x", a, av1.Description[:4])
	}
	if h := buildAV1C("av01.0.13H.10"); h[1] != 13 || h[2]&0x80 == 0 || h[2]&0x40 == 0 {
		t.Errorf("av1C for high tier 10 bit: %x", h)
	}
	v := buildVPCC("vp09.02.10.10.01.09.16.09.01")
	want := []byte{1, 0, 0, 0, 2, 10, 10<<4 | 1<<1 | 1, 9, 16, 9, 0, 0}
	if !bytes.Equal(v, want) {
		t.Errorf("vpcC %x, want %x", v, want)
	}
	asc, err := buildASC(mux.Track{Codec: "mp4a.40.2", SampleRate: 48000, Channels: 2})
	aac := samples.MustLoadSample("aac")
	if err != nil || !bytes.Equal(asc, aac.Description[:2]) {
		t.Errorf("ASC %x (%v), encoder wrote %x", asc, err, aac.Description)
	}
}

func TestBuiltAudioSpecificConfigsSayWhatTheCatalogSays(t *testing.T) {
	for _, tc := range []struct {
		codec    string
		channels int
		cc       uint8
	}{
		{"mp4a.40.2", 2, 2},
		{"mp4a.40.5", 2, 2}, // HE-AAC: the AAC-LC core, SBR found in band
		{"mp4a.40.29", 2, 2},
		{"mp4a.40.2", 8, 7}, // 7.1
	} {
		b, err := buildASC(mux.Track{Codec: tc.codec, SampleRate: 48000, Channels: tc.channels})
		var asc mpeg4audio.AudioSpecificConfig
		if err == nil {
			err = asc.Unmarshal(b)
		}
		if err != nil || asc.SampleRate != 48000 || asc.ChannelConfig != tc.cc {
			t.Errorf("%s, %d channels: ASC %x (%+v, %v), want %d Hz, channelConfiguration %d",
				tc.codec, tc.channels, b, asc, err, 48000, tc.cc)
		}
	}
}

func TestFirstTrackOfEachKindWinsAndLaterOnesAreRefused(t *testing.T) {
	tl := mediatest.SystemFFmpeg(t)
	v, a := samples.MustLoadSample("h264"), samples.MustLoadSample("aac")
	var logs bytes.Buffer
	f, path := mediatest.CreateFile(t, "two.flv")
	w := NewWriter(f, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, tr := range []mux.Track{mediatest.TrackOf(v, 1), mediatest.TrackOf(a, 2)} {
		if err := w.AddTrack(tr); err != nil {
			t.Fatal(err)
		}
	}
	second := mediatest.TrackOf(v, 3)
	second.Name = "720p"
	err := w.AddTrack(second)
	if !errors.Is(err, ErrTrackLimit) || !strings.Contains(err.Error(), "720p") {
		t.Fatalf("second video track: %v, want ErrTrackLimit naming it", err)
	}
	if err := w.AddTrack(mediatest.TrackOf(a, 4)); !errors.Is(err, ErrTrackLimit) {
		t.Fatalf("second audio track: %v, want ErrTrackLimit", err)
	}
	frames := interleave(0, v, a)
	for _, fr := range frames {
		if err := w.WriteFrame(fr); err != nil {
			t.Fatal(err)
		}
		// The refused track's frames are ignored, not errors.
		if err := w.WriteFrame(mux.Frame{TrackID: 3, Timestamp: fr.Timestamp, Payload: fr.Payload}); err != nil {
			t.Fatalf("frame of refused track: %v", err)
		}
	}
	if err := w.RemoveTrack(3); err != nil {
		t.Fatalf("removing a refused track: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := probe(t, tl, path)
	if len(got) != 2 || len(got["video"].pts) != len(v.Frames) || len(got["audio"].pts) != len(a.Frames) {
		t.Fatalf("streams %d, video packets %d (want %d)", len(got), len(got["video"].pts), len(v.Frames))
	}
}

func TestLateTracksOnlyReplaceARemovedOneOfTheSameCodec(t *testing.T) {
	v, a := samples.MustLoadSample("h264"), samples.MustLoadSample("aac")
	var out bytes.Buffer
	w := NewWriter(&out, Options{})
	if err := w.AddTrack(mediatest.TrackOf(v, 1)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFrame(mux.Frame{TrackID: 1, Timestamp: 0, Keyframe: true, Payload: v.Frames[0].Payload}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTrack(mediatest.TrackOf(a, 2)); !errors.Is(err, mux.ErrLateTrack) {
		t.Fatalf("audio after the header: %v, want ErrLateTrack", err)
	}
	if err := w.RemoveTrack(1); err != nil {
		t.Fatal(err)
	}
	h265 := mediatest.TrackOf(samples.MustLoadSample("h265"), 3)
	if err := w.AddTrack(h265); !errors.Is(err, mux.ErrLateTrack) {
		t.Fatalf("h265 replacing h264: %v, want ErrLateTrack", err)
	}
	if err := w.AddTrack(mediatest.TrackOf(v, 4)); err != nil {
		t.Fatalf("h264 replacing h264: %v", err)
	}
	if err := w.WriteFrame(mux.Frame{TrackID: 1, Payload: []byte{1}}); !errors.Is(err, mux.ErrUnknownTrack) {
		t.Fatalf("frame of removed track: %v, want ErrUnknownTrack", err)
	}
	if err := w.WriteFrame(mux.Frame{TrackID: 4, Timestamp: 40_000, Keyframe: true, Payload: v.Frames[0].Payload}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, tags, err := readFLV(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	// script, seq header, frame, seq header of the replacement, frame
	seq := 0
	for _, tg := range tags {
		if tg.typ == tagVideo && tg.body[1] == avcSequenceHeader {
			seq++
		}
	}
	if len(tags) != 5 || seq != 2 {
		t.Fatalf("%d tags, %d sequence headers; want 5 and 2", len(tags), seq)
	}
}

func TestMisuseGetsSentinelErrors(t *testing.T) {
	w := NewWriter(&bytes.Buffer{}, Options{})
	if err := w.WriteFrame(mux.Frame{TrackID: 9, Payload: []byte{1}}); !errors.Is(err, mux.ErrUnknownTrack) {
		t.Errorf("unknown track: %v", err)
	}
	if err := w.WriteFrame(mux.Frame{TrackID: 9, Payload: []byte{1}, Discontinuity: true}); !errors.Is(err, mux.ErrUnknownTrack) {
		t.Errorf("discontinuity on unknown track: %v", err)
	}
	if err := w.RemoveTrack(9); !errors.Is(err, mux.ErrUnknownTrack) {
		t.Errorf("remove unknown track: %v", err)
	}
	if err := w.AddTrack(mux.Track{ID: 1, Kind: mux.Audio, Codec: "mp3"}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTrack(mux.Track{ID: 1, Kind: mux.Audio, Codec: "mp3"}); err == nil {
		t.Error("same id twice accepted")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.WriteFrame(mux.Frame{TrackID: 1, Payload: []byte{1}}); !errors.Is(err, mux.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if err := w.AddTrack(mux.Track{ID: 2, Kind: mux.Video, Codec: "vp09.00.10.08"}); !errors.Is(err, mux.ErrClosed) {
		t.Errorf("AddTrack after Close: %v", err)
	}
}

func TestWriteErrorsAreStickyAndWrapped(t *testing.T) {
	w := NewWriter(failWriter{}, Options{})
	if err := w.AddTrack(mux.Track{ID: 1, Kind: mux.Audio, Codec: "mp3"}); err != nil {
		t.Fatal(err)
	}
	err := w.WriteFrame(mux.Frame{TrackID: 1, Payload: []byte{0xff, 0xfb, 0, 0}})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("first write: %v", err)
	}
	if err := w.WriteFrame(mux.Frame{TrackID: 1, Payload: []byte{1}}); !errors.Is(err, errDiskFull) {
		t.Fatalf("second write: %v", err)
	}
	if err := w.Close(); !errors.Is(err, errDiskFull) {
		t.Fatalf("Close: %v", err)
	}
}

var errDiskFull = errors.New("disk full")

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestEmptyOutputIsAValidHeaderOnlyFLV(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, Options{})
	if err := w.AddTrack(mux.Track{ID: 1, Kind: mux.Audio, Codec: "opus"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	flags, tags, err := readFLV(out.Bytes())
	if err != nil || flags != flagAudio || len(tags) != 1 || tags[0].typ != tagScript {
		t.Fatalf("flags %x, %d tags, %v", flags, len(tags), err)
	}
}

func TestTimestampsAreRebasedToZeroUnlessKept(t *testing.T) {
	a := samples.MustLoadSample("aac")
	const start = 3_600_000_000 // one hour, in µs
	frames := interleave(start, a)[:20]
	for _, tc := range []struct {
		name  string
		opts  Options
		first uint32
	}{
		{"Rebased", Options{}, 0},
		{"Kept", Options{KeepTimestamps: true}, start / 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tags := muxTags(t, tc.opts, []mux.Track{mediatest.TrackOf(a, 1)}, frames)
			audio := tagsOf(tags, tagAudio)
			if audio[0].ts != tc.first {
				t.Fatalf("first audio tag at %d ms, want %d", audio[0].ts, tc.first)
			}
			last := audio[len(audio)-1].ts
			if want := tc.first + uint32((frames[19].Timestamp-frames[0].Timestamp)/1000); last < want-1 || last > want+1 {
				t.Fatalf("last tag at %d ms, want %d", last, want)
			}
		})
	}
}

func TestExtendedTimestampByteCarriesTheUpperBits(t *testing.T) {
	tl := mediatest.SystemFFmpeg(t)
	a := samples.MustLoadSample("aac")
	const start = 20_000_000_000 // 20,000,000 ms: past 24 bits (16,777,215 ms)
	frames := interleave(start, a)
	path := writeFile(t, "ext.flv", Options{KeepTimestamps: true}, []mux.Track{mediatest.TrackOf(a, 1)}, frames)
	tags := readFLVFile(t, path)
	if first := tagsOf(tags, tagAudio)[0].ts; first != start/1000 {
		t.Fatalf("first tag time %d, want %d", first, start/1000)
	}
	tl.DecodeClean(t, path)
	got := probe(t, tl, path)["audio"]
	checkTimestamps(t, "audio", got, frames)
	if got.pts[0] != start/1000 {
		t.Fatalf("ffprobe first pts %d ms, want %d", got.pts[0], start/1000)
	}
}

func TestTimestampsPast32BitsWrapWithAWarning(t *testing.T) {
	var logs bytes.Buffer
	var out bytes.Buffer
	w := NewWriter(&out, Options{KeepTimestamps: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := w.AddTrack(mux.Track{ID: 1, Kind: mux.Audio, Codec: "mp3", SampleRate: 48000, Channels: 2}); err != nil {
		t.Fatal(err)
	}
	ts := int64(1<<32+5) * 1000
	if err := w.WriteFrame(mux.Frame{TrackID: 1, Timestamp: ts, Payload: []byte{0xff, 0xfb, 0x90, 0}}); err != nil {
		t.Fatal(err)
	}
	_, tags, err := readFLV(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got := tagsOf(tags, tagAudio)[0].ts; got != 5 {
		t.Fatalf("tag time %d, want 5 (wrapped)", got)
	}
	if !strings.Contains(logs.String(), "wrap") {
		t.Fatalf("no warning about wrapping: %q", logs.String())
	}
}

func TestDiscontinuityKeepsTheTimelineContinuous(t *testing.T) {
	tl := mediatest.SystemFFmpeg(t)
	v, a := samples.MustLoadSample("h264"), samples.MustLoadSample("aac")
	first := interleave(0, v, a)
	// The publisher restarts: the same media again, its clock back at 0.
	second := interleave(0, v, a)
	f, path := mediatest.CreateFile(t, "disc.flv")
	w := NewWriter(f, Options{})
	mediatest.Write(t, w, []mux.Track{mediatest.TrackOf(v, 1), mediatest.TrackOf(a, 2)}, first)
	mediatest.Write(t, w, nil, mediatest.AfterDiscontinuity(second))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tl.DecodeClean(t, path)
	got := probe(t, tl, path)
	for kind, n := range map[string]int{"video": len(v.Frames), "audio": len(a.Frames)} {
		st := got[kind]
		if len(st.pts) != 2*n || st.frames != 2*n {
			t.Fatalf("%s: %d packets, %d decoded; want %d", kind, len(st.pts), st.frames, 2*n)
		}
		for i := 1; i < len(st.dts); i++ {
			if st.dts[i] < st.dts[i-1] {
				t.Fatalf("%s dts goes back at packet %d: %d -> %d", kind, i, st.dts[i-1], st.dts[i])
			}
		}
		p := sortedCopy(st.pts)
		// The second half starts within two frames after the first ends.
		step := p[1] - p[0]
		for i := 1; i < len(p); i++ {
			if d := p[i] - p[i-1]; d > 2*step+2 {
				t.Fatalf("%s: gap of %d ms at %d ms", kind, d, p[i-1])
			}
		}
	}
	// Audio and video stay aligned after the shift.
	if d := got["video"].pts[len(v.Frames)] - got["audio"].pts[len(a.Frames)]; d < -50 || d > 50 {
		t.Fatalf("second half: video starts %d ms after audio", d)
	}
	// The sequence headers were sent again for the restart.
	tags := readFLVFile(t, path)
	seq := 0
	for _, tg := range tags {
		if (tg.typ == tagVideo && tg.body[1] == avcSequenceHeader) || (tg.typ == tagAudio && tg.body[1] == aacSequenceHeader) {
			seq++
		}
	}
	if seq != 4 {
		t.Fatalf("%d sequence headers, want 4", seq)
	}
}

func TestVideoBeforeTheFirstKeyframeIsDropped(t *testing.T) {
	v := samples.MustLoadSample("h264")
	frames := interleave(0, v)
	frames[0].Keyframe = false // pretend we joined mid-group: wait for the next one
	tags := muxTags(t, Options{}, []mux.Track{mediatest.TrackOf(v, 1)}, frames)
	video := tagsOf(tags, tagVideo)
	firstKey := 1
	for !frames[firstKey].Keyframe {
		firstKey++
	}
	if want := 1 + len(frames) - firstKey; len(video) != want {
		t.Fatalf("%d video tags, want %d (sequence header + frames from the keyframe)", len(video), want)
	}
	if video[1].body[0]>>4 != frameKey {
		t.Fatal("first coded frame is not a keyframe")
	}
}

func TestVideoDecodesFromZeroWithNonNegativeCompositionTimes(t *testing.T) {
	for _, name := range []string{"h264", "h264-annexb", "h265", "h265-annexb"} {
		for _, jitter := range []time.Duration{0, 200 * time.Millisecond} {
			s := mediatest.LoadSample(name)
			tr := mediatest.TrackOf(s, 1)
			tr.Jitter = jitter
			video := tagsOf(muxTags(t, Options{}, []mux.Track{tr}, interleave(5_000_000, s)), tagVideo)
			if len(video) != len(s.Frames)+1 {
				t.Fatalf("%s: %d video tags, want %d frames and a sequence header", name, len(video), len(s.Frames))
			}
			for i, tg := range video[1:] {
				cts := compositionTime(tg.body)
				if i == 0 && (tg.ts != 0 || cts != 0) {
					t.Fatalf("%s jitter %v: first frame dts %d cts %d, want 0 0", name, jitter, tg.ts, cts)
				}
				if cts < 0 {
					t.Fatalf("%s jitter %v frame %d: composition time %d", name, jitter, i, cts)
				}
			}
		}
	}
}

// compositionTime reads the SI24 composition time of an AVC or HEVC frame
// tag body (0 for an Enhanced CodedFramesX tag).
func compositionTime(body []byte) int32 {
	off := 2
	if body[0]&exHeader != 0 {
		if body[0]&0x0f == pktCodedFramesX {
			return 0
		}
		off = 5
	}
	return int32(uint32(body[off])<<24|uint32(body[off+1])<<16|uint32(body[off+2])<<8) >> 8
}

// muxTags muxes frames into memory and returns the parsed tags.
func muxTags(t *testing.T, opts Options, tracks []mux.Track, frames []mux.Frame) []flvTag {
	t.Helper()
	var out bytes.Buffer
	w := NewWriter(&out, opts)
	mediatest.Write(t, w, tracks, frames)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, tags, err := readFLV(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return tags
}

func tagsOf(tags []flvTag, typ byte) []flvTag {
	var out []flvTag
	for _, tg := range tags {
		if tg.typ == typ {
			out = append(out, tg)
		}
	}
	return out
}
