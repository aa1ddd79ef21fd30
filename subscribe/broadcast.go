package subscribe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/model"
)

// kindRaw marks tracks without a container: catalog tracks, whose frame
// timestamps come from the wire.
const kindRaw = string(hang.Raw)

func isCatalogTrack(name string) bool { return catalog.IsTrackName(name) }

// remoteBroadcast is a broadcast of the peer that we subscribe to.
type remoteBroadcast struct {
	s      *Session
	path   string
	b      *model.Broadcast
	ctx    context.Context
	cancel context.CancelCauseFunc

	// feed is the announcement feed the broadcast follows (under s.mu;
	// nil once closed).
	feed *Announcements

	mu        sync.Mutex
	activated chan struct{} // closed and replaced on each active announcement
	tracks    map[string]*session.Remote
	ending    bool           // announced ended: no new tracks
	runs      sync.WaitGroup // the tracks' run goroutines
}

// Broadcast returns the peer's broadcast at path (relative to the session
// root). Its tracks are subscribed on demand (model.Broadcast.Track). The
// same path returns the same broadcast until it ends (an "ended"
// announcement, Close, or the session's end); then a new one.
//
// The broadcast follows its announcements (an "ended" one closes it, a
// restart resubscribes its tracks) on a feed the session already runs
// under a prefix that covers the path, a caller's Announced or another
// broadcast's, so that a recorder of 1,000 broadcasts holds one announce
// stream and not 1,000; only a broadcast no feed covers opens one, for its
// own path (a relay may not let the peer follow any wider prefix).
func (s *Session) Broadcast(path string) *model.Broadcast {
	path = normPath(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if rb, ok := s.remotes[path]; ok {
		return rb.b
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	rb := &remoteBroadcast{
		s: s, path: path, b: model.NewBroadcast(path), ctx: ctx, cancel: cancel,
		tracks: map[string]*session.Remote{}, activated: make(chan struct{}),
	}
	rb.b.HandleRequests(rb.request)
	s.remotes[path] = rb
	if err := s.links.Err(); err != nil {
		go rb.close(err)
		return rb.b
	}
	// The owner's Close of the model broadcast ends the broadcast's work.
	rb.b.HandleClose(rb.close)
	s.followLocked(rb)
	return rb.b
}

// announced applies an announcement of the broadcast's path: an "ended"
// one closes the broadcast, a restart resubscribes its tracks. A feed that
// ends (the peer closed the announce stream) leaves the broadcast be: its
// tracks report their own ends.
func (rb *remoteBroadcast) announced(a Announcement) {
	if a.Active {
		rb.mu.Lock()
		close(rb.activated)
		rb.activated = make(chan struct{})
		rb.mu.Unlock()
	}
	switch {
	case !a.Active && !a.diff:
		rb.s.log.Info("moq: broadcast ended", "broadcast", rb.path)
		rb.endAfterTracks()
	case a.Active && a.restart:
		rb.s.log.Info("moq: broadcast restarted, resubscribing", "broadcast", rb.path)
		rb.mu.Lock()
		for _, rt := range rb.tracks {
			rt.Restart()
		}
		rb.mu.Unlock()
	}
}

// close ends the broadcast and forgets it, so the next Broadcast call for
// the path starts over.
func (rb *remoteBroadcast) close(err error) {
	rb.detach()
	if err == nil {
		rb.cancel(errStopped)
	} else {
		rb.cancel(err)
	}
	rb.b.Close(err)
}

// detach forgets the broadcast, so that the next Broadcast call for the
// path starts over, and stops following its announcements.
func (rb *remoteBroadcast) detach() {
	rb.s.mu.Lock()
	if rb.s.remotes[rb.path] == rb {
		delete(rb.s.remotes, rb.path)
	}
	feed := rb.feed
	rb.feed = nil
	rb.s.mu.Unlock()
	if feed != nil {
		feed.unfollow(rb)
	}
}

// endAfterTracks ends the broadcast once its tracks' subscriptions have
// ended, at most the drain grace period after an "ended" announcement.
// The announcement travels on its own stream and can overtake the last
// group streams: closing at once cut the frames still in flight (about
// one per broadcast with 500 broadcasts on one connection). A publisher
// ends its subscriptions with the broadcast, so this is normally at once;
// the bound covers one that does not. The path is forgotten now, so that a
// broadcast announced again under it starts over. It does not wait itself:
// the shared feed's goroutine calls it.
func (rb *remoteBroadcast) endAfterTracks() {
	rb.detach()
	rb.mu.Lock()
	rb.ending = true
	rb.mu.Unlock()
	// The tracks end on their own (the publisher ends their
	// subscriptions, or the session goes), or when the grace runs out and
	// closing the broadcast ends them; close is idempotent.
	grace := time.AfterFunc(rb.s.opts.drainGrace, func() { rb.close(nil) })
	go func() {
		rb.runs.Wait()
		grace.Stop()
		rb.close(nil)
	}()
}

// request is the model.Broadcast request handler: it starts a
// subscription for track name.
func (rb *remoteBroadcast) request(name string) (*model.Track, error) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if rt, ok := rb.tracks[name]; ok {
		return rt.Track, nil
	}
	if rb.ctx.Err() != nil || rb.ending {
		return nil, fmt.Errorf("broadcast %q: %w", rb.path, model.ErrClosed)
	}
	if !rb.s.mayPublish(rb.path) {
		return nil, fmt.Errorf("broadcast %q: %w: the peer's token does not allow publishing it", rb.path, ErrUnauthorized)
	}
	kind := rb.knownKind(name)
	if kind != "" && !hang.Decodable(kind) {
		return nil, fmt.Errorf("track %q of %q: %w: %q", name, rb.path, ErrUnsupportedContainer, kind)
	}
	rt := &session.Remote{Host: rb, Broadcast: rb.path, Name: name, Track: model.NewTrack(name)}
	// Of the groups its consumers have all read, a subscribed track keeps
	// only the newest: its consumers asked for it before its first group,
	// and one that joins later starts at the newest group, as a live
	// joiner does. The model's default of 8 held ~8 s of video per
	// recording (4 MB at 4 Mb/s). SetKeepGroups on the track changes it.
	rt.Track.SetKeepGroups(1)
	rb.tracks[name] = rt
	if !isCatalogTrack(name) {
		rt.Track.HandleBackfill(rt.Backfill)
		// Not for catalog tracks: their readers come one after another
		// (record's first catalog, then the export's).
		rt.Track.SetReleaseRead(rb.s.opts.ReleaseRead)
	}
	rb.s.wg.Add(1)
	rb.runs.Add(1)
	rt.Exit = func() {
		rb.runs.Done()
		rb.s.wg.Done()
	}
	go rb.run(rt, kind)
	return rt.Track, nil
}

// run learns track rt's container (kind when known already), then runs
// the track until it ends (session.Remote.Run).
func (rb *remoteBroadcast) run(rt *session.Remote, kind string) {
	if !rb.prepare(rt, kind) {
		rt.Exit()
		return
	}
	rt.Run()
}

// knownKind returns the container of track name if it is known without
// waiting.
func (rb *remoteBroadcast) knownKind(name string) string {
	if isCatalogTrack(name) {
		return kindRaw
	}
	if f := rb.s.opts.container; f != nil {
		if k := f(rb.path, name); k != "" {
			return k
		}
	}
	if r, ok := rb.s.learnt.of(rb.path, name); ok {
		return string(r.Common().ContainerKind())
	}
	return ""
}

// kindOf returns the container of track name, reading the broadcast's
// catalog when it is not known yet (bounded by the request timeout on a
// connection that stays up; "legacy" when the catalog does not say). The
// catalog is read here, on the asking track's goroutine and only for as
// long as it asks: nothing follows it for the broadcast's life, so an idle
// recording holds no goroutine and no decoded catalog for it.
func (rb *remoteBroadcast) kindOf(name string) (string, error) {
	if k := rb.knownKind(name); k != "" {
		return k, nil
	}
	if w, err := catalog.Watch(rb.b, catalog.WatchOptions{}); err != nil {
		rb.s.log.Warn("moq: catalog", "broadcast", rb.path, "err", err)
	} else {
		defer w.Close()
		// A catalog that does not come within the request timeout
		// because its connection was lost meanwhile (a blackhole: its
		// request goes with the connection, and the track subscribes
		// again on the next one) is waited for on the next connection:
		// assuming the legacy container would record a loc or cmaf
		// track as garbage.
		var gen uint64
		for {
			c, g, err := rb.WaitConn(rb.ctx, gen)
			if err != nil {
				break
			}
			gen = g
			k, silent := rb.waitCatalog(w, name)
			if k != "" {
				return k, nil
			}
			if !silent || !session.LostWith(rb.ctx, c, fmt.Errorf("%w: catalog", session.ErrTimeout)) {
				break
			}
			rb.s.log.Debug("moq: the catalog's wait went with its connection: waiting on the next one", "broadcast", rb.path, "track", name)
		}
	}
	if rb.ctx.Err() != nil {
		return "", context.Cause(rb.ctx)
	}
	rb.s.log.Warn("moq: track not in the catalog, assuming the legacy container", "broadcast", rb.path, "track", name)
	return string(hang.Legacy), nil
}

// waitCatalog reads w's catalogs for the container of track name, for at
// most the request timeout; silent: no catalog came in that time (and the
// catalog track did not end).
func (rb *remoteBroadcast) waitCatalog(w *catalog.Watcher, name string) (kind string, silent bool) {
	ctx, cancel := context.WithTimeout(rb.ctx, rb.s.opts.RequestTimeout)
	defer cancel()
	// A rendition that a catalog update added may be asked for before
	// that update arrived (the export follows the catalog track on its
	// own): after a snapshot without it, wait a moment for the next one.
	wait := ctx
	for {
		c, err := w.Next(wait)
		if err != nil {
			// The catalog track ended, or the wait is over.
			return "", wait == ctx && errors.Is(err, context.DeadlineExceeded) && rb.ctx.Err() == nil
		}
		rb.s.learnt.learn(rb.path, c, rb.s.log)
		if k := rb.knownKind(name); k != "" {
			return k, false
		}
		if wait == ctx {
			var stop context.CancelFunc
			wait, stop = context.WithTimeout(ctx, catalogUpdateGrace)
			defer stop()
		}
	}
}

// catalogUpdateGrace is how long a track missing from the catalog waits
// for a newer snapshot that names it.
const catalogUpdateGrace = time.Second
