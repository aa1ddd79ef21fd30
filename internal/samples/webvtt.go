package samples

import "fmt"

// WebVTTName is the sample of WebVTT cues: a text rendition, made here
// rather than stored (a cue is a few bytes of text).
const WebVTTName = "webvtt"

// WebVTTCues is how many cues the WebVTT sample holds; cue i starts at i
// seconds, lasts WebVTTCueDuration and says WebVTTCueText(i).
const (
	WebVTTCues        = 5
	WebVTTCueDuration = 800_000 // µs
)

// WebVTTCueText is the text of cue i of the WebVTT sample.
func WebVTTCueText(i int) string {
	return fmt.Sprintf("Cue %d: moq-export demo\nsecond line, ünïcödé", i)
}

// webvttSample returns the WebVTT sample: one frame per cue, each a
// self-contained WEBVTT segment as hang publishes a "vtt" rendition (the
// cue's own times are on the sample's timeline), each frame its own group.
func webvttSample() *Sample {
	s := &Sample{Name: WebVTTName, Kind: "text", Codec: "vtt"}
	for i := range WebVTTCues {
		start := int64(i) * 1_000_000
		// No cue identifiers: the demo loops the sample, and players
		// take a second cue of one identifier for a duplicate.
		payload := fmt.Sprintf("WEBVTT\n\n%s --> %s\n%s\n", vttTime(start), vttTime(start+WebVTTCueDuration), WebVTTCueText(i))
		s.Frames = append(s.Frames, SampleFrame{Timestamp: start, Keyframe: true, Payload: []byte(payload)})
	}
	return s
}

func vttTime(us int64) string {
	ms := us / 1000
	return fmt.Sprintf("%02d:%02d:%02d.%03d", ms/3_600_000, ms/60_000%60, ms/1000%60, ms%1000)
}

// UTF8Name is the sample of plain-text cues (a hang "utf8" text
// rendition): cue i starts at i seconds and shows UTF8CueText(i) until the
// next one; an empty payload (hang's end marker) clears the last at
// UTF8ClearAt. LoadSample knows it; SampleNames leaves it out, so the
// default demo does not publish it.
const UTF8Name = "utf8"

// UTF8ClearAt is when the utf8 sample's last cue is cleared (µs).
const UTF8ClearAt = 4_500_000

// UTF8CueText is the text of cue i of the utf8 sample: plain text with
// characters WebVTT would read as markup.
func UTF8CueText(i int) string {
	return fmt.Sprintf("Line %d: a < b & c > d\nsecond line, ünïcödé", i)
}

func utf8Sample() *Sample {
	s := &Sample{Name: UTF8Name, Kind: "text", Codec: "utf8"}
	for i := range WebVTTCues {
		s.Frames = append(s.Frames, SampleFrame{Timestamp: int64(i) * 1_000_000, Keyframe: true, Payload: []byte(UTF8CueText(i))})
	}
	s.Frames = append(s.Frames, SampleFrame{Timestamp: UTF8ClearAt})
	return s
}

// TTMLName is a sample of TTML (IMSC) cues, a hang "ttml" text rendition,
// which no container here records: LoadSample knows it, SampleNames
// leaves it out.
const TTMLName = "ttml"

func ttmlSample() *Sample {
	s := &Sample{Name: TTMLName, Kind: "text", Codec: "ttml"}
	for i := range WebVTTCues {
		start := int64(i) * 1_000_000
		payload := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><tt xmlns="http://www.w3.org/ns/ttml" xml:lang="en"><body><div><p begin="%s" end="%s">Cue %d</p></div></body></tt>`,
			vttTime(start), vttTime(start+WebVTTCueDuration), i)
		s.Frames = append(s.Frames, SampleFrame{Timestamp: start, Keyframe: true, Payload: []byte(payload)})
	}
	return s
}
