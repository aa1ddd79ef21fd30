package litepub

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moqpath"
)

// announceQueueMax bounds the announcements queued for one announce stream
// the peer does not read fast enough; beyond it the stream is reset.
const announceQueueMax = 256 << 10

// announceServe is one announce stream the peer opened to us. Updates are
// queued (bounded) and written by the stream's own goroutine, so a peer
// that does not read its announce stream never blocks Publish or any other
// stream: past the queue bound or the write timeout the stream is reset
// with CodeTimeout.
type announceServe struct {
	s      *Publisher
	v      *wire.Version
	prefix string
	str    session.Stream

	mu      sync.Mutex
	pending []byte // encoded announcements not written yet
	dead    bool   // reset or failed: nothing more is queued
	wake    chan struct{}
	finish  chan struct{} // closed when the peer ended its side: flush and FIN

	// lite-06 implicit ids, under the publications' lock: each advertised
	// route's id and the id the next START takes.
	ids    map[string]uint64
	nextID uint64
}

// send queues one announcement when path is under the stream's prefix. It
// never blocks on the network.
func (as *announceServe) send(path string, active bool) error {
	suffix, ok := moqpath.CutPrefix(moqpath.Clean(path), as.prefix)
	if !ok {
		return nil
	}
	m, ok := as.announce(suffix, active)
	if !ok {
		return nil
	}
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
// id where the version has no ANNOUNCE_OK to carry it (lite-03/04). On
// lite-06 an active route takes the stream's next id with a START (a route
// already advertised gets an UPDATE instead, never a second START) and an
// ended one is the END of its id; ok is false when there is nothing to
// send (the END of a route never started). Called under the publications' lock.
func (as *announceServe) announce(suffix string, active bool) (m wire.Announce, ok bool) {
	if as.v.TypedAnnounce {
		id, started := as.ids[suffix]
		switch {
		case active && started:
			return wire.Announce{Type: wire.AnnounceUpdate, ID: id}, true
		case active:
			if as.ids == nil {
				as.ids = map[string]uint64{}
			}
			as.ids[suffix] = as.nextID
			as.nextID++
			return wire.Announce{Type: wire.AnnounceStart, Suffix: suffix}, true
		case started:
			delete(as.ids, suffix)
			return wire.Announce{Type: wire.AnnounceEnd, ID: id}, true
		}
		return m, false
	}
	if !active {
		return wire.Announce{Status: wire.StatusEnded, Suffix: suffix}, true
	}
	m = wire.Announce{Status: wire.StatusActive, Suffix: suffix}
	if !as.v.AnnounceOK {
		m.Hops = []uint64{as.s.HopID}
	}
	return m, true
}

var errAnnounceStuck = errors.New("moq: announce stream not read by the peer, reset")

// stuck resets the stream of a peer that does not read it.
func (as *announceServe) stuck(why string) {
	as.s.Log.Warn("moq: peer does not read its announce stream, reset", "prefix", as.prefix, "why", why)
	resetStream(as.str, wire.CodeTimeout)
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
		t := time.AfterFunc(as.s.AnnounceTimeout, func() {
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
			as.s.Log.Debug("moq: announce stream", "prefix", as.prefix, "err", err)
			as.str.CancelRead(wire.CodeCancel)
			return
		}
		spare = out
	}
}

// ServeAnnounce answers the peer's ANNOUNCE_REQUEST with our published
// broadcasts and keeps the stream open for updates.
func (s *Publisher) ServeAnnounce(ctx context.Context, v *wire.Version, str session.Stream, r *bufio.Reader) {
	var req wire.AnnounceRequest
	if !readRequest(str, r, versioned{&req, v}) {
		return
	}
	as := &announceServe{s: s, v: v, prefix: moqpath.Clean(req.Prefix), str: str,
		wake: make(chan struct{}, 1), finish: make(chan struct{})}
	active := 0
	// The initial set is queued and the stream follows the publications
	// in one step, so none slips between the snapshot and the updates.
	stop := s.Pubs.Follow(func(published []string) {
		var paths []string
		for _, p := range published {
			if _, ok := moqpath.CutPrefix(p, as.prefix); ok {
				paths = append(paths, p)
			}
		}
		active = len(paths)
		// The initial set: ANNOUNCE_OK and announcements (lite-05+),
		// ANNOUNCE_INIT (lite-01/02), announcements alone (lite-03/04).
		var b []byte
		var init wire.AnnounceInit
		for _, p := range paths {
			suffix, _ := moqpath.CutPrefix(p, as.prefix)
			init.Suffixes = append(init.Suffixes, suffix)
		}
		switch {
		case v.AnnounceOK:
			ok := wire.AnnounceOK{HopID: s.HopID, ActiveCount: uint64(len(paths))}
			b = ok.Append(b)
		case v.AnnounceInit:
			b = init.Append(b)
		}
		if !v.AnnounceInit {
			for _, suffix := range init.Suffixes {
				if m, ok := as.announce(suffix, true); ok {
					b = m.AppendFor(b, v)
				}
			}
		}
		as.pending = b
	}, func(path string, active bool) {
		if err := as.send(path, active); err != nil {
			s.Log.Debug("moq: announce", "path", path, "err", err)
		}
	})
	var wg sync.WaitGroup
	wg.Go(as.writeLoop)
	defer func() {
		stop()
		close(as.finish)
		wg.Wait()
	}()
	s.Log.Debug("moq: serving announcements", "prefix", as.prefix, "active", active)
	// The peer ends the feed by closing its side; nothing else is sent.
	stopRead := context.AfterFunc(ctx, func() { stopReading(str, wire.CodeCancel) })
	defer stopRead()
	_, _ = io.Copy(io.Discard, r)
}
