package wire

import (
	"bufio"
	"bytes"
	"slices"
	"testing"
)

// fuzzDecoder checks that a decoder never panics and that whatever it
// accepts re-encodes to a body it accepts again with the same meaning.
func fuzzDecoder[M any, P interface {
	*M
	message
}](f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add(unhex(f, s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var m M
		if P(&m).Decode(body) != nil {
			return
		}
		enc := P(&m).Append(nil)
		again, err := ReadMessage(bufio.NewReader(bytes.NewReader(enc)), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var m2 M
		if err := P(&m2).Decode(again); err != nil {
			t.Fatalf("re-encoded message rejected: %v", err)
		}
	})
}

func FuzzSetup(f *testing.F) {
	fuzzDecoder[Setup](f, "02 02 05 2f 61 6e 6f 6e 03 01 02", "01 03 01 02", "00", "01 05 08 c0 00 00 00 00 00 00 01")
}
func FuzzAnnounceRequest(f *testing.F) { fuzzDecoder[AnnounceRequest](f, "00 00", "04 72 6f 6f 6d 07") }
func FuzzAnnounceOK(f *testing.F)      { fuzzDecoder[AnnounceOK](f, "70 39 01", "00 00") }
func FuzzAnnounce(f *testing.F)        { fuzzDecoder[Announce](f, "01 03 62 62 62 01 07", "00 01 78 00") }
func FuzzTrackRequest(f *testing.F)    { fuzzDecoder[TrackRequest](f, "03 62 62 62 05 76 69 64 65 6f") }
func FuzzTrackInfo(f *testing.F)       { fuzzDecoder[TrackInfo](f, "00 00 53 88 43 e8", "00 02 00 01") }
func FuzzSubscribe(f *testing.F) {
	fuzzDecoder[Subscribe](f, "00 03 62 62 62 05 76 69 64 65 6f 00 00 00 00 00")
}
func FuzzSubscribeUpdate(f *testing.F) {
	fuzzDecoder[SubscribeUpdate](f, "00 00 00 00 00", "03 01 01 05 00")
}
func FuzzGroup(f *testing.F)  { fuzzDecoder[Group](f, "00 05") }
func FuzzFetch(f *testing.F)  { fuzzDecoder[Fetch](f, "01 62 01 74 09 4d") }
func FuzzProbe(f *testing.F)  { fuzzDecoder[Probe](f, "80 4c 4b 40 0c") }
func FuzzGoaway(f *testing.F) { fuzzDecoder[Goaway](f, "00", "01 78") }

func FuzzSubscribeResponse(f *testing.F) {
	for _, s := range []string{"00 01 05", "01 01 09", "02 03 01 03 02", "07 00"} {
		f.Add(unhex(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ReadSubscribeResponse(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			return
		}
		m2, err := ReadSubscribeResponse(bufio.NewReader(bytes.NewReader(m.Append(nil))))
		if err != nil || m2 != m {
			t.Fatalf("round trip %+v -> %+v, %v", m, m2, err)
		}
	})
}

// FuzzFrameReader feeds arbitrary group stream bytes: no panic, a huge
// size field with no data behind it must not allocate the size, and a
// reader that cuts its payloads from a Slab reads the same frames as one
// that does not.
func FuzzFrameReader(f *testing.F) {
	for _, s := range []string{"47 d0 03 61 62 63 40 42 02 68 69", "00 c0 00 00 00 01 ff ff ff", "00 81 ff ff ff 00"} {
		f.Add(unhex(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		plain := readAllFrames(t, &FrameReader{R: bufio.NewReader(bytes.NewReader(b))}, len(b))
		slab := readAllFrames(t, &FrameReader{R: bufio.NewReader(bytes.NewReader(b)), Slab: Slab{Hint: len(b) / 3}, UseSlab: true}, len(b))
		if !slices.EqualFunc(plain, slab, bytes.Equal) {
			t.Fatalf("with a slab, frames %x; without, %x", slab, plain)
		}
	})
}

func FuzzReadMessage(f *testing.F) {
	for _, s := range []string{"03 70 39 01", "c0 ff ff ff ff ff ff ff", "41"} {
		f.Add(unhex(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := ReadMessage(bufio.NewReader(bytes.NewReader(b)), 0)
		if err == nil && len(body) > len(b) {
			t.Fatal("body longer than input")
		}
		// ReadMessageBuffered says the same, whether the body fits the
		// buffer (16 bytes, the smallest) or not.
		for _, size := range []int{16, 4096} {
			got, gerr := ReadMessageBuffered(bufio.NewReaderSize(bytes.NewReader(b), size), 0)
			if !bytes.Equal(got, body) || (gerr == nil) != (err == nil) || gerr != nil && gerr.Error() != err.Error() {
				t.Fatalf("buffer of %d: %x, %v; ReadMessage: %x, %v", size, got, gerr, body, err)
			}
		}
	})
}

// readAllFrames reads fr to its end and fails when the payloads add up to
// more than the n input bytes; it returns the payloads.
func readAllFrames(t *testing.T, fr *FrameReader, n int) [][]byte {
	total := 0
	var out [][]byte
	for {
		p, err := fr.Next()
		if err != nil {
			return out
		}
		out = append(out, p)
		total += len(p)
		if total > n {
			t.Fatalf("read %d payload bytes from %d input bytes", total, n)
		}
	}
}
