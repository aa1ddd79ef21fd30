package hls_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/hls"
)

// TestChaptersBecomeDateRangesOnTheProgramDateTimeClock: a chapter asked
// at 2 s and one at 7 s of a 12 s package are EXT-X-DATERANGE tags of
// every media playlist, at the wall clock EXT-X-PROGRAM-DATE-TIME gives
// those media times, each lasting until the next or the end; the
// playlists still parse (gohlslib, which a restart reads them with; and
// ffmpeg).
func TestChaptersBecomeDateRangesOnTheProgramDateTimeClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	st := newStore(t)
	w := hls.NewWriter(hls.Options{Store: st, Start: start})
	ins := []mediatest.Input{looped("h264", 0, 3), looped("aac", 1, 3)}
	for _, tr := range mediatest.Tracks(ins...) {
		must(t, w.AddTrack(tr))
	}
	must(t, w.Chapter(0, "Opening")) // before the first frame: at the first frame
	asked := map[int64]string{2_000_000: "Intro", 7_000_000: "Q&A \"live\""}
	frames := mediatest.Interleave(ins...)
	first := frames[0].Timestamp
	at := map[string]int64{} // where each chapter was asked: the next frame's time
	for _, f := range frames {
		for when, name := range asked {
			if f.Timestamp-first >= when {
				must(t, w.Chapter(f.Timestamp, name))
				at[name] = f.Timestamp - first
				delete(asked, when)
			}
		}
		must(t, w.WriteFrame(f))
	}
	date := func(us int64) string {
		return start.Add(time.Duration(us) * time.Microsecond).Format("2006-01-02T15:04:05.000Z07:00")
	}
	must(t, w.Close())
	for _, name := range []string{"v0.m3u8", "a0.m3u8"} {
		b, err := os.ReadFile(st.path(name))
		must(t, err)
		var ranges []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "#EXT-X-DATERANGE:") {
				ranges = append(ranges, l)
			}
		}
		intro, qa := at["Intro"], at["Q&A \"live\""]
		want := []string{
			fmt.Sprintf(`#EXT-X-DATERANGE:ID="chapter-1",CLASS="org.moq-export.chapter",START-DATE="%s",DURATION=%.3f,X-TITLE="Opening"`, date(0), float64(intro)/1e6),
			fmt.Sprintf(`#EXT-X-DATERANGE:ID="chapter-2",CLASS="org.moq-export.chapter",START-DATE="%s",DURATION=%.3f,X-TITLE="Intro"`, date(intro), float64(qa-intro)/1e6),
			fmt.Sprintf(`#EXT-X-DATERANGE:ID="chapter-3",CLASS="org.moq-export.chapter",START-DATE="%s",DURATION=`, date(qa)),
		}
		if len(ranges) != 3 || ranges[0] != want[0] || ranges[1] != want[1] || !strings.HasPrefix(ranges[2], want[2]) || !strings.HasSuffix(ranges[2], `X-TITLE="Q&A _live_"`) {
			t.Fatalf("%s date ranges:\n%s\nwant\n%s", name, strings.Join(ranges, "\n"), strings.Join(want, "\n"))
		}
		var m playlist.Media
		if err := m.Unmarshal(b); err != nil || len(m.Segments) == 0 {
			t.Fatalf("%s no longer parses: %v", name, err)
		}
	}
	mediatest.DecodeClean(t, st.path("index.m3u8"))
}

// TestAudioLanguageAndLabelNameTheAudioRenditions: the catalog's lang and
// label of an audio rendition are the LANGUAGE and NAME of its EXT-X-MEDIA.
func TestAudioLanguageAndLabelNameTheAudioRenditions(t *testing.T) {
	t.Parallel()
	de := looped("aac", 1, 1)
	de.Track.Language, de.Track.Label = "de", "Deutsch"
	st, _ := record(t, hls.Options{}, looped("h264", 0, 1), de)
	b, err := os.ReadFile(st.path("index.m3u8"))
	must(t, err)
	if !strings.Contains(string(b), `#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio-mp4a-40-2",LANGUAGE="de",NAME="Deutsch",`) {
		t.Fatalf("no LANGUAGE and NAME on the audio rendition:\n%s", b)
	}
}

// TestProgramDateTimeFollowsThePublishersClock: with Options.Clock (a
// catalog's root clock) EXT-X-PROGRAM-DATE-TIME is the publisher's wall
// time of the first frame's media time, not the recorder's.
func TestProgramDateTimeFollowsThePublishersClock(t *testing.T) {
	t.Parallel()
	zero := time.Date(2026, 10, 1, 8, 0, 0, 0, time.UTC) // wall time of media time 0
	ins := []mediatest.Input{looped("h264", 0, 1).Shift(90_000_000), looped("aac", 1, 1).Shift(90_000_000)}
	st, _ := record(t, hls.Options{Start: time.Unix(0, 0), Clock: func(ts int64) time.Time { return zero.Add(time.Duration(ts) * time.Microsecond) }}, ins...)
	b, err := os.ReadFile(st.path("v0.m3u8"))
	must(t, err)
	first := mediatest.Interleave(ins...)[0].Timestamp
	want := zero.Add(time.Duration(first) * time.Microsecond)
	var m playlist.Media
	must(t, m.Unmarshal(b))
	if got := m.Segments[0].DateTime; got == nil || !got.Equal(want) {
		t.Fatalf("EXT-X-PROGRAM-DATE-TIME %v, want %v (the publisher's clock at the first frame)", got, want)
	}
}
