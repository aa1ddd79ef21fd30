package catalog

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/moq-export/moq-export/model"
)

// catalogBroadcast builds a broadcast whose catalog track holds the given
// groups of frames.
func catalogBroadcast(t *testing.T, name, track string, groups ...[][]byte) *model.Broadcast {
	b := model.NewBroadcast(name)
	tr := b.CreateTrack(track)
	for _, frames := range groups {
		g, err := tr.AppendGroup()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			g.WriteFrame(model.Frame{Payload: f})
		}
		g.Close(nil)
	}
	tr.Close(nil)
	return b
}

func TestWatcherYieldsNewestSnapshotWithPatches(t *testing.T) {
	v1 := []byte(`{"audio":{"renditions":{"a":{"codec":"opus","sampleRate":48000,"numberOfChannels":2}}}}`)
	v2 := []byte(`{"video":{"renditions":{"v":{"codec":"avc1.64001f","container":{"kind":"legacy"}}}}}`)
	patch := []byte(`{"video":{"renditions":{"v2":{"codec":"vp8","container":{"kind":"loc"}}}}}`)
	b := catalogBroadcast(t, "x.hang", TrackName, [][]byte{v1}, [][]byte{v2, patch})
	w, err := Watch(b, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := w.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Audio.Renditions) != 0 || len(c.Video.Renditions) != 2 || c.Video.Renditions["v2"].ContainerKind() != "loc" {
		t.Fatalf("newest snapshot: %+v", c)
	}
	if _, err := w.Next(ctx); err != io.EOF {
		t.Fatalf("after the end: %v", err)
	}
}

func TestWatcherInflatesCompressedCatalog(t *testing.T) {
	var d Deflater
	z, err := d.Frame([]byte(`{"audio":{"renditions":{"a":{"codec":"opus","sampleRate":48000,"numberOfChannels":1}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	b := catalogBroadcast(t, "x", CompressedTrackName, [][]byte{z})
	w, err := Watch(b, WatchOptions{Track: CompressedTrackName})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, err := w.Next(context.Background())
	if err != nil || c.Audio.Renditions["a"].NumberOfChannels != 1 {
		t.Fatalf("%+v %v", c, err)
	}
}

func TestWatcherConvertsMSFForMSFNames(t *testing.T) {
	desc := []byte{1, 2, 3}
	msf := `{"version":"draft-01","tracks":[
		{"name":"v","packaging":"legacy","role":"video","codec":"avc1.640028","width":1280,"height":720,"initRef":"init0"},
		{"name":"a","packaging":"loc","role":"audio","codec":"opus","samplerate":48000,"channelConfig":"2"},
		{"name":"s","packaging":"legacy","role":"subtitle","codec":"wvtt"}],
		"initDataList":[{"id":"init0","type":"inline","data":"` + base64.StdEncoding.EncodeToString(desc) + `"}]}`
	b := catalogBroadcast(t, "live.msf", MSFTrackName, [][]byte{[]byte(msf)})
	w, err := Watch(b, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, err := w.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v := c.Video.Renditions["v"]
	if string(v.Description) != string(desc) || *v.CodedWidth != 1280 || c.Audio.Renditions["a"].ContainerKind() != "loc" || len(c.Renditions()) != 2 {
		t.Fatalf("%+v", c)
	}
}

func TestWatcherSkipsMalformedSnapshot(t *testing.T) {
	good := []byte(`{"video":{"renditions":{"v":{"codec":"vp8"}}}}`)
	b := catalogBroadcast(t, "x", TrackName, [][]byte{good}, [][]byte{[]byte(`{not json`)})
	w, err := Watch(b, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, err := w.Next(context.Background())
	if err != nil || len(c.Video.Renditions) != 1 {
		t.Fatalf("%+v %v", c, err)
	}
}

func FuzzCatalogFrame(f *testing.F) {
	f.Add([]byte(`{"video":{"renditions":{"v":{"codec":"vp8"}}}}`), []byte(`{"video":null}`))
	f.Add([]byte(`{"tracks":[{"name":"a","packaging":"cmaf","role":"video"}]}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, snap, patch []byte) {
		for _, name := range []string{TrackName, MSFTrackName, CompressedTrackName} {
			w := &Watcher{reader: NewReader(name), log: slog.New(slog.DiscardHandler)}
			_ = w.frame(model.Event{Kind: model.EventFrame, Keyframe: true, Frame: model.Frame{Payload: snap}})
			_ = w.frame(model.Event{Kind: model.EventFrame, Frame: model.Frame{Payload: patch}})
		}
	})
}

func TestWatcherPollsWithoutWaitingOnTheCallersReadySet(t *testing.T) {
	b := model.NewBroadcast("x")
	tr := b.CreateTrack(TrackName)
	ready := model.NewReadySet()
	w, err := Watch(b, WatchOptions{Ready: ready})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if c, err := w.Poll(); c != nil || err != nil {
		t.Fatalf("Poll before any snapshot: %v %v", c, err)
	}
	g, _ := tr.AppendGroup()
	g.WriteFrame(model.Frame{Payload: []byte(`{"video":{"renditions":{"v":{"codec":"vp8"}}}}`)})
	g.Close(nil)
	if ready.Empty() {
		t.Fatal("a snapshot did not wake the caller's ready set")
	}
	if c, err := w.Poll(); err != nil || len(c.Video.Renditions) != 1 {
		t.Fatalf("Poll: %+v %v", c, err)
	}
	if c, err := w.Poll(); c != nil || err != nil {
		t.Fatalf("Poll after the snapshot was returned: %v %v", c, err)
	}
	bad := errors.New("publisher gone")
	tr.Close(bad)
	if c, err := w.Poll(); c != nil || !errors.Is(err, bad) {
		t.Fatalf("Poll after the end: %v %v, want %v", c, err, bad)
	}
}

// TestWatcherReadsWhicheverCatalogTheBroadcastCarries: a broadcast whose
// name does not say MSF but that carries only the MSF catalog track (as a
// non-hang publisher over moq-transport does) is read from it, whether
// catalog.json is refused at once or ends in an error before any snapshot;
// and the other way round for a *.msf broadcast with only catalog.json;
// and a broadcast with only MSF draft 00's ".catalog" (MediaMTX).
func TestWatcherReadsWhicheverCatalogTheBroadcastCarries(t *testing.T) {
	msf := []byte(`{"version":"draft-01","tracks":[{"name":"v","packaging":"legacy","role":"video","codec":"avc1.640028","width":1280,"height":720}]}`)
	hang := []byte(`{"video":{"renditions":{"v":{"codec":"avc1.640028","codedWidth":1280,"container":{"kind":"legacy"}}}}}`)
	refused := errors.New("track refused")
	for _, c := range []struct {
		name, broadcast, carried string
		payload                  []byte
		refuseAtOnce             bool
	}{
		{"MSFOnlyRefusedAtOnce", "live", MSFTrackName, msf, true},
		{"MSFOnlyEndedInError", "live", MSFTrackName, msf, false},
		{"HangOnlyUnderAnMSFName", "live.msf", TrackName, hang, false},
		{"MSF00OnlyEndedInError", "live/test", MSF00TrackName, msf, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := catalogBroadcast(t, c.broadcast, c.carried, [][]byte{c.payload})
			if c.refuseAtOnce {
				b.HandleRequests(func(name string) (*model.Track, error) { return nil, refused })
			} else {
				// Every catalog track tried before the carried one ends
				// in an error.
				for _, other := range TracksFor(c.broadcast) {
					if other == c.carried {
						break
					}
					b.CreateTrack(other).Close(refused)
				}
			}
			w, err := Watch(b, WatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			got, err := w.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := got.Video.Renditions["v"]; !ok || v.Codec != "avc1.640028" || *v.CodedWidth != 1280 {
				t.Fatalf("catalog %+v", got)
			}
		})
	}
	// No catalog track: the first one's error is the end.
	b := model.NewBroadcast("live")
	b.CreateTrack(TrackName).Close(refused)
	b.CreateTrack(MSF00TrackName).Close(errors.New("second"))
	b.CreateTrack(MSFTrackName).Close(errors.New("third"))
	w, err := Watch(b, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Next(context.Background()); !errors.Is(err, refused) {
		t.Fatalf("err %v, want the refusal", err)
	}
}
