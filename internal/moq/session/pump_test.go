package session

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/model"
)

func legacyObject(ts int64, payload string) hang.Object {
	return hang.Object{Payload: hang.AppendLegacy(nil, ts, []byte(payload)), Timescale: 1_000_000}
}

func newPump(t *testing.T, log *slog.Logger) (*Pump, *model.Group) {
	t.Helper()
	tr, err := hang.NewTrack(hang.Legacy, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.NewTrack("video").CreateGroup(7)
	if err != nil {
		t.Fatal(err)
	}
	p := &Pump{Dec: tr.Decoder(), Group: g, Log: log, Track: "video", Seq: 7}
	t.Cleanup(p.Dec.Close)
	return p, g
}

func TestThePumpWritesTheFramesItsObjectsCompleteButNotThoseTheGroupHas(t *testing.T) {
	p, g := newPump(t, slog.New(slog.DiscardHandler))
	p.Skip = 1 // a cut group that has its first frame already
	for i, payload := range []string{"a", "b", "c"} {
		if err := p.Feed(legacyObject(int64(i)*1000, payload)); err != nil {
			t.Fatal(err)
		}
	}
	g.Close(nil)
	frames, finished, err := g.Frames(0)
	if err != nil || !finished {
		t.Fatalf("frames: finished %v, %v", finished, err)
	}
	var got []string
	for _, f := range frames {
		got = append(got, string(f.Payload))
	}
	if strings.Join(got, ",") != "b,c" || frames[0].Timestamp != 1000 {
		t.Fatalf("wrote %q (first at %d), want b,c from 1000", got, frames[0].Timestamp)
	}
}

func TestThePumpSaysWhenTheStreamIsBadOrTheGroupClosed(t *testing.T) {
	p, g := newPump(t, slog.New(slog.DiscardHandler))
	if err := p.Feed(hang.Object{Payload: []byte{0x80}}); !errors.Is(err, hang.ErrMalformed) {
		t.Fatalf("a truncated legacy timestamp: %v, want hang.ErrMalformed", err)
	}
	g.Close(nil)
	if err := p.Feed(legacyObject(0, "late")); !errors.Is(err, ErrGroupClosed) {
		t.Fatalf("a frame after the group closed: %v, want ErrGroupClosed", err)
	}
}

func TestCollectTakesEveryFrameOfAFetchedGroupOrAnError(t *testing.T) {
	tr, _ := hang.NewTrack(hang.Legacy, nil)
	dec := tr.Decoder()
	defer dec.Close()
	var frames []model.Frame
	var err error
	for i := range 3 {
		if frames, err = Collect(&dec, legacyObject(int64(i), "x"), frames); err != nil {
			t.Fatal(err)
		}
	}
	if len(frames) != 3 {
		t.Fatalf("%d frames, want 3", len(frames))
	}
	if _, err := Collect(&dec, hang.Object{Payload: []byte{0x80}}, frames); !errors.Is(err, hang.ErrMalformed) {
		t.Fatalf("%v, want hang.ErrMalformed", err)
	}
}
