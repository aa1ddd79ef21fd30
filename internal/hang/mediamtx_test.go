package hang_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/mkv"
)

// mediamtxObjects returns the objects MediaMTX sends for the frames of
// sample s (one object per group): the bare payload, H.264 as 4-byte
// length-prefixed units with the parameter sets in band before each
// keyframe, the timestamp in the object's extension in clock units per
// second (90 kHz video, the sample rate for audio), the object naming no
// timescale (the subscriber's default, microseconds, reaches the decoder).
func mediamtxObjects(t *testing.T, s *samples.Sample, clock uint64) []hang.Object {
	t.Helper()
	var ps [][]byte
	if s.Kind == "video" {
		p, _, err := h26x.ParseAVCDecoderConfig(s.Description)
		if err != nil {
			t.Fatal(err)
		}
		ps = p.NALUs()
	}
	out := make([]hang.Object, len(s.Frames))
	for i, f := range s.Frames {
		payload := f.Payload
		if s.Kind == "video" && f.Keyframe {
			payload = append(h26x.AppendAVCC(nil, ps), f.Payload...)
		}
		ts := int64(math.Round(float64(f.Timestamp) * float64(clock) / 1e6))
		out[i] = hang.Object{Payload: payload, Timestamp: ts, Timescale: hang.Timescale, HasTimestamp: true}
	}
	return out
}

// mediamtxCatalog is the MSF-00 catalog MediaMTX serves for H.264 and
// AAC; version is its "version" value (MediaMTX writes the number 1).
func mediamtxCatalog(t *testing.T, aac *samples.Sample, version string) *catalog.Catalog {
	t.Helper()
	doc := fmt.Sprintf(`{"version":%s,"tracks":[`+
		`{"name":"0","packaging":"loc","isLive":true,"codec":"avc3.640028","width":1280,"height":720},`+
		`{"name":"1","packaging":"loc","isLive":true,"codec":"mp4a.40.2","samplerate":%d,"channels":%d,"initData":%q}]}`,
		version, aac.SampleRate, aac.Channels, base64.StdEncoding.EncodeToString(aac.Description))
	c, err := catalog.ParseMSF([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// decodeAll decodes objs with a decoder of track (one group per object)
// and returns the frames, the warnings and the skipped objects.
func decodeAll(t *testing.T, track hang.Track, objs []hang.Object) (frames []model.Frame, warnings []string, skipped int) {
	t.Helper()
	for _, o := range objs {
		dec := track.Decoder()
		err := dec.Decode(o)
		if w := dec.Warning(); w != "" {
			warnings = append(warnings, w)
		}
		switch {
		case errors.Is(err, hang.ErrSkipped):
			skipped++
		case err != nil:
			t.Fatal(err)
		}
		for f, ok := dec.Next(); ok; f, ok = dec.Next() {
			frames = append(frames, f)
		}
		dec.Close()
	}
	return frames, warnings, skipped
}

// TestMediaMTXMediaIsDecodedToWhatWasPublished: H.264 and AAC as MediaMTX
// sends them (length-prefixed H.264 without a description, timestamps in
// its media clocks, MSF-00 catalog) decode to the frames published: same
// count, timestamps within the clock's resolution, the same NAL units (in
// Annex B, the form of a track without a description) and AAC payloads;
// no warning. Recorded into Matroska, ffprobe finds every frame at its
// time with its key flag, and ffmpeg decodes the file clean.
func TestMediaMTXMediaIsDecodedToWhatWasPublished(t *testing.T) {
	h264, aac := samples.MustLoadSample("h264"), samples.MustLoadSample("aac")
	c := mediamtxCatalog(t, aac, "1")
	video, audio := hang.ForRendition(c, "0"), hang.ForRendition(c, "1")
	vf, vw, vs := decodeAll(t, video, mediamtxObjects(t, h264, 90_000))
	af, aw, as := decodeAll(t, audio, mediamtxObjects(t, aac, uint64(aac.SampleRate)))
	if len(vw)+len(aw) > 0 || vs+as > 0 {
		t.Fatalf("warnings %q, skipped %d video %d audio", append(vw, aw...), vs, as)
	}
	if len(vf) != len(h264.Frames) || len(af) != len(aac.Frames) {
		t.Fatalf("%d video, %d audio frames; published %d, %d", len(vf), len(af), len(h264.Frames), len(aac.Frames))
	}
	for i, f := range vf {
		want := h264.Frames[i]
		if d := f.Timestamp - want.Timestamp; d < -12 || d > 12 {
			t.Fatalf("video frame %d at %d µs, published at %d", i, f.Timestamp, want.Timestamp)
		}
		units, err := h26x.SplitAnnexB(f.Payload)
		if err != nil {
			t.Fatalf("video frame %d is not Annex B: %v", i, err)
		}
		wantUnits, _ := h26x.SplitAVCC(want.Payload, 4)
		if want.Keyframe {
			units = units[2:] // SPS and PPS in band
		}
		if len(units) != len(wantUnits) {
			t.Fatalf("video frame %d: %d units, want %d", i, len(units), len(wantUnits))
		}
		for j := range units {
			if string(units[j]) != string(wantUnits[j]) {
				t.Fatalf("video frame %d unit %d differs", i, j)
			}
		}
	}
	for i, f := range af {
		if d := f.Timestamp - aac.Frames[i].Timestamp; d < -21 || d > 21 || string(f.Payload) != string(aac.Frames[i].Payload) {
			t.Fatalf("audio frame %d at %d µs (published %d), payload equal %v", i, f.Timestamp, aac.Frames[i].Timestamp, string(f.Payload) == string(aac.Frames[i].Payload))
		}
	}

	// Into Matroska, as the recorder would: the video track without a
	// description takes Annex B with parameter sets in band.
	file, path := mediatest.CreateFile(t, "mediamtx.mkv")
	w := mkv.NewWriter(file, mkv.Options{})
	tracks := []mux.Track{
		{ID: 1, Name: "0", Kind: mux.Video, Codec: "avc3.640028", Width: h264.Width, Height: h264.Height},
		{ID: 2, Name: "1", Kind: mux.Audio, Codec: "mp4a.40.2", Description: aac.Description, SampleRate: aac.SampleRate, Channels: aac.Channels},
	}
	var frames []mux.Frame
	for i, f := range vf {
		frames = append(frames, mux.Frame{TrackID: 1, Timestamp: f.Timestamp, Keyframe: h264.Frames[i].Keyframe, Payload: f.Payload})
	}
	for _, f := range af {
		frames = append(frames, mux.Frame{TrackID: 2, Timestamp: f.Timestamp, Keyframe: true, Payload: f.Payload})
	}
	frames = mediatest.Interleave(mediatest.Input{Track: tracks[0], Frames: frames[:len(vf)]}, mediatest.Input{Track: tracks[1], Frames: frames[len(vf):]})
	mediatest.Write(t, w, tracks, frames)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	for i, s := range []*samples.Sample{h264, aac} {
		pk := p.PacketsOf(i)
		if len(pk) != len(s.Frames) {
			t.Fatalf("stream %d: %d packets, published %d", i, len(pk), len(s.Frames))
		}
		for j, q := range pk {
			sec, err := strconv.ParseFloat(q.PTSTime, 64)
			if err != nil || math.Abs(sec*1e6-float64(s.Frames[j].Timestamp)) > 1000 {
				t.Fatalf("stream %d packet %d at %s s, published at %d µs", i, j, q.PTSTime, s.Frames[j].Timestamp)
			}
			if (q.Flags != "" && q.Flags[0] == 'K') != s.Frames[j].Keyframe && i == 0 {
				t.Fatalf("video packet %d key flag %q, published %v", j, q.Flags, s.Frames[j].Keyframe)
			}
		}
	}
}

// TestATimescaleReadWrongIsWarned: the same objects under a catalog that
// names no clock (an MSF-01 one: microseconds assumed) come out 11 times
// too fast for video and 48 kHz audio frames 21 ms apart read as 1 ms;
// the rate check says so once per track.
func TestATimescaleReadWrongIsWarned(t *testing.T) {
	h264, aac := samples.MustLoadSample("h264"), samples.MustLoadSample("aac")
	c := mediamtxCatalog(t, aac, `"draft-01"`)
	_, vw, _ := decodeAll(t, hang.ForRendition(c, "0"), mediamtxObjects(t, h264, 90_000))
	if len(vw) != 1 {
		t.Errorf("video warnings %q, want one", vw)
	}
	_, aw, _ := decodeAll(t, hang.ForRendition(c, "1"), mediamtxObjects(t, aac, 1000))
	if len(aw) != 1 {
		t.Errorf("audio warnings %q, want one (frames about 21 µs apart)", aw)
	}
}

// TestAFrameThatParsesNeitherWayIsSkippedAndCounted: a payload of a
// description-less H.264 track that is neither Annex B nor
// length-prefixed is skipped (ErrSkipped) and counted, never passed on.
func TestAFrameThatParsesNeitherWayIsSkippedAndCounted(t *testing.T) {
	aac := samples.MustLoadSample("aac")
	track := hang.ForRendition(mediamtxCatalog(t, aac, "1"), "0")
	frames, _, skipped := decodeAll(t, track, []hang.Object{
		{Payload: []byte{0x12, 0x34, 0x56, 0x78, 0x9a}, Timestamp: 0, Timescale: hang.Timescale, HasTimestamp: true},
		{Payload: h26x.AppendAVCC(nil, [][]byte{{0x65, 1, 2, 3}}), Timestamp: 3000, Timescale: hang.Timescale, HasTimestamp: true},
	})
	if skipped != 1 || len(frames) != 1 || track.Unframed() != 1 {
		t.Fatalf("skipped %d, frames %d, unframed %d; want 1, 1, 1", skipped, len(frames), track.Unframed())
	}
}

// TestKeyFlagsOfAGroupPerFrameTrackComeFromTheBitstream: MediaMTX sends
// each frame as its own group, so hang's rule (the first frame of a group
// is the keyframe) would flag every frame. Under its MSF-00 catalog the
// key flag comes from the bitstream instead: for H.264 and H.265 sent as
// MediaMTX sends them (length-prefixed, parameter sets in band, no
// description), for H.264 with a description, and for AV1, VP8 and VP9,
// each decoded frame is SyncKey exactly where the source had a keyframe
// and SyncDelta elsewhere. Under a hang catalog the same objects keep
// hang's rule (SyncGroup).
func TestKeyFlagsOfAGroupPerFrameTrackComeFromTheBitstream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sample, codec string
		inBand        bool // parameter sets in band, no description
	}{
		{"h264", "avc3.640028", true},
		{"h265", "hev1.1.6.L93.B0", true},
		{"h264", "avc1.64000d", false},
		{"av1", "av01.0.04M.08", false},
		{"vp8", "vp8", false},
		{"vp9", "vp09.00.10.08", false},
	} {
		t.Run(tc.codec, func(t *testing.T) {
			s := samples.MustLoadSample(tc.sample)
			entry := fmt.Sprintf(`{"name":"0","packaging":"loc","isLive":true,"codec":%q,"width":%d,"height":%d}`, tc.codec, s.Width, s.Height)
			var ps [][]byte
			if tc.inBand {
				c, _ := h26x.CodecOf(tc.sample)
				p, _, err := h26x.ParseDecoderConfig(c, s.Description)
				if err != nil {
					t.Fatal(err)
				}
				ps = p.NALUs()
			} else if len(s.Description) > 0 {
				entry = entry[:len(entry)-1] + fmt.Sprintf(`,"initData":%q}`, base64.StdEncoding.EncodeToString(s.Description))
			}
			objs := make([]hang.Object, len(s.Frames))
			keys := 0
			for i, f := range s.Frames {
				p := f.Payload
				if f.Keyframe {
					keys++
					if ps != nil {
						p = append(h26x.AppendAVCC(nil, ps), p...)
					}
				}
				objs[i] = hang.Object{Payload: p, Timestamp: f.Timestamp * 9 / 100, Timescale: hang.Timescale, HasTimestamp: true}
			}
			if keys < 2 || keys == len(s.Frames) {
				t.Fatalf("sample %s has %d keyframes in %d frames: the test needs both kinds", tc.sample, keys, len(s.Frames))
			}
			for _, version := range []string{"1", `"draft-01"`} {
				c, err := catalog.ParseMSF([]byte(`{"version":` + version + `,"tracks":[` + entry + `]}`))
				if err != nil {
					t.Fatal(err)
				}
				frames, _, skipped := decodeAll(t, hang.ForRendition(c, "0"), objs)
				if skipped > 0 || len(frames) != len(s.Frames) {
					t.Fatalf("version %s: %d frames (%d skipped), published %d", version, len(frames), skipped, len(s.Frames))
				}
				for i, f := range frames {
					want := model.SyncDelta
					if s.Frames[i].Keyframe {
						want = model.SyncKey
					}
					if version != "1" {
						want = model.SyncGroup // MSF-01: groups are GOPs
					}
					if f.Sync != want {
						t.Fatalf("version %s frame %d: sync %d, want %d (source keyframe %v)", version, i, f.Sync, want, s.Frames[i].Keyframe)
					}
				}
			}
		})
	}
}
