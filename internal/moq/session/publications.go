package session

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moqpath"
	"github.com/moq-export/moq-export/model"
)

// The publisher's core, the part of serving our broadcasts that both
// families do alike: which broadcasts are published (Publications), the
// track a request names and how its payloads are packaged (Track), the
// groups a subscription starts from (OldestUnexpired, Edge), the one loop
// that sends a subscription's groups in order (Serve, through a family's
// Sink) and the one that sends a past group's frames (ServeGroup). A
// family reads the request in its wire, calls these, and writes the reply
// and the objects in its wire.

// Why a request names no published track.
var (
	ErrNoBroadcast = errors.New("moq: no such broadcast published")
	ErrNoTrack     = errors.New("moq: no such track in the published broadcast")
)

// Publications are the broadcasts a session publishes, by path, with
// whoever follows their changes (announce streams), and the
// subscriptions served per track. Safe for concurrent use.
type Publications struct {
	serving atomic.Int64

	mu        sync.Mutex
	published map[string]*model.Broadcast
	changed   chan struct{} // closed and replaced when published changes
	followers map[*follower]struct{}
	tracks    map[servingKey]int
	catalogs  map[*model.Broadcast]*parsedCatalog // of the published broadcasts
}

// parsedCatalog is a published broadcast's newest catalog as read once,
// with the packagings of its tracks made from it as they were asked for.
//
// Every request a family serves asks for its track's packaging, and each
// FETCH names one group: the gap fill after a 50 s blackhole is about
// 2,400 FETCHes of each audio track. Read afresh for each (the catalog's
// JSON, and the init of every cmaf rendition through go-mp4's reflection,
// twice per moq-transport FETCH), a cmaf broadcast's catalog took three
// quarters of the publisher's CPU while it served a fill, and the fill of
// its audio ran 15-25 s past the network's return on a loaded machine:
// long enough for the chaos soak's next fault (the recorder killed, the
// publisher restarted) to cut it, and the rest of the outage was lost.
type parsedCatalog struct {
	group *model.Group // the catalog group it was read from
	cat   *catalog.Catalog
	packs map[string]hang.Track
}

// follower is one Follow registration.
type follower struct {
	fn func(path string, active bool)
}

// servingKey names a served track: broadcast path and track name.
type servingKey struct{ broadcast, track string }

// NewPublications returns an empty set.
func NewPublications() *Publications {
	return &Publications{
		published: map[string]*model.Broadcast{},
		changed:   make(chan struct{}),
		followers: map[*follower]struct{}{},
		tracks:    map[servingKey]int{},
		catalogs:  map[*model.Broadcast]*parsedCatalog{},
	}
}

// Add publishes b at path (cleaned), and tells the followers. It returns
// false, changing nothing, when path is published already.
func (p *Publications) Add(path string, b *model.Broadcast) bool {
	path = moqpath.Clean(path)
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.published[path]; ok {
		return false
	}
	p.published[path] = b
	p.changedLocked(path, true)
	return true
}

// Remove unpublishes path (only when it holds only, if only is not nil),
// and tells the followers.
func (p *Publications) Remove(path string, only *model.Broadcast) {
	path = moqpath.Clean(path)
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.published[path]
	if !ok || (only != nil && b != only) {
		return
	}
	delete(p.published, path)
	delete(p.catalogs, b)
	p.changedLocked(path, false)
}

func (p *Publications) changedLocked(path string, active bool) {
	close(p.changed)
	p.changed = make(chan struct{})
	for f := range p.followers {
		f.fn(path, active)
	}
}

// Broadcast returns the broadcast published at path, or nil.
func (p *Publications) Broadcast(path string) *model.Broadcast {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.published[moqpath.Clean(path)]
}

// Track returns the published track a request names and the encoder of
// its payloads, or ErrNoBroadcast or ErrNoTrack.
func (p *Publications) Track(broadcast, track string) (*model.Track, Encoder, error) {
	b := p.Broadcast(broadcast)
	if b == nil {
		return nil, Encoder{}, ErrNoBroadcast
	}
	if !catalog.IsTrackName(track) && !slices.Contains(b.TrackNames(), track) {
		awaitCatalog(b, catalogWait)
	}
	t, err := b.Track(track)
	if err != nil {
		return nil, Encoder{}, ErrNoTrack
	}
	return t, Encoder{pk: p.packaging(broadcast, b, track)}, nil
}

// Encoder returns the encoder of track of the broadcast published at
// broadcast: its packaging (see the function Packaging) from the
// broadcast's newest catalog, read once for all the requests until it
// changes. A path not published gets the legacy packaging.
func (p *Publications) Encoder(broadcast, track string) Encoder {
	b := p.Broadcast(broadcast)
	if b == nil {
		return Encoder{pk: hang.ForRendition(nil, track)}
	}
	return Encoder{pk: p.packaging(broadcast, b, track)}
}

// catalogWait bounds how long a request for a media track the broadcast
// does not hold yet waits for the broadcast's first catalog frame
// (awaitCatalog).
var catalogWait = 2 * time.Second

// awaitCatalog waits, up to limit or until b ends, until b holds a frame
// of its catalog. A request for a media track the broadcast does not hold
// yet calls it before the track's packaging is chosen: a subscriber can
// ask for a track before the publisher wrote its catalog (our recorder
// resubscribes the moment a restarted publisher listens, before that
// publisher's broadcasts are filled), and the packaging chosen then, with
// no catalog to say it (legacy), stays the subscription's for its whole
// life: a cmaf track's fragments went out behind a legacy timestamp, and
// the subscriber skipped every object of them as malformed until the
// subscription ended (46 s in the chaos soak under load). A broadcast
// that publishes no catalog keeps the old behaviour after the wait.
//
// It waits on the catalog tracks' model.Broadcast.FirstFrame, not a poll;
// a catalog track is one of catalog.TracksFor's three names.
func awaitCatalog(b *model.Broadcast, limit time.Duration) {
	if g, _, _, _ := latestCatalogFrame(b); g != nil {
		return
	}
	names := catalog.TracksFor(b.Name())
	var first [3]<-chan struct{}
	for i := range first {
		if i < len(names) {
			first[i] = b.FirstFrame(names[i]) // nil: never ready
		}
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-first[0]:
	case <-first[1]:
	case <-first[2]:
	case <-b.Done():
	case <-timer.C:
	}
}

// packaging is Packaging of b, published at path.
func (p *Publications) packaging(path string, b *model.Broadcast, name string) hang.Track {
	if catalog.IsTrackName(name) {
		return Packaging(b, name)
	}
	g, held, seq, payload := latestCatalogFrame(b)
	if g == nil {
		return hang.ForRendition(nil, name)
	}
	p.mu.Lock()
	e := p.catalogs[b]
	if e != nil && e.group == g {
		if t, ok := e.packs[name]; ok {
			p.mu.Unlock()
			return t
		}
	}
	p.mu.Unlock()
	if e == nil || e.group != g {
		// Read outside the lock; a request that races this one at a
		// catalog change reads it too, and one of them is kept.
		c, err := catalog.NewReader(held).Frame(seq, true, payload)
		if err != nil {
			c = nil
		}
		e = &parsedCatalog{group: g, cat: c, packs: map[string]hang.Track{}}
	}
	t := hang.ForRendition(e.cat, name)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.published[moqpath.Clean(path)] != b {
		return t // unpublished meanwhile: nothing to keep
	}
	// A request that read an older catalog stores it last at worst: the
	// next request sees a newer group and reads that.
	if cur := p.catalogs[b]; cur != nil && cur.group == g {
		e = cur
	} else {
		p.catalogs[b] = e
	}
	e.packs[name] = t
	return t
}

// Has reports whether a track named track of the broadcast published at
// broadcast exists, without making its packaging.
func (p *Publications) Has(broadcast, track string) bool {
	b := p.Broadcast(broadcast)
	if b == nil {
		return false
	}
	_, err := b.Track(track)
	return err == nil
}

// Paths returns the published paths, sorted, and a channel closed at the
// next change.
func (p *Publications) Paths() ([]string, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	paths := make([]string, 0, len(p.published))
	for path := range p.published {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	return paths, p.changed
}

// Follow calls init with the published paths (sorted), then fn with every
// change (a path published, active, or unpublished), until stop. Both run
// under the set's lock, so no change slips between the snapshot and the
// updates; they must not block (queue, never write to the network).
func (p *Publications) Follow(init func(paths []string), fn func(path string, active bool)) (stop func()) {
	f := &follower{fn: fn}
	p.mu.Lock()
	paths := make([]string, 0, len(p.published))
	for path := range p.published {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	init(paths)
	p.followers[f] = struct{}{}
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.followers, f)
		p.mu.Unlock()
	}
}

// Followers returns how many Follow registrations are running (tests).
func (p *Publications) Followers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.followers)
}

// CountServing adds d to the subscriptions served of track of broadcast;
// a subscription counts once its start group is fixed and its consumer
// attached (every group appended from then on reaches the subscriber).
func (p *Publications) CountServing(broadcast, track string, d int) {
	key := servingKey{moqpath.Clean(broadcast), track}
	p.mu.Lock()
	p.tracks[key] += d
	if p.tracks[key] == 0 {
		delete(p.tracks, key)
	}
	p.mu.Unlock()
	p.serving.Add(int64(d))
}

// Serving returns how many subscriptions to track of broadcast are served.
func (p *Publications) Serving(broadcast, track string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tracks[servingKey{moqpath.Clean(broadcast), track}]
}

// ServingAll returns how many subscriptions are served.
func (p *Publications) ServingAll() int64 { return p.serving.Load() }

// Packaging returns how published track name of b goes on the wire, as
// package hang reads it from the catalog b publishes (catalog.json, if it
// holds one): a rendition it declares "cmaf" carries moof+mdat payloads
// already (as `moq import fmp4` publishes them), which go out as they are
// at the init's mdhd timescale; "loc" renditions get the loc packaging;
// every other track the legacy one, and catalog tracks none.
func Packaging(b *model.Broadcast, name string) hang.Track {
	if catalog.IsTrackName(name) {
		t, _ := hang.NewTrack(hang.Raw, nil)
		return t
	}
	return hang.ForRendition(LatestCatalog(b), name)
}

// LatestCatalog returns the newest snapshot of the catalog b holds (the
// first of catalog.TracksFor its name it has), or nil.
func LatestCatalog(b *model.Broadcast) *catalog.Catalog {
	g, held, seq, payload := latestCatalogFrame(b)
	if g == nil {
		return nil
	}
	c, err := catalog.NewReader(held).Frame(seq, true, payload)
	if err != nil {
		return nil
	}
	return c
}

// latestCatalogFrame returns the newest group of the catalog track b holds
// (the first of catalog.TracksFor its name it has), that track's name, the
// group's sequence and its first frame's payload; a nil group when there
// is none, or it holds no frame yet.
func latestCatalogFrame(b *model.Broadcast) (g *model.Group, held string, seq uint64, payload []byte) {
	names := b.TrackNames()
	for _, want := range catalog.TracksFor(b.Name()) {
		for _, n := range names {
			if n == want && held == "" {
				held = n
			}
		}
	}
	if held == "" {
		return nil, "", 0, nil // Track would create it
	}
	t, err := b.Track(held)
	if err != nil {
		return nil, "", 0, nil
	}
	seq, ok := t.LatestGroup()
	if !ok {
		return nil, "", 0, nil
	}
	if g = t.Group(seq); g == nil {
		return nil, "", 0, nil
	}
	frames, _, _ := g.Frames(0)
	if len(frames) == 0 {
		return nil, "", 0, nil
	}
	return g, held, seq, frames[0].Payload
}
