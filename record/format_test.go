package record

import (
	"errors"
	"testing"

	"github.com/moq-export/moq-export/mux"
)

func TestFormatFromPathFollowsTheExtension(t *testing.T) {
	for _, tc := range []struct {
		path string
		want Format
		ok   bool
	}{
		{"a.flv", FLV, true}, {"A.MKV", MKV, true}, {"x/y.webm", WebM, true}, {"a.ts", TS, true},
		{"a.m2ts", TS, true}, {"a.mka", MKV, true}, {"rec/{broadcast}-{n}.mkv", MKV, true},
		{"noext", "", false}, {"dir.flv/file", "", false},
	} {
		got, ok := FormatFromPath(tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("FormatFromPath(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseFormatAcceptsNamesAndAliases(t *testing.T) {
	for in, want := range map[string]Format{"flv": FLV, "MKV": MKV, "matroska": MKV, "webm": WebM, "ts": TS, "mpegts": TS, "hls": HLS, "dash": HLS} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "mov", "smooth"} {
		if _, err := ParseFormat(in); err == nil {
			t.Errorf("ParseFormat(%q) accepted", in)
		}
	}
}

func TestEveryFormatHasAMuxer(t *testing.T) {
	for _, f := range Formats {
		_, err := f.NewMuxer(nil, MuxOptions{})
		switch {
		case f.Package() && !errors.Is(err, ErrPackage):
			t.Errorf("%s writes a package, yet NewMuxer over one writer says %v", f, err)
		case !f.Package() && err != nil:
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestFLVTakesOneRenditionOfEachKind(t *testing.T) {
	if c := FLV.Caps(); c.PerKind[mux.Video] != 1 || c.PerKind[mux.Audio] != 1 {
		t.Errorf("FLV limits %v", c.PerKind)
	}
	if c := MKV.Caps(); len(c.PerKind) != 0 {
		t.Errorf("MKV limits %v", c.PerKind)
	}
}

func TestEveryFormatStatesWhatItCarries(t *testing.T) {
	for _, f := range Formats {
		if c := f.Caps(); c.Supports == nil || c.Container != string(f) {
			t.Errorf("%s: caps %+v", f, c)
		}
	}
}
