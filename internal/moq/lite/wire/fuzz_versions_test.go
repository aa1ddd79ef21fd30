package wire

import (
	"bufio"
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/moq/transport/alpn"
	"github.com/moq-export/moq-export/internal/varint"
)

// The per-version decoders: the first input byte picks the version
// (modulo the table), the rest is the body.

func pickVersion(b []byte) (*Version, []byte) {
	if len(b) == 0 {
		return Lite05, b
	}
	return liteVersions()[int(b[0])%len(liteVersions())], b[1:]
}

// seedsForVersions adds every reference layout of the named message, each
// with its version's index, plus the extra seeds for every version.
func seedsForVersions(f *testing.F, message string, extra ...string) {
	for _, l := range readReferenceLayouts(f) {
		if l.Message != message {
			continue
		}
		for i, v := range liteVersions() {
			if v.Name == l.Version {
				body, err := ReadMessage(bufio.NewReader(bytes.NewReader(unhex(f, l.Hex))), 0)
				if err == nil {
					f.Add(append([]byte{byte(i)}, body...))
				}
			}
		}
	}
	for _, s := range extra {
		for i := range liteVersions() {
			f.Add(append([]byte{byte(i)}, unhex(f, s)...))
		}
	}
}

// fuzzVersioned checks that a per-version decoder never panics and that
// whatever it accepts re-encodes, in the same version, to a body it
// accepts again with the same meaning.
func fuzzVersioned[M any, P interface {
	*M
	versionedMessage
}](f *testing.F, message string, extra ...string) {
	seedsForVersions(f, message, extra...)
	f.Fuzz(func(t *testing.T, in []byte) {
		v, body := pickVersion(in)
		var m M
		if P(&m).DecodeFor(body, v) != nil {
			return
		}
		enc := P(&m).AppendFor(nil, v)
		again, err := ReadMessage(bufio.NewReader(bytes.NewReader(enc)), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var m2 M
		if err := P(&m2).DecodeFor(again, v); err != nil {
			t.Fatalf("%s: re-encoded message rejected: %v", v, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("%s: %+v re-decoded as %+v", v, m, m2)
		}
	})
}

func FuzzAnnounceRequestFor(f *testing.F) { fuzzVersioned[AnnounceRequest](f, "AnnounceRequest", "00") }
func FuzzTrackInfoFor(f *testing.F) {
	fuzzVersioned[TrackInfo](f, "TrackInfo", "00 c0 1f ff ff ff ff ff ff 43 e8", "50 80 00 75 30 80 0f 42 40")
}
func FuzzGroupFor(f *testing.F) { fuzzVersioned[Group](f, "Group", "00 05 00", "01 07 04") }
func FuzzFetchFor(f *testing.F) {
	fuzzVersioned[Fetch](f, "Fetch", "04 72 6f 6f 6d 05 76 69 64 65 6f 03 07 02 07", "04 72 6f 6f 6d 05 76 69 64 65 6f 03 07 00 00")
}

// FuzzAnnounceFor reads announcements as a stream carries them (the type
// first on lite-06): whatever decodes re-encodes to bytes that read back
// the same.
func FuzzAnnounceFor(f *testing.F) {
	for _, l := range readReferenceLayouts(f) {
		for i, v := range liteVersions() {
			if v.Name == l.Version && strings.HasPrefix(l.Message, "Announce") && l.Message != "AnnounceRequest" &&
				l.Message != "AnnounceOK" && l.Message != "AnnounceInit" {
				f.Add(append([]byte{byte(i)}, unhex(f, l.Hex)...))
			}
		}
	}
	for _, s := range []string{"04 02 01 78 00", "00 0d 08 72 6f 6f 6d 2f 63 61 6d 01 07 0c 1e",
		"00 0e 03 62 62 62 00 00 ff ff ff ff ff ff ff ff", "02 05 03 01 07 0c 1e", "01 01 2a", "07 02 aa bb"} {
		for i := range liteVersions() {
			f.Add(append([]byte{byte(i)}, unhex(f, s)...))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, b := pickVersion(in)
		m, err := ReadAnnounceFor(bufio.NewReader(bytes.NewReader(b)), v)
		if err != nil {
			return
		}
		m2, err := ReadAnnounceFor(bufio.NewReader(bytes.NewReader(m.AppendFor(nil, v))), v)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("%s: round trip %+v -> %+v, %v", v, m, m2, err)
		}
	})
}
func FuzzSubscribeFor(f *testing.F)       { fuzzVersioned[Subscribe](f, "Subscribe") }
func FuzzSubscribeUpdateFor(f *testing.F) { fuzzVersioned[SubscribeUpdate](f, "SubscribeUpdate", "3c") }
func FuzzProbeFor(f *testing.F)           { fuzzVersioned[Probe](f, "Probe", "00 00") }

func FuzzAnnounceInit(f *testing.F) {
	fuzzDecoder[AnnounceInit](f, "02 05 61 6c 69 63 65 03 62 6f 62", "c0 00 00 00 ff ff ff ff")
}
func FuzzSessionInfo(f *testing.F) { fuzzDecoder[SessionInfo](f, "80 00 fa 00") }

func FuzzSubscribeResponseFor(f *testing.F) {
	for _, l := range readReferenceLayouts(f) {
		for i, v := range liteVersions() {
			if v.Name == l.Version {
				f.Add(append([]byte{byte(i)}, unhex(f, l.Hex)...))
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, b := pickVersion(in)
		m, err := ReadSubscribeResponseFor(bufio.NewReader(bytes.NewReader(b)), v)
		if err != nil {
			return
		}
		m2, err := ReadSubscribeResponseFor(bufio.NewReader(bytes.NewReader(m.AppendFor(nil, v))), v)
		if err != nil || m2 != m {
			t.Fatalf("%s: round trip %+v -> %+v, %v", v, m, m2, err)
		}
	})
}

func FuzzFrameReaderFor(f *testing.F) {
	for _, s := range []string{"47 d0 03 61 62 63 40 42 02 68 69", "03 61 62 63 02 68 69", "c0 00 00 00 01 ff ff ff"} {
		for i := range liteVersions() {
			f.Add(append([]byte{byte(i)}, unhex(f, s)...))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, b := pickVersion(in)
		readAllFrames(t, NewFrameReader(bufio.NewReader(bytes.NewReader(b)), v), len(b))
	})
}

// FuzzLegacySetup feeds the legacy SETUP exchange: stream type, 16-bit
// length and body, for both messages.
func FuzzLegacySetup(f *testing.F) {
	for _, l := range readReferenceLayouts(f) {
		if l.Version == alpn.Legacy {
			f.Add(unhex(f, l.Hex))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		typ, err := varint.Read(r)
		if err != nil {
			return
		}
		body, err := ReadLegacyMessage(r)
		if err != nil {
			return
		}
		if len(body) > len(b) {
			t.Fatal("body longer than input")
		}
		switch typ {
		case StreamClientSetup:
			legacyRoundTrip[ClientSetup](t, body)
		case StreamServerSetup:
			legacyRoundTrip[ServerSetup](t, body)
		}
	})
}

// legacyRoundTrip checks that a legacy SETUP body that decodes re-encodes
// to one that decodes the same.
func legacyRoundTrip[M any, P interface {
	*M
	message
}](t *testing.T, body []byte) {
	var m, m2 M
	if P(&m).Decode(body) != nil {
		return
	}
	again, err := ReadLegacyMessage(bufio.NewReader(bytes.NewReader(P(&m).Append(nil))))
	if err != nil || P(&m2).Decode(again) != nil || !reflect.DeepEqual(m, m2) {
		t.Fatalf("round trip %+v -> %+v, %v", m, m2, err)
	}
}

// liteVersions is the moq-lite part of the table: the per-version layouts
// of this package are moq-lite's (moq-transport's live in package ietf).
func liteVersions() []*Version {
	return Versions
}
