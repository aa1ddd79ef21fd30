package subscribe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/moq-export/moq-export/subscribe/internal/wire"
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
	if s.err != nil {
		return nil, s.err
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	return ErrClosed
}

func (a *Announcements) run() {
	defer a.cancel()
	var gen uint64
	for {
		c, g, err := a.s.waitConn(a.ctx, gen)
		if err != nil {
			a.end(a.s.endErr())
			return
		}
		gen = g
		err = a.followConn(c)
		if a.ctx.Err() != nil {
			a.end(a.s.endErr())
			return
		}
		if connGone(c, err) {
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

// followConn runs one announce stream on c.
func (a *Announcements) followConn(c conn) error {
	if ic, ok := c.(*ietfConn); ok {
		return a.followIETF(ic)
	}
	str, err := c.OpenBidi(a.ctx)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(a.ctx, func() {
		str.Close()
		stopReading(str, CodeCancel)
	})
	defer stop()
	v := connVersion(c)
	req := wire.AnnounceRequest{Prefix: a.prefix}
	if _, err := str.Write(req.AppendFor(wire.AppendVarint(nil, wire.StreamAnnounce), v)); err != nil {
		return err
	}
	r := bufio.NewReaderSize(str, controlReadBuffer)
	// The initial set: ANNOUNCE_OK's count of announcements (lite-05+) or
	// ANNOUNCE_INIT's list (lite-01/02). lite-03/04 mark no end of it, so
	// there is nothing to diff with after a reconnect.
	var initial []wire.Announce
	switch {
	case v.AnnounceOK:
		var ok wire.AnnounceOK
		if err := readMsg(r, &ok); err != nil {
			resetStream(str, CodeCancel)
			return fmt.Errorf("ANNOUNCE_OK: %w", err)
		}
		for i := uint64(0); i < ok.ActiveCount; i++ {
			var m wire.Announce
			if err := readMsg(r, versioned{&m, v}); err != nil {
				return a.streamErr(str, err)
			}
			initial = append(initial, m)
		}
		a.diff(initial)
	case v.AnnounceInit:
		var init wire.AnnounceInit
		if err := readMsg(r, &init); err != nil {
			resetStream(str, CodeCancel)
			return fmt.Errorf("ANNOUNCE_INIT: %w", err)
		}
		for _, suffix := range init.Suffixes {
			initial = append(initial, wire.Announce{Status: wire.StatusActive, Suffix: suffix})
		}
		a.diff(initial)
	}
	for {
		var m wire.Announce
		if err := readMsg(r, versioned{&m, v}); err != nil {
			return a.streamErr(str, err)
		}
		a.push(Announcement{Path: joinPath(a.prefix, m.Suffix), Active: m.Status != wire.StatusEnded})
	}
}

// diff reports the initial set of an announce stream: the paths the
// caller saw active on an earlier connection that are not in it as ended,
// the new ones as active.
func (a *Announcements) diff(initial []wire.Announce) {
	snapshot := map[string]bool{}
	var order []string
	for _, m := range initial {
		p := joinPath(a.prefix, m.Suffix)
		if m.Status == wire.StatusEnded {
			delete(snapshot, p)
			continue
		}
		if !snapshot[p] {
			order = append(order, p)
		}
		snapshot[p] = true
	}
	a.mu.Lock()
	var gone []string
	for p := range a.active {
		if !snapshot[p] {
			gone = append(gone, p)
		}
	}
	var fresh []string
	for _, p := range order {
		if snapshot[p] && !a.active[p] {
			fresh = append(fresh, p)
		}
	}
	a.mu.Unlock()
	sort.Strings(gone)
	for _, p := range gone {
		a.push(Announcement{Path: p, diff: true})
	}
	for _, p := range fresh {
		a.push(Announcement{Path: p, Active: true})
	}
}

func (a *Announcements) streamErr(str bidiStream, err error) error {
	if errors.Is(err, ErrProtocol) {
		resetStream(str, CodeDecode)
	} else {
		str.CancelRead(CodeCancel)
		str.Close()
	}
	return err
}

// announceQueueMax bounds the announcements queued for one announce stream
// the peer does not read fast enough; beyond it the stream is reset.
const announceQueueMax = 256 << 10

// announceServe is one announce stream the peer opened to us. Updates are
// queued (bounded) and written by the stream's own goroutine, so a peer
// that does not read its announce stream never blocks Publish or any other
// stream: past the queue bound or the write timeout the stream is reset
// with CodeTimeout.
type announceServe struct {
	s      *Session
	v      *wire.Version
	prefix string
	str    bidiStream

	mu      sync.Mutex
	pending []byte // encoded announcements not written yet
	dead    bool   // reset or failed: nothing more is queued
	wake    chan struct{}
	finish  chan struct{} // closed when the peer ended its side: flush and FIN
}

// send queues one announcement when path is under the stream's prefix. It
// never blocks on the network.
func (as *announceServe) send(path string, active bool) error {
	suffix, ok := stripPrefix(path, as.prefix)
	if !ok {
		return nil
	}
	m := as.announce(suffix, active)
	as.mu.Lock()
	if as.dead {
		as.mu.Unlock()
		return errAnnounceStuck
	}
	as.pending = m.AppendFor(as.pending, as.v)
	if len(as.pending) > announceQueueMax {
		as.dead = true
		as.pending = nil
		as.mu.Unlock()
		as.stuck("queue full")
		return errAnnounceStuck
	}
	as.mu.Unlock()
	select {
	case as.wake <- struct{}{}:
	default:
	}
	return nil
}

// announce is the announcement of suffix: an active one carries our hop
// id where the version has no ANNOUNCE_OK to carry it (lite-03/04).
func (as *announceServe) announce(suffix string, active bool) wire.Announce {
	if !active {
		return wire.Announce{Status: wire.StatusEnded, Suffix: suffix}
	}
	m := wire.Announce{Status: wire.StatusActive, Suffix: suffix}
	if !as.v.AnnounceOK {
		m.Hops = []uint64{as.s.hopID}
	}
	return m
}

var errAnnounceStuck = errors.New("moq: announce stream not read by the peer, reset")

// stuck resets the stream of a peer that does not read it.
func (as *announceServe) stuck(why string) {
	as.s.log.Warn("moq: peer does not read its announce stream, reset", "prefix", as.prefix, "why", why)
	resetStream(as.str, CodeTimeout)
}

// writeLoop writes what is queued, each write bounded by the session's
// announce timeout, until finish (then it flushes and FINs) or a failure
// (then it stops reading too, so that the stream's reader returns).
func (as *announceServe) writeLoop() {
	var spare []byte
	for {
		as.mu.Lock()
		out := as.pending
		as.pending = spare[:0]
		dead := as.dead
		as.mu.Unlock()
		if dead {
			return
		}
		if len(out) == 0 {
			spare = out
			select {
			case <-as.wake:
				continue
			case <-as.finish:
			}
			as.mu.Lock()
			more := len(as.pending) > 0
			as.mu.Unlock()
			if more {
				continue
			}
			as.str.Close()
			return
		}
		t := time.AfterFunc(as.s.opts.announceTimeout, func() {
			as.mu.Lock()
			as.dead = true
			as.mu.Unlock()
			as.stuck("write timeout")
		})
		_, err := as.str.Write(out)
		t.Stop()
		if err != nil {
			as.mu.Lock()
			as.dead = true
			as.mu.Unlock()
			as.s.log.Debug("moq: announce stream", "prefix", as.prefix, "err", err)
			as.str.CancelRead(CodeCancel)
			return
		}
		spare = out
	}
}

// serveAnnounce answers the peer's ANNOUNCE_REQUEST with our published
// broadcasts and keeps the stream open for updates.
func (s *Session) serveAnnounce(ctx context.Context, v *wire.Version, str bidiStream, r *bufio.Reader) {
	var req wire.AnnounceRequest
	if !readRequest(str, r, versioned{&req, v}) {
		return
	}
	as := &announceServe{s: s, v: v, prefix: normPath(req.Prefix), str: str,
		wake: make(chan struct{}, 1), finish: make(chan struct{})}
	s.mu.Lock()
	var paths []string
	for p := range s.published {
		if _, ok := stripPrefix(p, as.prefix); ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	// The initial set: ANNOUNCE_OK and announcements (lite-05+),
	// ANNOUNCE_INIT (lite-01/02), announcements alone (lite-03/04).
	var b []byte
	var init wire.AnnounceInit
	for _, p := range paths {
		suffix, _ := stripPrefix(p, as.prefix)
		init.Suffixes = append(init.Suffixes, suffix)
	}
	switch {
	case v.AnnounceOK:
		ok := wire.AnnounceOK{HopID: s.hopID, ActiveCount: uint64(len(paths))}
		b = ok.Append(b)
	case v.AnnounceInit:
		b = init.Append(b)
	}
	if !v.AnnounceInit {
		for _, suffix := range init.Suffixes {
			m := as.announce(suffix, true)
			b = m.AppendFor(b, v)
		}
	}
	// Queued and registered under s.mu, where publications are announced,
	// so none slips between the snapshot and the live updates.
	as.pending = b
	s.annServes[as] = struct{}{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(as.writeLoop)
	defer func() {
		s.mu.Lock()
		delete(s.annServes, as)
		s.mu.Unlock()
		close(as.finish)
		wg.Wait()
	}()
	s.log.Debug("moq: serving announcements", "prefix", as.prefix, "active", len(paths))
	// The peer ends the feed by closing its side; nothing else is sent.
	stop := context.AfterFunc(ctx, func() { stopReading(str, CodeCancel) })
	defer stop()
	_, _ = io.Copy(io.Discard, r)
}

// announceLocked queues a publication change on every announce stream.
// The caller holds s.mu; nothing here waits for the network.
func (s *Session) announceLocked(path string, active bool) {
	close(s.pubChanged)
	s.pubChanged = make(chan struct{})
	for as := range s.annServes {
		if err := as.send(path, active); err != nil {
			s.log.Debug("moq: announce", "path", path, "err", err)
		}
	}
}
