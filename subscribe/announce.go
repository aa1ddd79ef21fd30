package subscribe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

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
}

// Announced starts discovery of the peer's broadcasts under prefix ("" for
// all) and returns the feed. The feed follows the session until Close or
// the session's end; ctx bounds nothing but is kept for symmetry with the
// other calls.
func (s *Session) Announced(ctx context.Context, prefix string) (*Announcements, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return s.announced(prefix), nil
}

func (s *Session) announced(prefix string) *Announcements {
	ctx, cancel := context.WithCancel(s.ctx)
	a := &Announcements{
		s: s, prefix: normPath(prefix), ctx: ctx, cancel: cancel,
		active: map[string]bool{}, notify: make(chan struct{}, 1),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		a.run()
	}()
	return a
}

// Next returns the next announcement, waiting for one until ctx ends. After
// the feed ended it returns the reason (ErrClosed after Close or the
// session's end).
func (a *Announcements) Next(ctx context.Context) (Announcement, error) {
	for {
		a.mu.Lock()
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

// Close stops the feed.
func (a *Announcements) Close() { a.cancel() }

func (a *Announcements) push(x Announcement) {
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
	a.queue = append(a.queue, x)
	a.mu.Unlock()
	a.wake()
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

func (a *Announcements) run() {
	defer a.cancel()
	var gen uint64
	for {
		c, g, err := a.s.waitConn(a.ctx, gen)
		if err != nil {
			a.end(ErrClosed)
			return
		}
		gen = g
		err = a.follow(c)
		if a.ctx.Err() != nil {
			a.end(ErrClosed)
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

// follow runs one announce stream on c.
func (a *Announcements) follow(c conn) error {
	str, err := c.OpenBidi(a.ctx)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(a.ctx, func() {
		str.Close()
		str.CancelRead(CodeCancel)
	})
	defer stop()
	req := wire.AnnounceRequest{Prefix: a.prefix}
	if _, err := str.Write(req.Append(wire.AppendVarint(nil, wire.StreamAnnounce))); err != nil {
		return err
	}
	r := bufio.NewReader(str)
	var ok wire.AnnounceOK
	if err := readMsg(r, &ok); err != nil {
		resetStream(str, CodeCancel)
		return fmt.Errorf("ANNOUNCE_OK: %w", err)
	}
	// The first ActiveCount announcements are the snapshot; diff it with
	// what the caller saw on an earlier connection.
	snapshot := map[string]bool{}
	var order []string
	for i := uint64(0); i < ok.ActiveCount; i++ {
		var m wire.Announce
		if err := readMsg(r, &m); err != nil {
			return a.streamErr(str, err)
		}
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
	for {
		var m wire.Announce
		if err := readMsg(r, &m); err != nil {
			return a.streamErr(str, err)
		}
		a.push(Announcement{Path: joinPath(a.prefix, m.Suffix), Active: m.Status != wire.StatusEnded})
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

// announceServe is one announce stream the peer opened to us.
type announceServe struct {
	prefix string
	mu     sync.Mutex
	str    bidiStream
	buf    []byte
}

// send writes one announcement when path is under the stream's prefix.
func (as *announceServe) send(path string, active bool) error {
	suffix, ok := stripPrefix(path, as.prefix)
	if !ok {
		return nil
	}
	m := wire.Announce{Status: wire.StatusEnded, Suffix: suffix}
	if active {
		m.Status = wire.StatusActive
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	as.buf = m.Append(as.buf[:0])
	_, err := as.str.Write(as.buf)
	return err
}

// serveAnnounce answers the peer's ANNOUNCE_REQUEST with our published
// broadcasts and keeps the stream open for updates.
func (s *Session) serveAnnounce(ctx context.Context, str bidiStream, r *bufio.Reader) {
	var req wire.AnnounceRequest
	if !readRequest(str, r, &req) {
		return
	}
	as := &announceServe{prefix: normPath(req.Prefix), str: str}
	s.mu.Lock()
	var paths []string
	for p := range s.published {
		if _, ok := stripPrefix(p, as.prefix); ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	ok := wire.AnnounceOK{HopID: s.hopID, ActiveCount: uint64(len(paths))}
	b := ok.Append(nil)
	for _, p := range paths {
		suffix, _ := stripPrefix(p, as.prefix)
		m := wire.Announce{Status: wire.StatusActive, Suffix: suffix}
		b = m.Append(b)
	}
	// Registered under s.mu so no publication slips between the snapshot
	// and the live updates.
	s.annServes[as] = struct{}{}
	as.mu.Lock()
	s.mu.Unlock()
	_, err := str.Write(b)
	as.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.annServes, as)
		s.mu.Unlock()
	}()
	if err != nil {
		return
	}
	s.log.Debug("moq: serving announcements", "prefix", as.prefix, "active", len(paths))
	// The peer ends the feed by closing its side; nothing else is sent.
	stop := context.AfterFunc(ctx, func() { str.CancelRead(CodeCancel) })
	defer stop()
	_, _ = io.Copy(io.Discard, r)
	str.Close()
}

// announce tells every announce stream about a publication change.
func (s *Session) announce(path string, active bool) {
	s.mu.Lock()
	serves := make([]*announceServe, 0, len(s.annServes))
	for as := range s.annServes {
		serves = append(serves, as)
	}
	s.mu.Unlock()
	for _, as := range serves {
		if err := as.send(path, active); err != nil {
			s.log.Debug("moq: announce", "path", path, "err", err)
		}
	}
}
