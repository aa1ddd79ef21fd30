package webvtt

import (
	"strings"
	"unicode/utf8"
)

// FromPlain returns plain text (a hang "utf8" cue) as WebVTT cue text: the
// characters WebVTT reads as markup escaped (& < >), a line that would
// end the cue (an empty one) or read as a timing line ("-->") broken up, and
// bytes that are not UTF-8 replaced. Line ends become \n; trailing ones go.
func FromPlain(s string) string {
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "" {
			continue // a blank line ends a WebVTT cue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		for _, r := range line {
			switch r {
			case '&':
				b.WriteString("&amp;")
			case '<':
				b.WriteString("&lt;")
			case '>':
				b.WriteString("&gt;") // so "-->" never appears
			default:
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// Plain returns WebVTT cue text as plain text, for a container whose cues
// are not WebVTT (MP4's tx3g): tags (<b>, <v Name>, <00:01.000>) dropped,
// the character references WebVTT defines (&amp; &lt; &gt; &lrm; &rlm;
// &nbsp;) resolved. An unclosed tag runs to the end.
func Plain(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return b.String()
			}
			i += j + 1
			continue
		case '&':
			matched := false
			for _, ref := range references {
				if strings.HasPrefix(s[i:], ref[0]) {
					b.WriteString(ref[1])
					i += len(ref[0])
					matched = true
					break
				}
			}
			if matched {
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// references are the character references of WebVTT cue text.
var references = [][2]string{
	{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&lrm;", "\u200e"}, {"&rlm;", "\u200f"}, {"&nbsp;", "\u00a0"},
}
