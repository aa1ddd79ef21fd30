package record_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// TestARecordingThatDroppedEveryFrameAsMalformedEndsWithAnError: a
// broadcast whose every payload is not what its codec says (H.264 with a
// byte before its NAL units, AAC with ADTS headers) writes nothing, and
// the recording ends with a MalformedError, not success.
func TestARecordingThatDroppedEveryFrameAsMalformedEndsWithAnError(t *testing.T) {
	src := model.NewBroadcast("demo")
	if err := demo.Publish(context.Background(), src, demo.Options{Loops: 1, KeepGroups: 1000}); err != nil {
		t.Fatal(err)
	}
	bc := model.NewBroadcast("demo")
	mediatest.CopyTracks(t, src, bc, []string{catalog.TrackName, "h264", "aac"}, func(name string, _ int, f model.Frame) []byte {
		p := f.Payload
		switch name {
		case "h264":
			p = append([]byte{0x06}, p...)
		case "aac":
			l := len(p) + 7
			p = append([]byte{0xff, 0xf1, 0x50, 0x80, byte(l >> 3), byte(l<<5) | 0x1f, 0xfc}, p...)
		}
		return p
	})
	bc.Close(nil)
	out, err := record.Files(filepath.Join(t.TempDir(), "x.mkv"), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.New(record.Options{Output: out})
	if err != nil {
		t.Fatal(err)
	}
	err = rec.Record(context.Background(), record.Local(bc), "demo")
	var me *record.MalformedError
	if !errors.As(err, &me) || !errors.Is(err, record.ErrMalformed) || me.Dropped != 309 {
		t.Fatalf("got %v (%+v), want a MalformedError of 309 frames", err, me)
	}
	var dropped int64
	for _, tr := range rec.Tracks() {
		dropped += tr.DroppedMalformed
	}
	if dropped != 309 {
		t.Errorf("tracks say %d dropped as malformed, want 309: %+v", dropped, rec.Tracks())
	}
}
