package flv

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/mux"
)

// fuzzTrackSets are the track combinations a fuzz input picks from by its
// first byte.
var fuzzTrackSets = [][]mux.Track{
	{{ID: 1, Kind: mux.Video, Codec: "avc1.64001f", Description: samples.MustLoadSample("h264").Description, Framerate: 30},
		{ID: 2, Kind: mux.Audio, Codec: "mp4a.40.2", SampleRate: 48000, Channels: 2}},
	{{ID: 1, Kind: mux.Video, Codec: "hvc1.1.6.L93.B0", Description: samples.MustLoadSample("h265").Description},
		{ID: 2, Kind: mux.Audio, Codec: "opus"}},
	{{ID: 1, Kind: mux.Video, Codec: "av01.0.04M.08"}, {ID: 2, Kind: mux.Audio, Codec: "mp3"}},
	{{ID: 1, Kind: mux.Video, Codec: "vp09.00.10.08"}},
	{{ID: 1, Kind: mux.Video, Codec: "avc1.64001f"}, {ID: 2, Kind: mux.Audio, Codec: "mp4a.40.2", SampleRate: 44100, Channels: 1}},
	{{ID: 1, Kind: mux.Video, Codec: "hev1.1.6.L93.B0"}},
}

// FuzzWriter feeds random frames, timestamps, discontinuities and track
// changes to a Writer and checks that it never panics and that whatever it
// wrote is well-formed FLV with per-track decode times that never go back.
func FuzzWriter(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 4, 1, 2, 3, 4, 0, 2, 0, 2, 0xaa, 0xbb})
	f.Add([]byte{1, 0, 1, 0xff, 3, 9, 9, 9, 1, 0, 0, 2, 0x80, 1, 7})
	f.Add([]byte{2, 3, 0, 1, 0, 0, 1, 0x7f, 1, 0})
	f.Add([]byte{3, 0, 1, 1, 1, 0, 2, 1, 1, 0})
	// A real start: the H.264 sample's first frames.
	seed := []byte{0}
	for _, fr := range samples.MustLoadSample("h264").Frames[:4] {
		p := fr.Payload[:min(len(fr.Payload), 200)]
		seed = append(seed, 0, 1, 33, byte(len(p)))
		seed = append(seed, p...)
	}
	f.Add(seed)
	// The same in Annex B, without description.
	seed = []byte{4}
	for _, fr := range samples.MustLoadSample("h264").MustAnnexB().Frames[:4] {
		p := fr.Payload[:min(len(fr.Payload), 200)]
		seed = append(seed, 0, 1, 33, byte(len(p)))
		seed = append(seed, p...)
	}
	f.Add(seed)

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		set := fuzzTrackSets[int(data[0])%len(fuzzTrackSets)]
		data = data[1:]
		var out bytes.Buffer
		w := NewWriter(&out, Options{KeepTimestamps: len(data)%2 == 1})
		for _, tr := range set {
			if err := w.AddTrack(tr); err != nil {
				t.Fatalf("AddTrack(%s): %v", tr.Codec, err)
			}
		}
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		ts := int64(0)
		disc := map[int]bool{}
		for len(data) > 0 {
			op := next()
			id := 1 + int(op>>4)%len(set)
			switch op % 8 {
			case 0, 1, 2, 3, 4: // a frame: flags, time step (ms, may go back), length, payload
				flags := next()
				step := int64(int8(next())) * 1000
				if flags&2 != 0 {
					step *= 1 << 20 // a big jump
				}
				ts += step
				n := int(next())
				n = min(n, len(data))
				payload := data[:n]
				data = data[n:]
				_ = w.WriteFrame(mux.Frame{TrackID: id, Timestamp: ts, Keyframe: flags&1 != 0, Payload: payload, Discontinuity: disc[id]})
				disc[id] = false
			case 5:
				disc[id] = true // the track's next frame follows a break
			case 6:
				_ = w.RemoveTrack(id)
			case 7:
				_ = w.AddTrack(set[id-1])
			}
		}
		_ = w.Close()
		_, tags, err := readFLV(out.Bytes())
		if err != nil {
			t.Fatalf("malformed output: %v", err)
		}
		last := map[byte]int64{}
		for _, tg := range tags {
			if tg.typ == tagScript {
				continue
			}
			ts := int64(tg.ts)
			if prev, ok := last[tg.typ]; ok && ts < prev && prev-ts < 1<<31 {
				t.Fatalf("tag type %d time goes back: %d -> %d", tg.typ, prev, ts)
			}
			last[tg.typ] = ts
			if len(tg.body) < 2 {
				t.Fatalf("tag of %d bytes", len(tg.body))
			}
		}
		if len(tags) > 0 {
			if binary.BigEndian.Uint32(out.Bytes()[5:9]) != 9 {
				t.Fatal("bad header")
			}
		}
	})
}
