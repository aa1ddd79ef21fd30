package service_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/record"
)

// TestMetricsAndTheAPISayHowFarARecordingTrailsLive: a recording whose
// audio is held while a 40 s gap is filled (the live groups after it in
// already) trails live by the gap: moq_export_behind_seconds says so and
// moq_export_recordings_behind counts it, as the API's recording does;
// once the gap is in and written, both say 0.
func TestMetricsAndTheAPISayHowFarARecordingTrailsLive(t *testing.T) {
	t.Parallel()
	const frame = mediatest.AACFrame
	cat, _ := demo.Catalog([]string{"aac"})
	bc, audio, group := mediatest.AudioGroups(t, "held", cat)
	root := t.TempDir()
	s, base := serve(t, service.Options{Root: root})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, done := recordAll(t, s, record.Options{Output: mustFiles(t, filepath.Join(root, "{broadcast}.mkv"))}, record.Local(bc), ctx)
	apiBehind := func() float64 {
		var list struct{ Recordings []service.RecordingJSON }
		call(t, "GET", base+"/api/v1/recordings", nil, &list)
		if len(list.Recordings) != 1 {
			t.Fatalf("recordings %+v, want 1", list)
		}
		return list.Recordings[0].Stats.Behind
	}
	for seq := range uint64(50) {
		group(seq)
	}
	// All 50 written before the hold: the figure below is the gap from the
	// newest of them (seq 49), not from wherever the writing had got to.
	waitFor(t, "the first 50 frames written", func() bool { return r.Stats().Frames >= 50 })
	if fams := scrape(t, base); metric(fams, "moq_export_behind_seconds") > 0.5 || metric(fams, "moq_export_recordings_behind") != 0 {
		t.Fatalf("in steady state: behind %v s, %v recordings behind", metric(fams, "moq_export_behind_seconds"), metric(fams, "moq_export_recordings_behind"))
	}

	audio.Hold() // a reconnect fills the gap of an outage of 1,900 groups
	for seq := uint64(1950); seq < 2000; seq++ {
		group(seq)
	}
	gap := (time.Duration(1999-49) * frame * time.Microsecond).Seconds()
	waitFor(t, "the recording behind", func() bool { return r.Stats().Behind.Seconds() > gap-1 })
	fams := scrape(t, base)
	if b := metric(fams, "moq_export_behind_seconds"); b < gap-1 || b > gap {
		t.Errorf("moq_export_behind_seconds %v while the gap is filled, want %.2f", b, gap)
	}
	if n := metric(fams, "moq_export_recordings_behind"); n != 1 {
		t.Errorf("moq_export_recordings_behind %v, want 1", n)
	}
	if b := apiBehind(); b < gap-1 || b > gap {
		t.Errorf("the API's behind_seconds %v, want %.2f", b, gap)
	}

	for seq := uint64(50); seq < 1950; seq++ {
		group(seq)
	}
	audio.Release()
	waitFor(t, "the recording caught up", func() bool { return r.Stats().Frames >= 1900 && r.Stats().Behind < 500*time.Millisecond })
	if fams := scrape(t, base); metric(fams, "moq_export_behind_seconds") > 0.5 || metric(fams, "moq_export_recordings_behind") != 0 {
		t.Errorf("caught up: behind %v s, %v recordings behind", metric(fams, "moq_export_behind_seconds"), metric(fams, "moq_export_recordings_behind"))
	}
	if b := apiBehind(); b > 0.5 {
		t.Errorf("the API's behind_seconds %v once caught up", b)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
