package record_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// TestTheREADMESnippetRecordsAFileFFprobeReads runs the code of
// Example_recordFile (the README's library section) and checks the file
// with ffprobe and ffmpeg: 2 s of H.264 and AAC, finalized.
func TestTheREADMESnippetRecordsAFileFFprobeReads(t *testing.T) {
	url, pin, stop := demoRelay("room/alice")
	defer stop()
	path := filepath.Join(t.TempDir(), "alice.mkv")
	files, err := recordFile(context.Background(), url, pin, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Path != path {
		t.Fatalf("files %+v, want %s", files, path)
	}
	p := mediatest.Probe(t, path)
	if d, err := p.Format.Seconds(); err != nil || d < 1.9 || d > 2.1 {
		t.Errorf("duration %v (%v), want 2s: the file is not finalized", d, err)
	}
	var video, audio int
	for _, pk := range p.Packets {
		switch pk.CodecType {
		case "video":
			video++
		case "audio":
			audio++
		}
	}
	// 30 fps video, 1024-sample AAC at 48 kHz; the live join starts at
	// the latest keyframe, within a GOP.
	if video < 50 || video > 61 || audio < 80 || audio > 95 || int64(video+audio) != files[0].Frames {
		t.Errorf("%d video and %d audio packets, FileInfo says %d frames; want 2 s of each", video, audio, files[0].Frames)
	}
	mediatest.DecodeClean(t, path)
}

// TestProgressIsReportedWhileRecording: Options.Progress sees the frames
// grow, and the last call has the final counts.
func TestProgressIsReportedWhileRecording(t *testing.T) {
	bc := model.NewBroadcast("demo")
	go demo.Publish(context.Background(), bc, demo.Options{Realtime: true, Loops: 1})
	out, err := record.Files(filepath.Join(t.TempDir(), "x.ts"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		calls []record.Stats
	)
	rec, err := record.New(record.Options{Output: out, Duration: 1500 * time.Millisecond, ProgressInterval: 100 * time.Millisecond,
		Progress: func(s record.Stats) { mu.Lock(); calls = append(calls, s); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Record(context.Background(), record.Local(bc), "demo"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) < 3 {
		t.Fatalf("%d progress calls in 1.5 s at 100 ms", len(calls))
	}
	for i := 1; i < len(calls); i++ {
		if calls[i].Frames < calls[i-1].Frames {
			t.Errorf("frames went back: %d then %d", calls[i-1].Frames, calls[i].Frames)
		}
	}
	last, final := calls[len(calls)-1], rec.Stats()
	if last != final || final.Frames == 0 || final.Recorded != 1 || final.Recordings != 0 {
		t.Errorf("last progress %+v, final stats %+v", last, final)
	}
	if f := rec.Files(); len(f) != 1 || f[0].Frames != final.Frames {
		t.Errorf("files %+v, stats %+v", f, final)
	}
}

// TestOptionsAreCheckedBeforeRecording: what cannot work is an error from
// New or Run, not a recording that waits or writes nothing.
func TestOptionsAreCheckedBeforeRecording(t *testing.T) {
	seg, _ := record.Files("out.mkv", record.FileOptions{})
	noext, _ := record.Files("out", record.FileOptions{})
	for name, o := range map[string]record.Options{
		"no output":           {},
		"no format":           {Output: noext},
		"segments, one name":  {Output: seg, Segment: time.Second},
		"segments, to stream": {Output: record.Stream(nil), Segment: time.Second},
	} {
		if _, err := record.New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	out, _ := record.Files("out.mkv", record.FileOptions{})
	if _, err := record.Run(context.Background(), record.Options{Output: out, URL: "https://relay.example/"}); err == nil {
		t.Error("Run without a Broadcast or RecordAll: accepted")
	}
}
