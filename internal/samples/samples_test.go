package samples

import (
	"bytes"
	"testing"
)

func TestEverySampleRoundTripsThroughTheFrameDump(t *testing.T) {
	names := SampleNames()
	if len(names) < 7 {
		t.Fatalf("only %d samples embedded: %v", len(names), names)
	}
	for _, name := range names {
		s := MustLoadSample(name)
		if len(s.Frames) == 0 || !s.Frames[0].Keyframe || s.Codec == "" {
			t.Fatalf("%s: empty or not starting with a keyframe", name)
		}
		var buf bytes.Buffer
		if err := s.Encode(&buf); err != nil {
			t.Fatal(err)
		}
		again, err := DecodeSample(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Frames) != len(s.Frames) || again.Codec != s.Codec || !bytes.Equal(again.Frames[3].Payload, s.Frames[3].Payload) {
			t.Fatalf("%s: round trip differs", name)
		}
	}
}

func FuzzDecodeSample(f *testing.F) {
	var buf bytes.Buffer
	MustLoadSample("aac").Encode(&buf)
	f.Add(buf.Bytes()[:400])
	f.Add([]byte("MOQXFRM1\x02{}\x01\x02\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = DecodeSample(bytes.NewReader(data))
	})
}
