package service_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/internal/testutil/browsertest"
	"github.com/moq-export/moq-export/record"
)

// TestTheStatusPageShowsTheLiveRecordingAndPlaysAFinishedMP4 opens the
// status page in headless Chromium: it lists the recording running, whose
// media time advances without a reload, and the finished MP4 of another
// recording plays in the page's <video> (its currentTime advances).
func TestTheStatusPageShowsTheLiveRecordingAndPlaysAFinishedMP4(t *testing.T) {
	t.Parallel()
	b := browsertest.New(t, browsertest.Options{Flags: []string{"autoplay-policy=no-user-gesture-required"}})
	root := t.TempDir()
	s, base := serve(t, service.Options{Root: root})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// One recording that finishes an MP4, one that goes on.
	short := record.Local(liveDemo(t, "short"))
	r, done := recordAll(t, s, record.Options{Output: mustFiles(t, filepath.Join(root, "{broadcast}.mp4")), Duration: 3 * time.Second}, short, ctx)
	waitFor(t, "the MP4", func() bool { return len(r.Files()) == 1 })
	short.Close()
	if err := <-done; err != nil && !errors.Is(err, record.ErrSourceClosed) {
		t.Fatal(err)
	}
	_, _ = recordAll(t, s, record.Options{Output: mustFiles(t, filepath.Join(root, "{broadcast}.mkv"))}, record.Local(liveDemo(t, "live")), ctx)

	if err := b.Navigate(base + "/"); err != nil {
		t.Fatal(err)
	}
	media := func() float64 {
		var v float64
		if err := b.Eval(`(async () => {
			for (let i = 0; i < 100; i++) {
				const tr = document.querySelector('#live tr[data-broadcast="live"]');
				if (tr && Number(tr.dataset.media) > 0) return Number(tr.dataset.media);
				await new Promise(r => setTimeout(r, 100));
			}
			throw new Error("the live recording is not listed: " + document.body.innerText);
		})()`, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	first := media()
	time.Sleep(2500 * time.Millisecond)
	if second := media(); second < first+1 {
		t.Errorf("the page's media time went from %.2f to %.2f s in 2.5 s: not refreshed", first, second)
	}
	var played struct {
		Src         string  `json:"src"`
		CurrentTime float64 `json:"currentTime"`
		Duration    float64 `json:"duration"`
	}
	if err := b.Eval(`(async () => {
		let v;
		for (let i = 0; i < 100 && !v; i++) {
			v = document.querySelector('#files video');
			if (!v) await new Promise(r => setTimeout(r, 100));
		}
		if (!v) throw new Error("no player: " + document.body.innerText);
		v.muted = true;
		await v.play();
		for (let i = 0; i < 100 && v.currentTime < 1; i++) await new Promise(r => setTimeout(r, 100));
		return {src: v.currentSrc, currentTime: v.currentTime, duration: v.duration};
	})()`, &played); err != nil {
		t.Fatal(err)
	}
	if played.CurrentTime < 1 || played.Duration < 2.5 || filepath.Base(played.Src) != "short.mp4" {
		t.Errorf("the player: %+v; want short.mp4 playing past 1 s of its ~3 s", played)
	}
}
