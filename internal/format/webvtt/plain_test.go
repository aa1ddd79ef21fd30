package webvtt

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPlainTextBecomesWebVTTCueTextAndBack(t *testing.T) {
	for _, tc := range []struct{ plain, vtt, back string }{
		{"Hello", "Hello", "Hello"},
		{"a < b & c > d", "a &lt; b &amp; c &gt; d", "a < b & c > d"},
		{"two\r\nlines\n", "two\nlines", "two\nlines"},
		{"gap\n\n\nafter", "gap\nafter", "gap\nafter"},
		{"00:01.000 --> 00:02.000", "00:01.000 --&gt; 00:02.000", "00:01.000 --> 00:02.000"},
		{"bad \xff byte", "bad \ufffd byte", "bad \ufffd byte"},
		{"ünïcödé ", "ünïcödé", "ünïcödé"},
	} {
		vtt := FromPlain(tc.plain)
		if vtt != tc.vtt {
			t.Errorf("FromPlain(%q) = %q, want %q", tc.plain, vtt, tc.vtt)
		}
		if back := Plain(vtt); back != tc.back {
			t.Errorf("Plain(%q) = %q, want %q", vtt, back, tc.back)
		}
	}
}

func TestPlainDropsTagsAndResolvesReferences(t *testing.T) {
	for in, want := range map[string]string{
		"<v Roger>Hi <b>there</b></v>": "Hi there",
		"<00:00:01.000>karaoke":        "karaoke",
		"a&nbsp;b &unknown; c":         "a\u00a0b &unknown; c",
		"open <b":                      "open ",
	} {
		if got := Plain(in); got != want {
			t.Errorf("Plain(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzFromPlain(f *testing.F) {
	for _, s := range []string{"Hello", "a < b", "x\r\n\r\ny", "-->", "\xff", "<b>&amp;</b>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vtt := FromPlain(s)
		if strings.Contains(vtt, "-->") || strings.Contains(vtt, "\n\n") || strings.ContainsAny(vtt, "<\r") || !utf8.ValidString(vtt) {
			t.Fatalf("FromPlain(%q) = %q: not one WebVTT cue's text", s, vtt)
		}
		// The cue parses back as one cue with that text.
		cues, err := Parse([]byte("WEBVTT\n\n00:00.000 --> 00:01.000\n" + vtt + "\n"))
		if vtt != "" && (err != nil || len(cues) != 1 || cues[0].Text != vtt) {
			t.Fatalf("FromPlain(%q) = %q parses as %+v, %v", s, vtt, cues, err)
		}
		_ = Plain(s) // any input: no panic
	})
}
