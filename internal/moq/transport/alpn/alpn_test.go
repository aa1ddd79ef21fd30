package alpn

import (
	"slices"
	"strings"
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

// What a dialled connection is handed to: the token's own version when it
// was offered; under "moql" (or no WebTransport protocol) moq-lite's
// legacy SETUP when it may choose, else moq-transport draft 14.
func TestANegotiatedTokenSelectsTheFamilyAndVersionThatSpeakIt(t *testing.T) {
	const lite02, lite01, lite05, draft14, draft20 = 0xff0dad02, 0xff0dad01, 0xff0dad05, 0xff00000e, 0xff000014
	all := []uint64{0xff0dad06, lite05, 0xff0dad04, 0xff0dad03, lite02, lite01, 0xff000016, draft20, draft14}
	cases := []struct {
		name    string
		token   string
		offered []uint64
		want    Choice
		ok      bool
	}{
		{"a moq-lite token pins its version", "moq-lite-05", all, Choice{Lite, lite05, "moq-lite-05"}, true},
		{"a draft's token pins the draft", "moqt-20", all, Choice{IETF, draft20, "moqt-20"}, true},
		{"draft 14's own token pins it", "moq-00", all, Choice{IETF, draft14, "moq-00"}, true},
		{"a token not offered selects nothing", "moqt-20", []uint64{lite05}, Choice{}, false},
		{"an unknown token selects nothing", "h3", all, Choice{}, false},
		{"moql goes to moq-lite's legacy SETUP when it may choose", Legacy, all, Choice{Lite, 0, Legacy}, true},
		{"moql goes to draft 14 when only it is offered", Legacy, []uint64{lite05, draft14}, Choice{IETF, draft14, Legacy}, true},
		{"no protocol is moql", "", []uint64{draft14}, Choice{IETF, draft14, Legacy}, true},
		{"moq-lite is preferred under moql whatever the order", Legacy, []uint64{draft14, lite01}, Choice{Lite, 0, Legacy}, true},
		{"moql with nothing it can choose selects nothing", Legacy, []uint64{lite05, draft20}, Choice{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Select(c.token, c.offered)
			if got != c.want || ok != c.ok {
				t.Errorf("Select(%q) = %+v, %v; want %+v, %v", c.token, got, ok, c.want, c.ok)
			}
		})
	}
}

func TestEachTokensFamilyIsItsCodeSpace(t *testing.T) {
	for _, tok := range Table {
		c, ok := Pinned(tok.Name)
		if tok.Code == 0 {
			if ok {
				t.Errorf("%s pins %+v", tok.Name, c)
			}
			continue
		}
		want := Lite
		if strings.HasPrefix(tok.Name, "moqt-") || tok.Name == "moq-00" {
			want = IETF
		}
		if !ok || c.Family != want || c.Code != tok.Code {
			t.Errorf("%s pins %+v, %v; want family %v code %#x", tok.Name, c, ok, want, tok.Code)
		}
	}
	if FamilyOf(0) != Unknown || FamilyOf(0xff0dae01) != Unknown {
		t.Error("a code of neither space has a family")
	}
}

// A version row's family and tokens are this table's: what a list of
// rows offers is each row's token, with Legacy once where the first
// version the legacy SETUP can choose stands.
func TestAVersionRowsFamilyAndTokensComeFromTheTable(t *testing.T) {
	lite02 := Version{Name: "moq-lite-02", Code: 0xff0dad02}
	lite05 := Version{Name: "moq-lite-05", Code: 0xff0dad05}
	d14 := Version{Name: "moq-transport-14", Code: 0xff00000e}
	d20 := Version{Name: "moq-transport-20", Code: 0xff000014}
	for _, tt := range []struct {
		vs   []Version
		want []string
	}{
		{[]Version{lite05, lite02, d20, d14}, []string{"moq-lite-05", Legacy, "moqt-20", "moq-00"}},
		{[]Version{d14, lite05}, []string{"moq-00", Legacy, "moq-lite-05"}},
		{[]Version{lite02}, []string{Legacy}},
		{nil, nil},
	} {
		if got := Tokens(tt.vs); !slices.Equal(got, tt.want) {
			t.Errorf("Tokens(%v) = %q, want %q", tt.vs, got, tt.want)
		}
	}
	if lite02.Family() != Lite || d20.Family() != IETF || !lite02.UnderLegacy() || !d14.UnderLegacy() || lite05.UnderLegacy() {
		t.Error("a row's family or legacy SETUP is not the table's")
	}
	if got := Names([]Version{lite05, d20}); got != "moq-lite-05, moq-transport-20" {
		t.Errorf("Names = %q", got)
	}
	if v, ok := ByCode([]Version{lite05, d20}, 0xff000014); !ok || v != d20 {
		t.Errorf("ByCode = %v, %v", v, ok)
	}
}
