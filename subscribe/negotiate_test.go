package subscribe

import (
	"slices"
	"testing"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/transport/alpn"
)

// The public version list is moq-lite's versions then moq-transport's
// drafts, each newest first, under the names Options.Versions takes.
func TestThePublicVersionListIsBothFamiliesTablesInOrder(t *testing.T) {
	want := []string{"moq-lite-06", "moq-lite-05", "moq-lite-04", "moq-lite-03", "moq-lite-02", "moq-lite-01",
		"moq-transport-22", "moq-transport-21", "moq-transport-20", "moq-transport-19", "moq-transport-18",
		"moq-transport-17", "moq-transport-16", "moq-transport-15", "moq-transport-14"}
	if got := Versions(); !slices.Equal(got, want) {
		t.Fatalf("Versions() = %q\nwant %q", got, want)
	}
	for _, v := range versionTable {
		lite := wire.ByCode(v.Code) != nil
		if lite != (v.Family() == alpn.Lite) {
			t.Errorf("%s: in moq-lite's table %v, family %v", v, lite, v.Family())
		}
	}
}

// Options.Versions takes whole names, names without "moq-" and moq-lite
// numbers, keeps the order given, drops repeats, and refuses an unknown
// name naming every known one.
func TestVersionNamesResolveInTheOrderGiven(t *testing.T) {
	for _, tt := range []struct {
		names []string
		want  []string
		err   string
	}{
		{names: nil, want: Versions()},
		{names: []string{"lite-03, moq-lite-05,lite-03"}, want: []string{"moq-lite-03", "moq-lite-05"}},
		{names: []string{"05", " MOQ-LITE-02 ", "transport-20"}, want: []string{"moq-lite-05", "moq-lite-02", "moq-transport-20"}},
		{names: []string{"moq-transport-14", "moq-lite-06"}, want: []string{"moq-transport-14", "moq-lite-06"}},
		{names: []string{"lite-07"}, err: `moq: unknown protocol version "lite-07" (known: moq-lite-06, moq-lite-05, moq-lite-04, moq-lite-03, moq-lite-02, moq-lite-01, moq-transport-22, moq-transport-21, moq-transport-20, moq-transport-19, moq-transport-18, moq-transport-17, moq-transport-16, moq-transport-15, moq-transport-14)`},
		{names: []string{"20"}, err: `moq: unknown protocol version "20" (known: moq-lite-06, moq-lite-05, moq-lite-04, moq-lite-03, moq-lite-02, moq-lite-01, moq-transport-22, moq-transport-21, moq-transport-20, moq-transport-19, moq-transport-18, moq-transport-17, moq-transport-16, moq-transport-15, moq-transport-14)`},
		{names: []string{" , "}, err: `moq: no protocol version in " , "`},
	} {
		vs, err := versionList(tt.names)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: error %v\nwant %s", tt.names, err, tt.err)
			}
			continue
		}
		var got []string
		for _, v := range vs {
			got = append(got, v.Name)
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%q = %q, %v; want %q", tt.names, got, err, tt.want)
		}
	}
}
