package record

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// TestARecordingThatFallsBehindLiveIsLoggedAndAgainWhenItCaughtUp: a
// recording that trails live by more than 2 s is logged once as a warning
// with the figure, not again while it stays behind (even at 1.5 s, over
// the 1 s it must come under), and at info once it caught up, with how
// long it was behind and its worst figure. One that trails by less is not
// logged.
func TestARecordingThatFallsBehindLiveIsLoggedAndAgainWhenItCaughtUp(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rec, near := &fakeRecording{}, &fakeRecording{}
	running := map[watchedRecording]string{rec: "ietf/loc", near: "lite/cmaf"}
	var b behind
	start := time.Unix(1e9, 0)
	// One look a second: the recovery of a 37 s outage.
	figures := []float64{0.3, 0.4, 2.6, 37.2, 30, 20, 10, 1.5, 1.2, 0.4, 0.3, 2.1}
	for sec, f := range figures {
		rec.behind = time.Duration(f * float64(time.Second))
		near.behind = 1900 * time.Millisecond // near the threshold, never over it
		b.check(log, start.Add(time.Duration(sec)*time.Second), running)
		warns, infos := strings.Count(logs.String(), "level=WARN"), strings.Count(logs.String(), "level=INFO")
		switch {
		case sec < 2 && warns+infos != 0:
			t.Fatalf("at %d s, logged at %.1f s behind:\n%s", sec, f, logs.String())
		case sec >= 2 && sec < 9 && (warns != 1 || infos != 0):
			t.Fatalf("at %d s (%.1f s behind), %d warnings and %d infos, want 1 and 0:\n%s", sec, f, warns, infos, logs.String())
		case sec >= 9 && sec < 11 && (warns != 1 || infos != 1):
			t.Fatalf("at %d s (%.1f s behind), %d warnings and %d infos, want 1 and 1:\n%s", sec, f, warns, infos, logs.String())
		}
	}
	out := logs.String()
	for _, want := range []string{
		`level=WARN msg="a recording falls behind live: media it received is not written yet, and a kill would lose it" broadcast=ietf/loc behind=2.6s`,
		`level=INFO msg="a recording caught up with live" broadcast=ietf/loc after=7s worst=37.2s behind=400ms`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "falls behind") != 2 || strings.Contains(out, "lite/cmaf") {
		t.Errorf("want a second spell from the last look, and nothing of the recording under 2 s:\n%s", out)
	}

	// A recording that ended is forgotten: its spell does not outlive it.
	delete(running, rec)
	b.check(log, start.Add(20*time.Second), running)
	if len(b.since) != 0 {
		t.Errorf("%d spells kept for recordings that ended", len(b.since))
	}
}

// lockedLog is a log a recording writes while a test reads it.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestARecordingHeldBehindAGapFillSaysHowFarItTrailsLive: a recording
// into a file whose audio is held while a 40 s gap is filled (the live
// groups after the gap already in) says, in its Stats and its Recorder's,
// that it trails live by the gap, and logs it; once the gap is in and
// written it says it caught up. So does one started alone (Start, as the
// service's API does), which no one watched before.
func TestARecordingHeldBehindAGapFillSaysHowFarItTrailsLive(t *testing.T) {
	defer func(every time.Duration) { silenceEvery = every }(silenceEvery)
	silenceEvery = 20 * time.Millisecond
	for _, started := range []bool{false, true} {
		name := "recorded (Record)"
		if started {
			name = "started alone (Start)"
		}
		t.Run(name, func(t *testing.T) { recordHeldBehind(t, started) })
	}
}

func recordHeldBehind(t *testing.T, alone bool) {
	const frame = mediatest.AACFrame
	cat, _ := demo.Catalog([]string{"aac"})
	bc, audio, group := mediatest.AudioGroups(t, "ietf/loc", cat)
	var logs lockedLog
	out, err := Files(filepath.Join(t.TempDir(), "{broadcast}.mkv"), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan *Recording, 1)
	r, err := New(Options{Output: out, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		OnRecording: func(rec *Recording) { started <- rec }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recorded := make(chan error, 1)
	var rec *Recording
	if alone {
		rec = r.Start(ctx, Local(bc), "ietf/loc")
		<-started
		go func() {
			<-rec.Done()
			recorded <- rec.Err()
		}()
	} else {
		go func() { recorded <- r.Record(ctx, Local(bc), "ietf/loc") }()
		rec = <-started
	}
	wait := func(what string, ok func(Stats) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(rec.Stats()); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: stats %+v\n%s", what, rec.Stats(), logs.String())
			}
		}
	}
	for seq := range uint64(50) {
		group(seq)
	}
	// All 50 written before the hold: the figure below is the gap from the
	// newest of them (seq 49), not from wherever the writing had got to.
	wait("the first 50 frames written", func(s Stats) bool { return s.Frames >= 50 })
	steady := rec.Stats().Behind

	audio.Hold() // a reconnect fills the gap of an outage of 1,900 groups
	for seq := uint64(1950); seq < 2000; seq++ {
		group(seq)
	}
	gap := time.Duration(1999-49) * frame * time.Microsecond
	wait("behind by the gap", func(s Stats) bool { return s.Behind > gap-time.Second && s.RecordingsBehind == 1 })
	held := rec.Stats().Behind
	if s := r.Stats(); s.Behind < gap-time.Second || s.Behind > gap || s.RecordingsBehind != 1 {
		t.Fatalf("the recorder's stats: behind %v (%d recordings), want %v (1)", s.Behind, s.RecordingsBehind, gap)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "falls behind live"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line said the recording fell behind:\n%s", logs.String())
		}
	}
	for seq := uint64(50); seq < 1950; seq++ {
		group(seq)
	}
	audio.Release()
	wait("caught up", func(s Stats) bool { return s.Behind < 500*time.Millisecond && s.Frames >= 1900 })
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "caught up with live"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line said the recording caught up:\n%s", logs.String())
		}
	}
	t.Logf("behind %v in steady state, %v while the gap was filled, %v after", steady, held, rec.Stats().Behind)
	if !strings.Contains(logs.String(), "broadcast=ietf/loc") {
		t.Errorf("the lines do not name the broadcast:\n%s", logs.String())
	}
	rec.Stop()
	if err := <-recorded; err != nil {
		t.Fatal(err)
	}
	if s := rec.Stats(); s.Behind != 0 || s.RecordingsBehind != 0 {
		t.Errorf("an ended recording says behind %v (%d)", s.Behind, s.RecordingsBehind)
	}
}
