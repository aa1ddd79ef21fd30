package export_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
)

// TestAGroupTheReaderSkipsIsAGapInTheStatsAndTheLog: a group the track's
// reader gives up on (it never came while newer ones did, or the track
// dropped it unread past model.MaxLag) is a hole in the file. It was
// counted nowhere but the engine's total: the per-track accounting showed
// no gap, the log said nothing and the recorder's summary read "late 0,
// dropped 0, lost 0" over a GOP of video missing (a 20 s blackhole under
// --record-all on a loaded machine). Each such skip is a gap now, with the
// media time it lost, and a warning.
func TestAGroupTheReaderSkipsIsAGapInTheStatsAndTheLog(t *testing.T) {
	for _, tc := range []struct {
		name string
		// land adds the track's groups after group 0 (at 0 s, read) through
		// add(seq, ts); the export reads when it returns.
		land func(add func(seq uint64, ts int64), audio *model.Track)
		lost time.Duration // 0: whatever MaxLag leaves
	}{
		{"a group that never came before the track ended", func(add func(uint64, int64), audio *model.Track) {
			add(1, 20_000)
			add(3, 60_000) // group 2 never comes
		}, 40 * time.Millisecond},
		{"a group dropped unread past MaxLag", func(add func(uint64, int64), audio *model.Track) {
			// 12 s of groups land while the reader reads nothing: the
			// oldest ones lag the newest by over MaxLag and go.
			for seq := uint64(1); seq <= 24; seq++ {
				add(seq, int64(seq)*500_000)
			}
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			rec := newRecorder()
			bc := model.NewBroadcast("d")
			cat, _ := demo.Catalog([]string{"aac"})
			data, _ := cat.Marshal()
			cg, _ := bc.CreateTrack(catalog.TrackName).AppendGroup()
			cg.WriteFrame(model.Frame{Payload: data})
			audio := bc.CreateTrack("aac")
			e := export.New(bc, rec, export.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			add := func(seq uint64, ts int64) {
				g, err := audio.CreateGroup(seq)
				if err != nil {
					t.Fatal(err)
				}
				g.WriteFrame(model.Frame{Timestamp: ts, Payload: []byte{1}})
				g.Close(nil)
			}
			add(0, 0)
			if err := e.Poll(); err != nil {
				t.Fatal(err)
			}
			tc.land(add, audio)
			bc.Close(nil)
			if err := e.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			st := e.TrackStats()
			if len(st) != 1 {
				t.Fatalf("%d tracks: %+v", len(st), st)
			}
			s := st[0]
			if e.Stats().Skipped != 1 || s.Gaps != 1 || s.Received != int64(len(rec.frames)) {
				t.Fatalf("skipped %d, %+v, %d frames written", e.Stats().Skipped, s, len(rec.frames))
			}
			// The gap counts the hole in what was written.
			var jump time.Duration
			for i := 1; i < len(rec.frames); i++ {
				jump = max(jump, time.Duration(rec.frames[i].Timestamp-rec.frames[i-1].Timestamp)*time.Microsecond)
			}
			if s.LostToGaps != jump || tc.lost > 0 && s.LostToGaps != tc.lost {
				t.Fatalf("the gap lost %v; the frames jump %v (want %v)", s.LostToGaps, jump, tc.lost)
			}
			if !strings.Contains(logs.String(), "groups skipped") {
				t.Fatalf("nothing logged:\n%s", logs.String())
			}
		})
	}
}

// TestAFileWaitsForAGroupThatLandsAfterTheNextOnes: under load a group's
// stream can land a second after the next groups' (its goroutine not run,
// a packet dropped from quic-go's full queue and sent again). A file
// waits for it up to MaxDelay, as for a track that lags: nothing it
// received is lost. The reader gave up on such a group at the Delay
// (500 ms) and the jitter buffer ran the other tracks past it: a GOP of
// video, or a run of audio frames that did come, missing from the file.
func TestAFileWaitsForAGroupThatLandsAfterTheNextOnes(t *testing.T) {
	const maxDelay = 5 * time.Second
	rec := newRecorder()
	bc := model.NewBroadcast("d")
	cat, _ := demo.Catalog([]string{"h264", "aac"})
	data, _ := cat.Marshal()
	cg, _ := bc.CreateTrack(catalog.TrackName).AppendGroup()
	cg.WriteFrame(model.Frame{Payload: data})
	video, audio := bc.CreateTrack("h264"), bc.CreateTrack("aac")
	e := export.New(bc, rec, export.Options{MediaTimeOnly: true, MaxDelay: maxDelay})
	const audioStep, videoStep = 20_000, 33_333
	addAudio := func(seq uint64) {
		g, err := audio.CreateGroup(seq)
		if err != nil {
			t.Fatal(err)
		}
		g.WriteFrame(model.Frame{Timestamp: int64(seq) * audioStep, Payload: []byte{1}})
		g.Close(nil)
	}
	addVideo := func(seq uint64) { // a 1 s GOP
		g, err := video.CreateGroup(seq)
		if err != nil {
			t.Fatal(err)
		}
		for i := range int64(30) {
			g.WriteFrame(model.Frame{Timestamp: int64(seq)*1_000_000 + i*videoStep, Payload: []byte{1}, Sync: model.SyncGroup})
		}
		g.Close(nil)
	}
	poll := func() {
		t.Helper()
		if err := e.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	poll() // the export subscribes to the catalog's tracks
	addVideo(0)
	for seq := range uint64(50) {
		addAudio(seq)
	}
	poll()
	// Audio group 50 (1 s) is late: the next second of both tracks lands
	// first, and more audio after the old 500 ms of waiting.
	addVideo(1)
	for seq := uint64(51); seq < 100; seq++ {
		addAudio(seq)
	}
	poll()
	waitFrom := time.Now()
	time.Sleep(700 * time.Millisecond)
	addAudio(100)
	poll()
	addAudio(50)
	waited := time.Since(waitFrom)
	addVideo(2)
	for seq := uint64(101); seq < 150; seq++ {
		addAudio(seq)
	}
	bc.Close(nil)
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if waited >= maxDelay {
		// The machine stalled past the bound: the wait gave up, counted.
		if e.Stats().Skipped == 0 {
			t.Fatalf("waited %v and nothing was skipped", waited)
		}
		return
	}
	byName := rec.countByName()
	if byName["h264"] != 90 || byName["aac"] != 150 || e.Stats().Skipped != 0 || e.Stats().Dropped != 0 || e.Stats().Late != 0 {
		t.Fatalf("written %v of 90 video and 150 audio frames; stats %+v", byName, e.Stats())
	}
	for i := 1; i < len(rec.frames); i++ {
		if rec.frames[i].Timestamp < rec.frames[i-1].Timestamp {
			t.Fatalf("frame %d at %d us after one at %d us", i, rec.frames[i].Timestamp, rec.frames[i-1].Timestamp)
		}
	}
}
