package webvtt

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Cue is one WebVTT cue. Start and End are microseconds on the timeline of
// the text they were read from.
type Cue struct {
	ID       string
	Start    int64
	End      int64
	Settings string
	Text     string
}

// Errors of Parse, wrapped with the detail.
var (
	// ErrHeader: the text does not start with the WEBVTT signature.
	ErrHeader = errors.New("webvtt: no WEBVTT header")
	// ErrTiming: a cue timing line does not parse, or ends before it
	// starts.
	ErrTiming = errors.New("webvtt: bad cue timing")
)

// maxCues bounds the cues one segment may hold: a hang frame is one cue or
// a few; more is not a subtitle.
const maxCues = 1024

// Parse returns the cues of a WebVTT text (a whole file or a hang frame's
// segment), in their order. NOTE, STYLE and REGION blocks are skipped. A
// text without the signature wraps ErrHeader, a bad timing ErrTiming.
func Parse(b []byte) ([]Cue, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	lines := splitLines(string(b))
	if len(lines) == 0 || !isSignature(lines[0]) {
		return nil, ErrHeader
	}
	// The header runs to the first blank line.
	i := 1
	for i < len(lines) && lines[i] != "" {
		i++
	}
	var cues []Cue
	for i < len(lines) {
		for i < len(lines) && lines[i] == "" {
			i++
		}
		if i == len(lines) {
			break
		}
		start := i
		for i < len(lines) && lines[i] != "" {
			i++
		}
		block := lines[start:i]
		c, ok, err := parseBlock(block)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if len(cues) == maxCues {
			return nil, fmt.Errorf("webvtt: more than %d cues", maxCues)
		}
		cues = append(cues, c)
	}
	return cues, nil
}

func isSignature(l string) bool {
	rest, ok := strings.CutPrefix(l, "WEBVTT")
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t')
}

// splitLines splits on CRLF, LF or CR.
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// parseBlock reads one block: a cue (ok) or a block to skip.
func parseBlock(block []string) (Cue, bool, error) {
	var c Cue
	timing := 0
	if !strings.Contains(block[0], "-->") {
		first := block[0]
		if first == "NOTE" || strings.HasPrefix(first, "NOTE ") || strings.HasPrefix(first, "NOTE\t") ||
			first == "STYLE" || first == "REGION" {
			return c, false, nil
		}
		if len(block) < 2 || !strings.Contains(block[1], "-->") {
			return c, false, fmt.Errorf("%w: block %q has no timing line", ErrTiming, first)
		}
		c.ID, timing = first, 1
	}
	start, rest, _ := strings.Cut(block[timing], "-->")
	var err error
	if c.Start, err = ParseTime(strings.TrimSpace(start)); err != nil {
		return c, false, err
	}
	rest = strings.TrimLeft(rest, " \t")
	end, settings, _ := strings.Cut(rest, " ")
	if e, s, ok := strings.Cut(end, "\t"); ok {
		end, settings = e, s+" "+settings
	}
	if c.End, err = ParseTime(end); err != nil {
		return c, false, err
	}
	if c.End < c.Start {
		return c, false, fmt.Errorf("%w: cue ends (%s) before it starts (%s)", ErrTiming, end, strings.TrimSpace(start))
	}
	c.Settings = strings.TrimSpace(settings)
	c.Text = strings.Join(block[timing+1:], "\n")
	return c, true, nil
}

// ParseTime reads a WebVTT timestamp, [hh:]mm:ss.ttt, into microseconds.
func ParseTime(s string) (int64, error) {
	bad := func() (int64, error) { return 0, fmt.Errorf("%w: timestamp %q", ErrTiming, s) }
	hms, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != 3 || !digits(frac) {
		return bad()
	}
	parts := strings.Split(hms, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return bad()
	}
	var h int64
	if len(parts) == 3 {
		if len(parts[0]) < 2 || len(parts[0]) > 9 || !digits(parts[0]) {
			return bad()
		}
		h, _ = strconv.ParseInt(parts[0], 10, 64)
		parts = parts[1:]
	}
	if len(parts[0]) != 2 || len(parts[1]) != 2 || !digits(parts[0]) || !digits(parts[1]) {
		return bad()
	}
	m, _ := strconv.ParseInt(parts[0], 10, 64)
	sec, _ := strconv.ParseInt(parts[1], 10, 64)
	ms, _ := strconv.ParseInt(frac, 10, 64)
	if m > 59 || sec > 59 {
		return bad()
	}
	return ((h*3600+m*60+sec)*1000 + ms) * 1000, nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// FormatTime writes microseconds as a WebVTT timestamp, hh:mm:ss.ttt,
// rounded to the millisecond; negative times are written as 0.
func FormatTime(us int64) string {
	return string(AppendTime(nil, us))
}

// AppendTime appends FormatTime(us) to b.
func AppendTime(b []byte, us int64) []byte {
	ms := max((us+500)/1000, 0)
	h, ms := ms/3_600_000, ms%3_600_000
	m, ms := ms/60_000, ms%60_000
	s, ms := ms/1000, ms%1000
	if h < 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, h, 10)
	b = append(b, ':', byte('0'+m/10), byte('0'+m%10), ':', byte('0'+s/10), byte('0'+s%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return b
}

// AppendBlock appends c in WebM's Matroska block layout (the payload of a
// D_WEBVTT block, and the mux.Frame payload of a WebVTT track): its
// identifier, a newline, its settings, a newline, its text.
func (c Cue) AppendBlock(b []byte) []byte {
	b = append(b, c.ID...)
	b = append(b, '\n')
	b = append(b, c.Settings...)
	b = append(b, '\n')
	return append(b, c.Text...)
}

// ParseBlock reads a cue in WebM's block layout (AppendBlock); Start and
// End are left zero. A payload without the two newlines is all text.
func ParseBlock(p []byte) Cue {
	id, rest, ok := bytes.Cut(p, []byte{'\n'})
	if !ok {
		return Cue{Text: string(p)}
	}
	settings, text, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return Cue{Text: string(p)}
	}
	return Cue{ID: string(id), Settings: string(settings), Text: string(text)}
}

// AppendCue appends c as a cue block of a WebVTT file, times shifted by
// offset microseconds, followed by a blank line. Blank lines and "-->" in
// the text, which would end or break the cue, are dropped.
func (c Cue) AppendCue(b []byte, offset int64) []byte {
	if id := oneLine(c.ID); id != "" && !strings.Contains(id, "-->") {
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = AppendTime(b, c.Start+offset)
	b = append(b, " --> "...)
	b = AppendTime(b, c.End+offset)
	if s := oneLine(c.Settings); s != "" {
		b = append(b, ' ')
		b = append(b, s...)
	}
	b = append(b, '\n')
	for _, l := range splitLines(c.Text) {
		if strings.TrimSpace(l) == "" || strings.Contains(l, "-->") {
			continue
		}
		b = append(b, l...)
		b = append(b, '\n')
	}
	return append(b, '\n')
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\r", " ")
	return strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
}
