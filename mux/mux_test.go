package mux_test

import (
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
