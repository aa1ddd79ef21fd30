package testmedia

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
