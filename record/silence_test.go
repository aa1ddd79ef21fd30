package record

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// fakeRecording is a running recording whose counts a test moves.
type fakeRecording struct {
	stats  []export.TrackStats
	state  map[string]export.TrackState
	behind time.Duration
}

func (f *fakeRecording) Behind() time.Duration { return f.behind }

func (f *fakeRecording) TrackStats() []export.TrackStats { return f.stats }

func (f *fakeRecording) TrackState(name string) (export.TrackState, bool) {
	st, ok := f.state[name]
	return st, ok
}

// TestATrackThatStopsAloneIsLoggedWithItsState: a track that receives
// nothing for silentAfter while another track of its recording receives
// frames is logged once as a warning saying what its source track holds
// and where the reader waits, and again when it receives again. A
// recording whose tracks all pause, and a track that ended, are not.
func TestATrackThatStopsAloneIsLoggedWithItsState(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rec := &fakeRecording{
		stats: []export.TrackStats{{Name: "video", Kind: mux.Video}, {Name: "audio", Kind: mux.Audio}, {Name: "text", Kind: mux.Text}},
		state: map[string]export.TrackState{"audio": {
			TrackState: model.TrackState{Groups: 3, Oldest: 10, Newest: 12, Timelines: 1,
				Readers: []model.ReaderState{{Started: true, Cursor: 9, Waiting: true}}},
			Aligning: true,
		}},
	}
	paused := &fakeRecording{stats: []export.TrackStats{{Name: "video", Kind: mux.Video}, {Name: "audio", Kind: mux.Audio}}}
	running := map[watchedRecording]string{rec: "cmaf", paused: "paused"}
	var s silence
	start := time.Unix(1e9, 0)
	for sec := 0; sec <= 12; sec++ {
		rec.stats[0].Received += 30 // the video flows
		if sec < 2 || sec >= 10 {
			rec.stats[1].Received += 47 // the audio: nothing after 1 s until 10 s
		}
		s.check(log, start.Add(time.Duration(sec)*time.Second), running)
		switch got := strings.Count(logs.String(), "level=WARN"); {
		case sec < 1+5 && got != 0:
			t.Fatalf("at %d s, %d warnings before the audio was silent for %v:\n%s", sec, got, silentAfter, logs.String())
		case sec >= 1+5 && got != 1:
			t.Fatalf("at %d s, %d warnings, want 1:\n%s", sec, got, logs.String())
		}
	}
	out := logs.String()
	for _, want := range []string{"broadcast=cmaf", "track=audio", "for=5s", "received=94",
		`source="groups 10-12 (3 held), timeline 2"`, `reader="waiting for group 9 (held back to align with the video)"`,
		"a track that received nothing receives again", "after=9s"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "paused") || strings.Contains(out, "track=text") || strings.Contains(out, "track=video") {
		t.Errorf("a paused recording, the text or the flowing video was logged:\n%s", out)
	}

	// An ended track is not logged.
	logs.Reset()
	rec.state["audio"] = export.TrackState{TrackState: model.TrackState{Ended: true}}
	for sec := 13; sec <= 20; sec++ {
		rec.stats[0].Received += 30
		s.check(log, start.Add(time.Duration(sec)*time.Second), running)
	}
	if logs.Len() != 0 {
		t.Errorf("an ended track was logged:\n%s", logs.String())
	}
}
