package session

import (
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/model"
)

// cmafBroadcast publishes, as path in a new Publications, a broadcast
// whose catalog is the demo's in cmaf packaging (it holds each rendition's
// init), with its tracks.
func cmafBroadcast(t *testing.T, path string) (*Publications, *model.Broadcast) {
	t.Helper()
	b := model.NewBroadcast(path)
	c, err := demo.CatalogIn(demo.DefaultRenditions, catalog.ContainerCMAF)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Renditions() {
		b.CreateTrack(r.Name)
	}
	writeCatalog(t, b, c)
	p := NewPublications()
	p.Add(path, b)
	return p, b
}

// writeCatalog publishes c as the newest group of b's catalog track.
func writeCatalog(t *testing.T, b *model.Broadcast, c *catalog.Catalog) {
	t.Helper()
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ct, err := b.Track(catalog.TrackName)
	if err != nil {
		ct = b.CreateTrack(catalog.TrackName)
	}
	g, err := ct.AppendGroup()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.WriteFrame(model.Frame{Payload: data}); err != nil {
		t.Fatal(err)
	}
	g.Close(nil)
}

// TestATrackServedOverAndOverReadsItsCatalogOnlyWhenItChanges: every
// request a family serves asks for its track's packaging, and a gap fill
// after a long blackhole is thousands of one-group FETCHes. The catalog
// (its JSON, and each cmaf rendition's init) is read once per catalog
// group, not per request: read each time, a cmaf broadcast's catalog took
// three quarters of the publisher's CPU during a fill (thousands of
// allocations a request), and the fill of a 45-60 s outage ran on long
// after the network came back, until the chaos soak's next fault cut it.
// A catalog update is read as soon as it is the newest.
func TestATrackServedOverAndOverReadsItsCatalogOnlyWhenItChanges(t *testing.T) {
	p, b := cmafBroadcast(t, "cmaf")
	tr, pack, err := p.Track("cmaf", "1.m4s")
	if err != nil || tr == nil {
		t.Fatalf("Track: %v", err)
	}
	if pack.pk.Kind() != hang.CMAF {
		t.Fatalf("packaging %q, want cmaf", pack.pk.Kind())
	}
	if got := p.Encoder("cmaf", "1.m4s").pk; got.Kind() != hang.CMAF || got.Timescale() != pack.pk.Timescale() {
		t.Fatalf("Encoder: %q at %d, Track said %q at %d", got.Kind(), got.Timescale(), pack.pk.Kind(), pack.pk.Timescale())
	}
	// Served again: no catalog read (a read is thousands of allocations;
	// finding the catalog group is a few).
	if n := testing.AllocsPerRun(200, func() { p.Track("cmaf", "1.m4s") }); n > 8 {
		t.Errorf("Track allocates %.0f times a request: the catalog is read again", n)
	}
	if n := testing.AllocsPerRun(200, func() { p.Encoder("cmaf", "0.m4s") }); n > 8 {
		t.Errorf("Encoder allocates %.0f times a request: the catalog is read again", n)
	}

	// A catalog update that no longer lists 1.m4s (the loc renditions'
	// names): its packaging is the default one from then on.
	loc, err := demo.CatalogIn(demo.DefaultRenditions, catalog.ContainerLOC)
	if err != nil {
		t.Fatal(err)
	}
	writeCatalog(t, b, loc)
	if got := p.Encoder("cmaf", "1.m4s").pk; got.Kind() != hang.Legacy {
		t.Errorf("after a catalog update without it, 1.m4s is packaged %q, want legacy", got.Kind())
	}

	// Unpublished: its catalog is not kept.
	p.Remove("cmaf", nil)
	p.mu.Lock()
	kept := len(p.catalogs)
	p.mu.Unlock()
	if kept != 0 {
		t.Errorf("%d catalogs kept after the broadcast was unpublished", kept)
	}
	if got := p.Encoder("cmaf", "1.m4s").pk; got.Kind() != hang.Legacy {
		t.Errorf("an unpublished path's packaging is %q, want legacy", got.Kind())
	}
}

// TestPackagingsAskedTogetherAllComeFromTheCatalog: requests of several
// tracks at once, on a catalog not read yet, each get their own
// rendition's packaging (run with -race).
func TestPackagingsAskedTogetherAllComeFromTheCatalog(t *testing.T) {
	p, _ := cmafBroadcast(t, "cmaf")
	var wg sync.WaitGroup
	for range 8 {
		for _, name := range []string{"0.m4s", "1.m4s"} {
			wg.Go(func() {
				if got := p.Encoder("cmaf", name).pk; got.Kind() != hang.CMAF {
					t.Errorf("%s packaged %q, want cmaf", name, got.Kind())
				}
			})
		}
	}
	wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.catalogs[p.published["cmaf"]]; e == nil || len(e.packs) != 2 {
		t.Errorf("kept %+v, want the catalog with both packagings", e)
	}
}

// TestATrackAskedBeforeItsCatalogIsPackagedAsTheCatalogSaysOnceItComes:
// a subscriber asks for a media track before the publisher wrote its
// broadcast's catalog (our recorder resubscribes the moment a restarted
// publisher listens, before its broadcasts are filled). The request waits
// for the catalog and gets the packaging the catalog gives the track.
// Before, it got legacy, for the subscription's whole life: in the chaos
// soak under load a restarted publisher sent a cmaf track's fragments
// behind a legacy timestamp, and both moq-lite recorders skipped every
// object as malformed ("cmaf: malformed: box of 2211939760 bytes") for
// 46 s. A broadcast that never publishes a catalog is served as before
// once the wait is over.
func TestATrackAskedBeforeItsCatalogIsPackagedAsTheCatalogSaysOnceItComes(t *testing.T) {
	defer func(w time.Duration) { catalogWait = w }(catalogWait)
	catalogWait = 500 * time.Millisecond
	for _, tc := range []struct {
		name string
		// catalogAfter: when the publisher writes the catalog and creates
		// the tracks (as demo.Publish does); negative: never.
		catalogAfter time.Duration
		want         hang.Kind
	}{
		{name: "the catalog comes 100 ms after the request", catalogAfter: 100 * time.Millisecond, want: hang.CMAF},
		{name: "the catalog was there before the request", catalogAfter: 0, want: hang.CMAF},
		{name: "a broadcast with no catalog gets the default packaging after the wait", catalogAfter: -1, want: hang.Legacy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := model.NewBroadcast("cmaf")
			c, err := demo.CatalogIn(demo.DefaultRenditions, catalog.ContainerCMAF)
			if err != nil {
				t.Fatal(err)
			}
			publish := func() {
				writeCatalog(t, b, c)
				for _, r := range c.Renditions() {
					b.CreateTrack(r.Name)
				}
			}
			if tc.catalogAfter == 0 {
				publish()
			}
			p := NewPublications()
			p.Add("cmaf", b)
			if tc.catalogAfter > 0 {
				timer := time.AfterFunc(tc.catalogAfter, publish)
				defer timer.Stop()
			}
			tr, enc, err := p.Track("cmaf", "0.m4s")
			if err != nil || tr == nil {
				t.Fatalf("Track: %v", err)
			}
			if enc.pk.Kind() != tc.want {
				t.Fatalf("0.m4s packaged %q, want %q", enc.pk.Kind(), tc.want)
			}
		})
	}
}
