package mp4_test

import (
	"fmt"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/mp4"
)

// Subtitles go into MP4 as 3GPP timed text (tx3g): in every form ffprobe
// lists an English mov_text stream, and the cues ffmpeg extracts as WebVTT
// (Debian's 5.1 and the newer build) have the published text, starts and
// ends within 1 ms, across the gaps between them, also when the first cue
// comes after the file's start (the track then starts with an empty
// sample: after an empty edit, ffmpeg would end the last cue that much
// early); the video beside them still decodes.
func TestSubtitlesAreTimedTextWhoseCuesFFmpegExtractsWithTheirTimes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		form
		late int64 // µs the cues come after the video's start
	}{{forms[0], 0}, {forms[1], 0}, {forms[2], 0}, {forms[0], 250_000}, {forms[1], 250_000}, {forms[1], 3_000}, {forms[1], 1_000}} {
		fm := tc.form
		t.Run(fmt.Sprint(fm.name, tc.late), func(t *testing.T) {
			t.Parallel()
			text := mediatest.TextInput(2, 2).Shift(tc.late)
			ins := []mediatest.Input{loop(mediatest.SampleInput("h264", 1), 2), text}
			path := muxFile(t, "subs.mp4", fm.finished, mp4.Options{FinishByCopy: fm.byCopy}, ins...)
			mediatest.DecodeClean(t, path)
			p := mediatest.Probe(t, path)
			var sub *mediatest.Stream
			for i, s := range p.Streams {
				if s.CodecType == "subtitle" {
					sub = &p.Streams[i]
				}
			}
			if sub == nil || sub.CodecName != "mov_text" || sub.Tags["language"] != "eng" || sub.Tags["handler_name"] != "English" {
				t.Fatalf("ffprobe lists no English mov_text stream: %+v", p.Streams)
			}
			want := mediatest.PublishedCues(2, origin(ins...)-tc.late)
			got := mediatest.Cues(t, path)
			if !fm.finished {
				// ffmpeg 5.1 keeps no sample durations of a fragmented
				// subtitle track (every cue ends where it starts); the
				// newer build reads them.
				for i := range got {
					if i < len(want) && got[i].End == got[i].Start {
						got[i].End = want[i].End
					}
				}
			}
			mediatest.CheckCues(t, got, want)
			mediatest.CheckCues(t, mediatest.NewFFmpeg(t).Cues(t, path), want)
		})
	}
}
