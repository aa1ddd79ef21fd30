package alpn

import (
	"slices"
	"testing"
)

// The reference's offer (moq-net 0.3.1-0.3.3 ALPNS, the moq-lite-06 sheet
// §1.2): moq-lite newest first, "moql", moq-transport newest first, moq-00.
var referenceOffer = []string{
	"moq-lite-06", "moq-lite-05", "moq-lite-04", "moq-lite-03", "moql",
	"moqt-22", "moqt-21", "moqt-20", "moqt-19", "moqt-18", "moqt-17", "moqt-16", "moqt-15", "moq-00",
}

func TestTheTableIsOfferedInTheReferencesOrder(t *testing.T) {
	var got []string
	for _, tok := range Table {
		got = append(got, tok.Name)
	}
	if !slices.Equal(got, referenceOffer) {
		t.Errorf("offer order\n got %q\nwant %q", got, referenceOffer)
	}
}

func TestNoTokenOrCodeAppearsTwice(t *testing.T) {
	names, codes := map[string]bool{}, map[uint64]bool{}
	for _, tok := range Table {
		if names[tok.Name] {
			t.Errorf("token %q twice", tok.Name)
		}
		names[tok.Name] = true
		if tok.Code == 0 {
			continue
		}
		if codes[tok.Code] {
			t.Errorf("code %#x pinned twice", tok.Code)
		}
		codes[tok.Code] = true
	}
}

func TestEveryVersionMapsToItsTokenAndBack(t *testing.T) {
	cases := []struct {
		code uint64
		name string
	}{
		{0xff0dad01, ""}, {0xff0dad02, ""}, // legacy SETUP only
		{0xff0dad03, "moq-lite-03"}, {0xff0dad04, "moq-lite-04"}, {0xff0dad05, "moq-lite-05"}, {0xff0dad06, "moq-lite-06"},
		{0xff0dad07, ""}, // moq-lite-07-wip: never offered
		{0xff00000e, "moq-00"}, {0xff00000f, "moqt-15"}, {0xff000010, "moqt-16"}, {0xff000011, "moqt-17"},
		{0xff000012, "moqt-18"}, {0xff000013, "moqt-19"}, {0xff000014, "moqt-20"}, {0xff000015, "moqt-21"},
		{0xff000016, "moqt-22"},
		{0, ""},
	}
	for _, c := range cases {
		if got := Of(c.code); got != c.name {
			t.Errorf("Of(%#x) = %q, want %q", c.code, got, c.name)
		}
		if c.name == "" {
			continue
		}
		if code, ok := CodeOf(c.name); !ok || code != c.code {
			t.Errorf("CodeOf(%q) = %#x, %v; want %#x", c.name, code, ok, c.code)
		}
	}
	for _, n := range []string{Legacy, "", "moq-lite-06-wip", "moq-lite-07", "h3"} {
		if code, ok := CodeOf(n); ok {
			t.Errorf("CodeOf(%q) = %#x, want none", n, code)
		}
	}
}
