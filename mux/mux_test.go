package mux_test

import (
	"errors"
	"testing"

	"github.com/moq-export/moq-export/mux"
)

func TestEveryCodecFamilyHasAKind(t *testing.T) {
	for codec, want := range map[string]mux.Kind{
		"avc1.64001f": mux.Video, "hev1.1.6.L93.B0": mux.Video, "av01.0.08M.08": mux.Video,
		"vp8": mux.Video, "vp09.00.10.08": mux.Video,
		"mp4a.40.2": mux.Audio, "mp4a.40.34": mux.Audio, "opus": mux.Audio, "flac": mux.Audio,
		"mp3": mux.Audio, "mp2": mux.Audio, "ac-3": mux.Audio, "ec-3": mux.Audio, "pcm": mux.Audio,
		"theora": 0,
	} {
		if got := mux.CodecKind(mux.CodecFamily(codec)); got != want {
			t.Errorf("CodecKind(CodecFamily(%q)) = %v, want %v", codec, got, want)
		}
	}
}

func TestCaps(t *testing.T) {
	refuse := errors.New("no")
	c := mux.Caps{Container: "x", Supports: func(t mux.Track) error {
		if t.Codec == "vp8" {
			return refuse
		}
		return nil
	}, PerKind: map[mux.Kind]int{mux.Video: 2}}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"supported", c.Check(mux.Track{Codec: "avc1"}), nil},
		{"refused", c.Check(mux.Track{Codec: "vp8"}), refuse},
		{"zero caps take anything", mux.Caps{}.Check(mux.Track{Codec: "vp8"}), nil},
		{"below the limit", c.CheckCount(mux.Video, 1), nil},
		{"at the limit", c.CheckCount(mux.Video, 2), mux.ErrTrackLimit},
		{"kind without a limit", c.CheckCount(mux.Audio, 100), nil},
	} {
		if tc.want == nil && tc.err != nil || tc.want != nil && !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
}

func TestDiscardCounts(t *testing.T) {
	var d mux.Discard
	for _, n := range []int{3, 5} {
		if err := d.WriteFrame(mux.Frame{Payload: make([]byte, n)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.Stats(); got != (mux.Stats{Frames: 2, Bytes: 8}) {
		t.Fatalf("stats %+v", got)
	}
}
