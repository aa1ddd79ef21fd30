package archive_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/archivetest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// got is one frame as a reader of a model broadcast sees it.
type got struct {
	ts    int64
	key   bool
	group uint64
	data  []byte
}

// collect reads every rendition the broadcast's first catalog lists until
// each ends, as a recorder would.
func collect(ctx context.Context, t testing.TB, b *model.Broadcast) map[string][]got {
	t.Helper()
	w, err := catalog.Watch(b, catalog.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := w.Next(ctx)
	w.Close()
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	type result struct {
		name   string
		frames []got
		err    error
	}
	ch := make(chan result)
	rs := cat.Renditions()
	for _, r := range rs {
		tr, err := b.Track(r.Name)
		if err != nil {
			t.Fatal(err)
		}
		c := tr.Subscribe(time.Minute)
		ready := model.NewReadySet()
		c.Watch(ready)
		go func() {
			defer c.Close()
			var out []got
			var taken []*model.Consumer
			for {
				taken = ready.Take(taken[:0])
				ev, ok := c.Next()
				if !ok {
					select {
					case <-ready.Wakeup():
						continue
					case <-ctx.Done():
						ch <- result{r.Name, out, ctx.Err()}
						return
					}
				}
				switch ev.Kind {
				case model.EventFrame:
					out = append(out, got{ev.Frame.Timestamp, ev.Keyframe, ev.Group, ev.Frame.Payload})
				case model.EventEnd:
					ch <- result{r.Name, out, ev.Err}
					return
				}
			}
		}()
	}
	b.Selected()
	out := map[string][]got{}
	for range rs {
		res := <-ch
		if res.err != nil {
			t.Errorf("track %s ended with %v", res.name, res.err)
		}
		out[res.name] = res.frames
	}
	return out
}

// compare checks that two readings hold the same frames: count, bytes,
// timestamps, keyframes.
func compare(t testing.TB, what string, want, have map[string][]got) {
	t.Helper()
	if len(want) != len(have) {
		t.Errorf("%s: %d tracks, want %d", what, len(have), len(want))
	}
	for name, w := range want {
		h := have[name]
		if len(h) != len(w) {
			t.Errorf("%s: track %s: %d frames, want %d", what, name, len(h), len(w))
			continue
		}
		for i := range w {
			if h[i].ts != w[i].ts || h[i].key != w[i].key || !bytes.Equal(h[i].data, w[i].data) {
				t.Errorf("%s: track %s frame %d: ts %d key %v %d bytes, want ts %d key %v %d bytes", what, name, i,
					h[i].ts, h[i].key, len(h[i].data), w[i].ts, w[i].key, len(w[i].data))
				break
			}
		}
	}
}

// run is one demo run recorded twice at once: archived (objects) and
// read directly.
type run struct {
	dir    string
	direct map[string][]got
	events []archive.RecordEvent
}

// archiveDemo publishes the demo (renditions in container kind, real
// time, one loop) on loopback QUIC; one session archives it into a
// directory while another reads it directly.
func archiveDemo(t *testing.T, kind catalog.ContainerKind, renditions []string, wo archive.WriteOptions, st func(archive.Store) archive.Store) run {
	return archiveDemoOver(t, nil, kind, renditions, wo, st)
}

// archiveDemoIn is archiveDemo into a given directory.
func archiveDemoIn(t *testing.T, dir string, kind catalog.ContainerKind, renditions []string) run {
	return archiveDemoAt(t, dir, nil, kind, renditions, archive.WriteOptions{}, nil)
}

// archiveDemoOver is archiveDemo with the sessions speaking versions.
func archiveDemoOver(t *testing.T, versions []string, kind catalog.ContainerKind, renditions []string, wo archive.WriteOptions, st func(archive.Store) archive.Store) run {
	return archiveDemoAt(t, t.TempDir(), versions, kind, renditions, wo, st)
}

func archiveDemoAt(t *testing.T, dir string, versions []string, kind catalog.ContainerKind, renditions []string, wo archive.WriteOptions, st func(archive.Store) archive.Store) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bc := model.NewBroadcast("demo")
	hold := make(chan struct{})
	pubDone := make(chan error, 1)
	go func() {
		pubDone <- demo.Publish(ctx, bc, demo.Options{Renditions: renditions, Loops: 1, Realtime: true, Container: kind, Hold: hold})
	}()
	srv, url, pin, err := subscribe.ServeLoopback(bc, subscribe.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dial := func(objects bool) *subscribe.Session {
		s, err := subscribe.Dial(ctx, url, subscribe.Options{TLSFingerprint: pin, Objects: objects, Versions: versions})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	store, err := archive.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var s archive.Store = store
	if st != nil {
		s = st(store)
	}
	prefix, _ := archive.BroadcastPrefix("", "demo")
	var (
		mu     sync.Mutex
		events []archive.RecordEvent
	)
	wo.OnRecord = func(e archive.RecordEvent) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	archived := make(chan error, 1)
	go func() {
		archived <- archive.Write(ctx, s, prefix, dial(true).Broadcast("demo"), wo)
	}()
	directDone := make(chan map[string][]got, 1)
	go func() { directDone <- collect(ctx, t, dial(false).Broadcast("demo")) }()
	// Media starts once both readers subscribed every rendition.
	cat, _ := demo.CatalogIn(renditions, kind)
	for _, r := range cat.Renditions() {
		for bc.CreateTrack(r.Name).Consumers() < 2 {
			if ctx.Err() != nil {
				t.Fatalf("the readers did not subscribe %s: %d", r.Name, bc.CreateTrack(r.Name).Consumers())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	close(hold)
	if err := <-pubDone; err != nil {
		t.Fatalf("publish: %v", err)
	}
	direct := <-directDone
	select {
	case err := <-archived:
		if err != nil {
			t.Fatalf("archive.Write: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("archive.Write did not end with the broadcast")
	}
	mu.Lock()
	defer mu.Unlock()
	return run{dir: dir, direct: direct, events: events}
}

// readBack reads a whole archived broadcast back.
func readBack(t *testing.T, dir string, o archive.ReadOptions) map[string][]got {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return collect(ctx, t, archivetest.Broadcast(t, ctx, archivetest.Dir(t, dir), "demo", o))
}

func TestAnArchivedDemoReadsBackFrameForFrameInEveryContainer(t *testing.T) {
	for _, c := range []struct {
		name       string
		versions   []string
		kind       catalog.ContainerKind
		renditions []string
	}{
		{"legacy", nil, catalog.ContainerLegacy, []string{"h264", "h265", "aac", "opus"}},
		{"legacy over moq-transport-16", []string{"moq-transport-16"}, catalog.ContainerLegacy, []string{"h264", "aac"}},
		{"loc", nil, catalog.ContainerLOC, []string{"h264", "aac"}},
		{"cmaf", nil, catalog.ContainerCMAF, []string{"h264", "aac"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := archiveDemoOver(t, c.versions, c.kind, c.renditions, archive.WriteOptions{}, nil)
			for name, fs := range r.direct {
				if len(fs) < 50 {
					t.Fatalf("the direct reading of %s holds %d frames: the run went wrong", name, len(fs))
				}
			}
			back := readBack(t, r.dir, archive.ReadOptions{})
			compare(t, "archive", r.direct, back)
			for name, fs := range back {
				t.Logf("%s: %d frames read back, %d direct, %d records", name, len(fs), len(r.direct[name]), len(r.events))
			}
			for _, e := range r.events {
				if e.Gap {
					t.Errorf("a gap: %+v", e)
				}
			}
		})
	}
}

// TestAReaderThatSaysItAskedForEveryTrackIsNotKeptWaiting: the reader
// starts its tracks once the reader says it asked for all of them
// (collect does, as the export engine does), not after its Settle: here
// an hour, longer than readBack waits.
func TestAReaderThatSaysItAskedForEveryTrackIsNotKeptWaiting(t *testing.T) {
	t.Parallel()
	r := archiveDemo(t, catalog.ContainerLegacy, []string{"h264", "aac"}, archive.WriteOptions{}, nil)
	compare(t, "archive", r.direct, readBack(t, r.dir, archive.ReadOptions{Settle: time.Hour}))
}

// TestAWriterThatSubscribesLateArchivesWhatItsSourceStillHolds: a writer
// subscribes each track at the source's newest group, one track after the
// other, so it would lose the first groups of the later ones (AAC, a group
// per frame: a few frames every run). It asks the source for the groups it
// holds from before, back to the first video keyframe it archives.
func TestAWriterThatSubscribesLateArchivesWhatItsSourceStillHolds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	renditions := []string{"h264", "aac"}
	bc := model.NewBroadcast("demo")
	hold := make(chan struct{})
	pubDone := make(chan error, 1)
	go func() {
		pubDone <- demo.Publish(ctx, bc, demo.Options{Renditions: renditions, Loops: 1, Realtime: true, Hold: hold})
	}()
	// The whole broadcast, read in process from its first frame.
	localDone := make(chan map[string][]got, 1)
	go func() { localDone <- collect(ctx, t, bc) }()
	for _, name := range renditions {
		for bc.CreateTrack(name).Consumers() < 1 {
			if ctx.Err() != nil {
				t.Fatal("the local reader did not subscribe")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	close(hold)
	// The writer joins once the source is 5 AAC groups in.
	aac := bc.CreateTrack("aac")
	var joined int64
	for {
		if g := aac.NewestGroup(); g != nil && g.Sequence() >= 5 {
			if frames, _, _ := g.Frames(0); len(frames) > 0 {
				joined = frames[0].Timestamp
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatal("the demo published no AAC")
		}
		time.Sleep(2 * time.Millisecond)
	}

	srv, url, pin, err := subscribe.ServeLoopback(bc, subscribe.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s, err := subscribe.Dial(ctx, url, subscribe.Options{TLSFingerprint: pin, Objects: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir := t.TempDir()
	store, err := archive.Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	prefix, _ := archive.BroadcastPrefix("", "demo")
	if err := archive.Write(ctx, store, prefix, s.Broadcast("demo"), archive.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-pubDone; err != nil {
		t.Fatal(err)
	}
	local := <-localDone
	back := readBack(t, dir, archive.ReadOptions{})
	for _, name := range renditions {
		if len(back[name]) == 0 {
			t.Fatalf("%s: nothing archived", name)
		}
		// Lossless from where it starts: the end of the local reading.
		l, b := local[name], back[name]
		i := 0
		for i < len(l) && l[i].ts != b[0].ts {
			i++
		}
		compare(t, name+" from its first archived frame", map[string][]got{name: l[i:]}, map[string][]got{name: b})
	}
	a, v := back["aac"][0].ts, back["h264"][0].ts
	t.Logf("joined at AAC %d µs; archived from video %d µs, audio %d µs; %d of %d AAC frames", joined, v, a, len(back["aac"]), len(local["aac"]))
	if a >= joined {
		t.Errorf("audio archived from %d µs, where the subscription began (%d µs): nothing from before", a, joined)
	}
	if a > v {
		t.Errorf("audio archived from %d µs, after the first video keyframe (%d µs)", a, v)
	}
}

// TestATrackAskedAfterTheReadEndedIsRefusedNotWaitedFor: a reader starved
// between asking for its first track and its second (suite26 saw one under
// load: h264 read back whole, aac 0 of 189 frames, the read hanging until
// its 60 s deadline) asks for the second after the feeder, given only the
// first, read it to the end and ended the broadcast. It is refused at
// once; before, it got a track nothing would ever fill or end.
func TestATrackAskedAfterTheReadEndedIsRefusedNotWaitedFor(t *testing.T) {
	t.Parallel()
	r := archiveDemoOver(t, nil, catalog.ContainerLegacy, []string{"h264", "aac"}, archive.WriteOptions{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := archivetest.Broadcast(t, ctx, archivetest.Dir(t, r.dir), "demo", archive.ReadOptions{})
	w, err := catalog.Watch(b, catalog.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(ctx); err != nil {
		t.Fatalf("catalog: %v", err)
	}
	w.Close()
	v, err := b.Track("h264")
	if err != nil {
		t.Fatal(err)
	}
	c := v.Subscribe(time.Minute)
	defer c.Close()
	frames, _, ended := readFrames(ctx, c)
	if !ended {
		t.Fatalf("h264 did not end: %d frames", frames)
	}
	select {
	case <-b.Done():
	case <-ctx.Done():
		t.Fatal("the read of h264 alone did not end the broadcast")
	}
	if frames != len(r.direct["h264"]) {
		t.Errorf("h264: %d frames read back, %d direct", frames, len(r.direct["h264"]))
	}
	a, err := b.Track("aac")
	if err == nil {
		ac := a.Subscribe(time.Minute)
		defer ac.Close()
		wait, stop := context.WithTimeout(ctx, 3*time.Second)
		defer stop()
		if _, _, ended := readFrames(wait, ac); ended {
			t.Fatal("aac, asked after the read ended, was given as a track that ended at once; want a refusal")
		}
		t.Fatal("aac, asked after the read ended, was given as a track that did not end within 3 s; want a refusal")
	}
	if !errors.Is(err, model.ErrNotFound) {
		t.Errorf("aac asked after the read ended: %v, want model.ErrNotFound", err)
	}
}

// TestATrackAskedAsTheReadEndsIsFedWholeOrRefused: a track asked for just
// as an unpaced read of the others is ending (after its last round, before
// it closes the broadcast) is fed whole from the start; before, it was
// closed with the broadcast, empty, without an error.
func TestATrackAskedAsTheReadEndsIsFedWholeOrRefused(t *testing.T) {
	r := archiveDemoOver(t, nil, catalog.ContainerLegacy, []string{"h264", "aac"}, archive.WriteOptions{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b *model.Broadcast
	late := make(chan *model.Consumer, 1)
	archive.SetFeederEnding(func(fb *model.Broadcast) {
		if fb != b || len(late) > 0 {
			return
		}
		a, err := b.Track("aac")
		if err != nil {
			t.Errorf("aac asked as the read ends: %v", err)
			close(late)
			return
		}
		late <- a.Subscribe(time.Minute)
	})
	defer archive.SetFeederEnding(nil)
	b = archivetest.Broadcast(t, ctx, archivetest.Dir(t, r.dir), "demo", archive.ReadOptions{})
	read := func(c *model.Consumer) int {
		defer c.Close()
		frames, _, ended := readFrames(ctx, c)
		if !ended {
			t.Fatalf("%d frames, then nothing for 20 s", frames)
		}
		return frames
	}
	v, err := b.Track("h264")
	if err != nil {
		t.Fatal(err)
	}
	if n := read(v.Subscribe(time.Minute)); n != len(r.direct["h264"]) {
		t.Errorf("h264: %d frames read back, %d direct", n, len(r.direct["h264"]))
	}
	var c *model.Consumer
	select {
	case c = <-late:
	case <-ctx.Done():
		t.Fatal("the read of h264 alone did not end")
	}
	if c == nil {
		return // refused: said above
	}
	if n := read(c); n != len(r.direct["aac"]) {
		t.Errorf("aac, asked as the read ended: %d frames read back, %d direct", n, len(r.direct["aac"]))
	}
}
