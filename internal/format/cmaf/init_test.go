package cmaf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/mpeg4audio"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/opus"

	"github.com/moq-export/moq-export/internal/format/cmaf"
	"github.com/moq-export/moq-export/internal/testutil/cmaftest"
)

// inits makes one ffmpeg init per test codec (those named, or all).
func inits(t *testing.T, names ...string) map[string][]byte {
	t.Helper()
	cmaftest.RequireFFmpeg(t)
	dir := t.TempDir()
	out := map[string][]byte{}
	for _, c := range cmaftest.Codecs {
		if len(names) > 0 && !slices.Contains(names, c.Name) {
			continue
		}
		f := cmaftest.Fragmented(t, cmaftest.Encode(t, dir, c, "0.5"), cmaftest.EveryFrame)
		for _, in := range f.Inits {
			out[c.Name] = in
		}
	}
	return out
}

func TestInitGivesEachMuxerItsCodecRecord(t *testing.T) {
	ins := inits(t)
	for name, b := range ins {
		t.Run(name, func(t *testing.T) {
			in, err := cmaf.ParseInit(b)
			if err != nil {
				t.Fatal(err)
			}
			if in.Family != name {
				t.Fatalf("family %q", in.Family)
			}
			d := in.Description
			switch name {
			case "h264":
				if !boxInside(b, "avcC", d) || in.NALLength != 4 || in.Width != 320 || in.Height != 240 {
					t.Fatalf("%+v", in)
				}
			case "h265":
				if !boxInside(b, "hvcC", d) || in.NALLength != 4 {
					t.Fatalf("%+v", in)
				}
			case "av1":
				if !boxInside(b, "av1C", d) || d[0] != 0x81 {
					t.Fatalf("%+v", in)
				}
			case "vp9":
				if d != nil || in.Width != 320 {
					t.Fatalf("%+v", in)
				}
			case "aac":
				var asc mpeg4audio.AudioSpecificConfig
				if err := asc.Unmarshal(d); err != nil || asc.SampleRate != 48000 || in.SampleRate != 48000 || in.Channels != 2 {
					t.Fatalf("%+v %v", in, err)
				}
			case "opus":
				var h opus.IDHeader
				if err := h.Unmarshal(d); err != nil || in.Channels != 2 || in.SampleRate != 48000 {
					t.Fatalf("%+v %v", in, err)
				}
				// RFC 7845: little-endian pre-skip; libopus' is 312.
				if pre := binary.LittleEndian.Uint16(d[10:]); pre != 312 {
					t.Fatalf("pre-skip %d", pre)
				}
			}
		})
	}
}

// boxInside reports whether body is the body of a typ box in b.
func boxInside(b []byte, typ string, body []byte) bool {
	i := bytes.Index(b, []byte(typ))
	return i >= 4 && len(body) > 0 && bytes.HasPrefix(b[i+4:], body) && int(binary.BigEndian.Uint32(b[i-4:])) == len(body)+8
}

func TestBadInitsAreErrors(t *testing.T) {
	good := inits(t, "h264")["h264"]
	zeroScale := bytes.Clone(good)
	i := bytes.Index(zeroScale, []byte("mdhd"))
	binary.BigEndian.PutUint32(zeroScale[i+4+12:], 0) // version 0: after version/flags, two times
	tests := map[string][]byte{
		"Empty":         nil,
		"Garbage":       []byte("not an mp4 at all"),
		"Truncated":     good[:len(good)/2],
		"FtypOnly":      good[:bytes.Index(good, []byte("moov"))-4],
		"TimescaleZero": zeroScale,
		"Huge":          make([]byte, cmaf.MaxInitSize+1),
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := cmaf.ParseInit(b); !errors.Is(err, cmaf.ErrMalformed) {
				t.Fatalf("got %v", err)
			}
		})
	}
}
