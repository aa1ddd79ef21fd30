package subscribe

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
)

// Announcement is one change in the set of the peer's broadcasts.
type Announcement struct {
	// Path is the broadcast path relative to the session root.
	Path string
	// Active is true when the broadcast started (or restarted: an active
	// announcement for a path already active means it was replaced), false
	// when it ended.
	Active bool

	diff    bool // made up after a reconnect, not sent by the peer
	restart bool
}

// Announcements is a live feed of announcements under a prefix. It
// survives reconnects: after one, broadcasts that are gone are reported
// ended and new ones active.
//
// One feed is one announce stream (SUBSCRIBE_NAMESPACE on moq-transport)
// and one goroutine reading it. The session's remote broadcasts follow
// their announcements on a feed that covers their path (Session.Broadcast),
// so a feed lives while its caller holds it (until Close) or a broadcast
// follows it, whichever is longer.
type Announcements struct {
	s      *Session
	prefix string
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	queue  []Announcement
	active map[string]bool
	err    error
	notify chan struct{}
	// held says a caller of Announced holds the feed: announcements are
	// queued for its Next until Close. A feed started for a broadcast has
	// no caller.
	held   bool
	closed bool // Close was called: Next reports ErrClosed
	ending bool // neither held nor followed any more: no broadcast joins it
	// followers are the broadcasts that follow their announcements on the
	// feed, by path; nfollow counts them.
	followers map[string][]*remoteBroadcast
	nfollow   int
}

// Announced starts discovery of the peer's broadcasts under prefix ("" for
// all) and returns the feed. The feed follows the session until Close or
// the session's end; ctx bounds nothing but is kept for symmetry with the
// other calls.
func (s *Session) Announced(ctx context.Context, prefix string) (*Announcements, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.links.Err(); err != nil {
		return nil, err
	}
	a := s.newFeedLocked(prefix, true)
	s.startFeedLocked(a)
	return a, nil
}

// newFeedLocked returns a feed under prefix, registered with the session
// so that broadcasts can follow it; held says a caller holds it. The
// caller holds s.mu and starts it with startFeedLocked.
func (s *Session) newFeedLocked(prefix string, held bool) *Announcements {
	ctx, cancel := context.WithCancel(s.ctx)
	a := &Announcements{
		s: s, prefix: normPath(prefix), ctx: ctx, cancel: cancel,
		active: map[string]bool{}, notify: make(chan struct{}, 1), held: held,
	}
	if s.feeds == nil {
		s.feeds = map[*Announcements]struct{}{}
	}
	s.feeds[a] = struct{}{}
	return a
}

func (s *Session) startFeedLocked(a *Announcements) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.feeds, a)
			s.mu.Unlock()
		}()
		a.run()
	}()
}

// followLocked makes rb follow its announcements on a running feed that
// covers its path, or on a new one for the path alone. The caller holds
// s.mu.
func (s *Session) followLocked(rb *remoteBroadcast) {
	for a := range s.feeds {
		if ok, active := a.follow(rb); ok {
			rb.feed = a
			if active {
				// Announced before: what tracks waiting for it need.
				close(rb.activated)
				rb.activated = make(chan struct{})
			}
			return
		}
	}
	a := s.newFeedLocked(rb.path, false)
	a.follow(rb)
	rb.feed = a
	s.startFeedLocked(a)
}

// follow adds rb to the feed's followers when the feed covers its path and
// still runs; active says the path is announced active now.
func (a *Announcements) follow(rb *remoteBroadcast) (ok, active bool) {
	if _, covered := stripPrefix(rb.path, a.prefix); !covered {
		return false, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ending || a.err != nil || a.ctx.Err() != nil {
		return false, false
	}
	if a.followers == nil {
		a.followers = map[string][]*remoteBroadcast{}
	}
	a.followers[rb.path] = append(a.followers[rb.path], rb)
	a.nfollow++
	return true, a.active[rb.path]
}

// unfollow removes rb from the followers; the feed ends when nobody holds
// or follows it any more.
func (a *Announcements) unfollow(rb *remoteBroadcast) {
	a.mu.Lock()
	list := a.followers[rb.path]
	for i, x := range list {
		if x == rb {
			list = append(list[:i], list[i+1:]...)
			a.nfollow--
			break
		}
	}
	if len(list) == 0 {
		delete(a.followers, rb.path)
	} else {
		a.followers[rb.path] = list
	}
	idle := !a.held && a.nfollow == 0
	a.ending = a.ending || idle
	a.mu.Unlock()
	if idle {
		a.cancel()
	}
}

// Next returns the next announcement, waiting for one until ctx ends. After
// the feed ended it returns the reason (ErrClosed after Close or the
// session's end).
func (a *Announcements) Next(ctx context.Context) (Announcement, error) {
	for {
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			return Announcement{}, ErrClosed
		}
		if len(a.queue) > 0 {
			x := a.queue[0]
			a.queue = a.queue[1:]
			a.mu.Unlock()
			return x, nil
		}
		err := a.err
		a.mu.Unlock()
		if err != nil {
			return Announcement{}, err
		}
		select {
		case <-a.notify:
		case <-ctx.Done():
			return Announcement{}, context.Cause(ctx)
		}
	}
}

// Active lists the paths announced active now, sorted.
func (a *Announcements) Active() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.active))
	for p := range a.active {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Close stops the feed. Broadcasts that follow their announcements on it
// keep it running until they end.
func (a *Announcements) Close() {
	a.mu.Lock()
	if !a.held || a.closed {
		a.mu.Unlock()
		return
	}
	a.held, a.closed, a.queue = false, true, nil
	idle := a.nfollow == 0
	a.ending = idle
	a.mu.Unlock()
	a.wake()
	if idle {
		a.cancel()
	}
}

func (a *Announcements) push(x Announcement) {
	if x.Active && !a.s.mayPublish(x.Path) {
		return // its token does not let the peer publish it (auth.go)
	}
	a.mu.Lock()
	if x.Active {
		x.restart = a.active[x.Path]
		a.active[x.Path] = true
	} else {
		if !a.active[x.Path] {
			a.mu.Unlock()
			return // ended for an unknown path: ignore
		}
		delete(a.active, x.Path)
	}
	if a.held {
		a.queue = append(a.queue, x)
	}
	followers := a.followers[x.Path]
	if len(followers) > 1 {
		followers = append([]*remoteBroadcast(nil), followers...)
	}
	a.mu.Unlock()
	a.wake()
	// On the feed's goroutine, in the feed's order; nothing here waits
	// for the network.
	for _, rb := range followers {
		rb.announced(x)
	}
}

func (a *Announcements) wake() {
	select {
	case a.notify <- struct{}{}:
	default:
	}
}

func (a *Announcements) end(err error) {
	a.mu.Lock()
	if a.err == nil {
		a.err = err
	}
	a.mu.Unlock()
	a.wake()
}

// endErr is why a feed of the session ended with the session: the
// session's own end (a refusal, giving up reconnecting) when it is over,
// ErrClosed otherwise.
func (s *Session) endErr() error {
	if err := s.links.Err(); err != nil {
		return err
	}
	return ErrClosed
}

func (a *Announcements) run() {
	defer a.cancel()
	var gen uint64
	for {
		f, g, err := a.s.links.WaitConn(a.ctx, gen)
		if err != nil {
			a.end(a.s.endErr())
			return
		}
		gen = g
		err = f.Follow(feed{a})
		if a.ctx.Err() != nil {
			a.end(a.s.endErr())
			return
		}
		if f.Gone(err) {
			continue
		}
		// The peer ended the feed: its broadcasts are gone.
		a.mu.Lock()
		var gone []string
		for p := range a.active {
			gone = append(gone, p)
		}
		a.mu.Unlock()
		sort.Strings(gone)
		for _, p := range gone {
			a.push(Announcement{Path: p, diff: true})
		}
		if err == nil {
			err = io.EOF
		}
		a.end(fmt.Errorf("moq: announce stream for %q ended: %w", a.prefix, err))
		return
	}
}

// feed is a feed as a family's announce stream fills it (session.Feed).
type feed struct{ a *Announcements }

func (f feed) Prefix() string                         { return f.a.prefix }
func (f feed) Context() context.Context               { return f.a.ctx }
func (f feed) Reconcile(active []string, madeUp bool) { f.a.reconcile(active, madeUp) }
func (f feed) Push(path string, active bool)          { f.a.push(Announcement{Path: path, Active: active}) }

// Held: a caller holds the feed (Announced); a broadcast's own feed
// (Session.Broadcast: the broadcast is named, as with -b) asks for
// nothing where asking can cost the session.
func (f feed) Held() bool {
	f.a.mu.Lock()
	defer f.a.mu.Unlock()
	return f.a.held
}

// reconcile reports a set of paths the peer has active now (an announce
// stream's initial set, a moq-transport session's namespaces) against
// what the feed reported so far: the paths gone from it as ended (made
// up when madeUp: the peer did not say so, it is the set's first report
// on a new connection), the new ones as active, in the order given. Both
// families' feeds report their sets here.
func (a *Announcements) reconcile(active []string, madeUp bool) {
	set := make(map[string]bool, len(active))
	for _, p := range active {
		set[p] = true
	}
	a.mu.Lock()
	var gone, fresh []string
	for p := range a.active {
		if !set[p] {
			gone = append(gone, p)
		}
	}
	for _, p := range active {
		if !a.active[p] {
			fresh = append(fresh, p)
		}
	}
	a.mu.Unlock()
	sort.Strings(gone)
	for _, p := range gone {
		a.push(Announcement{Path: p, diff: madeUp})
	}
	for _, p := range fresh {
		a.push(Announcement{Path: p, Active: true})
	}
}
