package webvtt

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseReadsTheCuesOfASegment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want []Cue
		err  error
	}{
		{"one cue", "WEBVTT\n\n00:00:01.000 --> 00:00:02.500\nHello\n", []Cue{{Start: 1_000_000, End: 2_500_000, Text: "Hello"}}, nil},
		{"an identifier, settings and two lines, CRLF",
			"\xef\xbb\xbfWEBVTT - demo\r\nKind: captions\r\n\r\nc7\r\n01:02:03.004 --> 01:02:04.000 align:start line:0\r\nA\r\n<b>B</b>\r\n",
			[]Cue{{ID: "c7", Start: 3_723_004_000, End: 3_724_000_000, Settings: "align:start line:0", Text: "A\n<b>B</b>"}}, nil},
		{"notes, style and region skipped, hours optional",
			"WEBVTT\n\nNOTE a note\nmore\n\nSTYLE\n::cue { color: red }\n\n00:01.000 --> 00:02.000\nx\n\n00:03.000 --> 00:04.000\ny",
			[]Cue{{Start: 1_000_000, End: 2_000_000, Text: "x"}, {Start: 3_000_000, End: 4_000_000, Text: "y"}}, nil},
		{"a header only", "WEBVTT\n", nil, nil},
		{"no signature", "00:00:01.000 --> 00:00:02.000\nx", nil, ErrHeader},
		{"WEBVTTX is no signature", "WEBVTTX\n", nil, ErrHeader},
		{"a timing without milliseconds", "WEBVTT\n\n00:00:01 --> 00:00:02.000\nx", nil, ErrTiming},
		{"a cue that ends before it starts", "WEBVTT\n\n00:00:03.000 --> 00:00:02.000\nx", nil, ErrTiming},
		{"minutes past 59", "WEBVTT\n\n00:60.000 --> 01:00:02.000\nx", nil, ErrTiming},
		{"an identifier without a timing", "WEBVTT\n\nid only\n", nil, ErrTiming},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("cues = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestACueSurvivesTheBlockLayoutAndAFile(t *testing.T) {
	t.Parallel()
	c := Cue{ID: "7", Start: 61_234_000, End: 62_000_000, Settings: "align:end", Text: "two\nlines"}
	b := ParseBlock(c.AppendBlock(nil))
	if want := (Cue{ID: "7", Settings: "align:end", Text: "two\nlines"}); b != want {
		t.Fatalf("block round trip = %+v, want %+v", b, want)
	}
	file := c.AppendCue([]byte("WEBVTT\n\n"), 1_000_000)
	if want := "WEBVTT\n\n7\n00:01:02.234 --> 00:01:03.000 align:end\ntwo\nlines\n\n"; string(file) != want {
		t.Fatalf("file = %q, want %q", file, want)
	}
	got, err := Parse(file)
	if err != nil || len(got) != 1 || got[0].Start != 62_234_000 || got[0].Text != c.Text {
		t.Fatalf("file reads back as %+v, %v", got, err)
	}
}

func TestATextWithoutNewlinesIsAllText(t *testing.T) {
	t.Parallel()
	if got := ParseBlock([]byte("plain")); got.Text != "plain" || got.ID != "" {
		t.Fatalf("ParseBlock(plain) = %+v", got)
	}
}

func TestFormatTimeRoundsToTheMillisecond(t *testing.T) {
	t.Parallel()
	for us, want := range map[int64]string{0: "00:00:00.000", 1_499: "00:00:00.001", -5: "00:00:00.000", 3_723_004_600: "01:02:03.005", 360_000_000_000: "100:00:00.000"} {
		if got := FormatTime(us); got != want {
			t.Errorf("FormatTime(%d) = %s, want %s", us, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("WEBVTT\n\n00:00:01.000 --> 00:00:02.500 align:start\nHello\n"))
	f.Add([]byte("WEBVTT\r\n\r\nid\r\n01:00:00.000 --> 01:00:01.000\r\nx\r\n\r\nNOTE n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cues, err := Parse(b)
		if err != nil {
			return
		}
		for _, c := range cues {
			if c.End < c.Start || c.Start < 0 {
				t.Fatalf("cue %+v", c)
			}
			// What a file writes back reads back with the same times.
			again, err := Parse(c.AppendCue([]byte("WEBVTT\n\n"), 0))
			if err != nil || len(again) != 1 || again[0].Start != c.Start || again[0].End != c.End {
				t.Fatalf("cue %+v written back reads %+v, %v", c, again, err)
			}
		}
	})
}
