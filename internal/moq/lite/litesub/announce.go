package litesub

import (
	"bufio"
	"context"
	"errors"
	"fmt"

	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moqpath"
	"github.com/moq-export/moq-export/internal/varint"
)

// Feed is an announcement feed as moq-lite's announce stream fills it
// (the core's: a moq-lite announce stream asks for its prefix whether a
// caller holds the feed or not).
type Feed = session.Feed

// follow is one announce stream on a connection, for a feed.
type follow struct {
	c      Conn
	feed   Feed
	prefix string
}

// Follow runs one moq-lite announce stream for feed on the connection
// until it fails or the feed's context ends; a malformed lite-06
// announcement closes the connection with PROTOCOL_VIOLATION.
func (c Conn) Follow(feed Feed) error {
	f := &follow{c: c, feed: feed, prefix: feed.Prefix()}
	return f.run()
}

// path is the broadcast path of an announcement's suffix.
func (f *follow) path(suffix string) string {
	return moqpath.Join(moqpath.Clean(f.prefix), moqpath.Clean(suffix))
}

func (f *follow) run() error {
	c, ctx := f.c, f.feed.Context()
	str, err := c.C.OpenBidi(ctx)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		str.Close()
		session.StopReading(str, wire.CodeCancel)
	})
	defer stop()
	v := c.V
	req := wire.AnnounceRequest{Prefix: f.prefix}
	if _, err := str.Write(req.AppendFor(varint.Append(nil, wire.StreamAnnounce), v)); err != nil {
		return err
	}
	r := bufio.NewReaderSize(str, session.ControlReadBuffer)
	// The initial set: ANNOUNCE_OK's count of announcements (lite-05+) or
	// ANNOUNCE_INIT's list (lite-01/02). lite-03/04 mark no end of it, so
	// there is nothing to diff with after a reconnect.
	var initial []wire.Announce
	if v.TypedAnnounce {
		return f.typed(str, r, v)
	}
	switch {
	case v.AnnounceOK:
		var ok wire.AnnounceOK
		if err := ReadMessage(r, &ok); err != nil {
			session.ResetStream(str, wire.CodeCancel)
			return fmt.Errorf("ANNOUNCE_OK: %w", err)
		}
		for i := uint64(0); i < ok.ActiveCount; i++ {
			var m wire.Announce
			if err := ReadMessage(r, versioned{&m, v}); err != nil {
				return f.streamErr(str, err)
			}
			initial = append(initial, m)
		}
		f.diff(initial)
	case v.AnnounceInit:
		var init wire.AnnounceInit
		if err := ReadMessage(r, &init); err != nil {
			session.ResetStream(str, wire.CodeCancel)
			return fmt.Errorf("ANNOUNCE_INIT: %w", err)
		}
		for _, suffix := range init.Suffixes {
			initial = append(initial, wire.Announce{Status: wire.StatusActive, Suffix: suffix})
		}
		f.diff(initial)
	}
	for {
		var m wire.Announce
		if err := ReadMessage(r, versioned{&m, v}); err != nil {
			return f.streamErr(str, err)
		}
		f.feed.Push(f.path(m.Suffix), m.Status != wire.StatusEnded)
	}
}

// typed reads a lite-06 announce reply: ANNOUNCE_OK, then typed
// announcements whose ids are implicit (every START takes the stream's
// next one). The first ActiveCount STARTs are the initial set. An END or
// UPDATE of an id never assigned or already retired, a START for a route
// already advertised on the stream, or a malformed announcement closes the
// session with PROTOCOL_VIOLATION, as the text requires; an unknown
// announcement type is skipped.
func (f *follow) typed(str session.Stream, r *bufio.Reader, v *wire.Version) error {
	var ok wire.AnnounceOK
	if err := ReadMessage(r, &ok); err != nil {
		if errors.Is(err, session.ErrProtocol) {
			return f.violation(str, fmt.Errorf("ANNOUNCE_OK: %w", err))
		}
		session.ResetStream(str, wire.CodeCancel)
		return fmt.Errorf("ANNOUNCE_OK: %w", err)
	}
	routes := announceRoutes{ids: map[uint64]string{}, active: map[string]bool{}}
	var initial []wire.Announce
	for uint64(len(initial)) < ok.ActiveCount {
		m, err := wire.ReadAnnounceFor(r, v)
		if errors.Is(err, wire.ErrUnknownAnnounce) {
			continue
		}
		if err != nil {
			return f.typedErr(str, err)
		}
		suffix, _, err := routes.apply(m)
		if err != nil {
			return f.violation(str, err)
		}
		// An END or UPDATE inside the initial set changes it; only
		// STARTs are counted.
		if m.Type == wire.AnnounceStart {
			initial = append(initial, wire.Announce{Status: wire.StatusActive, Suffix: suffix})
		}
	}
	// Routes ended inside the initial set are not in it.
	var live []wire.Announce
	for _, m := range initial {
		if routes.active[m.Suffix] {
			live = append(live, m)
		}
	}
	f.diff(live)
	for {
		m, err := wire.ReadAnnounceFor(r, v)
		if errors.Is(err, wire.ErrUnknownAnnounce) {
			continue
		}
		if err != nil {
			return f.typedErr(str, err)
		}
		suffix, active, err := routes.apply(m)
		if err != nil {
			return f.violation(str, err)
		}
		if m.Type == wire.AnnounceUpdate {
			// New hops or costs for a live route: in-flight
			// subscriptions are undisturbed, and so is the feed.
			continue
		}
		f.feed.Push(f.path(suffix), active)
	}
}

// typedErr is how a lite-06 announce stream ends after a read error: a
// malformed announcement is a session violation, anything else ends the
// stream as before.
func (f *follow) typedErr(str session.Stream, err error) error {
	err = ProtocolErr(err)
	if errors.Is(err, session.ErrProtocol) {
		return f.violation(str, err)
	}
	return f.streamErr(str, err)
}

// violation closes the session's connection with PROTOCOL_VIOLATION (the
// lite-06 rule for a malformed or inconsistent announcement); the session
// reconnects as after any loss.
func (f *follow) violation(str session.Stream, err error) error {
	err = fmt.Errorf("%w: announce stream for %q: %w", session.ErrProtocol, f.prefix, err)
	f.c.S.Log.Warn("moq: peer broke the announce rules, closing the session", "err", err)
	session.ResetStream(str, wire.CodeDecode)
	f.c.C.Close(SessionProtocolViolation, "announce protocol violation")
	return err
}

// announceRoutes is the per-stream bookkeeping of lite-06's implicit
// announce ids: the next id a START takes, each live id's route, and the
// routes advertised now.
type announceRoutes struct {
	next   uint64
	ids    map[uint64]string // live id -> route suffix
	active map[string]bool   // route suffixes advertised now
}

// errAnnounceRule is a lite-06 announce stream that breaks the id rules.
var errAnnounceRule = errors.New("announcement breaks the id rules")

// apply records one announcement and returns its route suffix and whether
// the route is active after it.
func (ar *announceRoutes) apply(m wire.Announce) (string, bool, error) {
	switch m.Type {
	case wire.AnnounceStart:
		if ar.active[m.Suffix] {
			return "", false, fmt.Errorf("%w: START for route %q already advertised", errAnnounceRule, m.Suffix)
		}
		ar.ids[ar.next] = m.Suffix
		ar.active[m.Suffix] = true
		ar.next++
		return m.Suffix, true, nil
	case wire.AnnounceEnd:
		suffix, ok := ar.ids[m.ID]
		if !ok {
			return "", false, fmt.Errorf("%w: END of id %d, never assigned or retired", errAnnounceRule, m.ID)
		}
		delete(ar.ids, m.ID)
		delete(ar.active, suffix)
		return suffix, false, nil
	default: // wire.AnnounceUpdate
		suffix, ok := ar.ids[m.ID]
		if !ok {
			return "", false, fmt.Errorf("%w: UPDATE of id %d, never assigned or retired", errAnnounceRule, m.ID)
		}
		return suffix, true, nil
	}
}

// diff reports the initial set of a moq-lite announce stream (see
// Feed.Reconcile).
func (f *follow) diff(initial []wire.Announce) {
	var active []string
	seen := map[string]bool{}
	for _, m := range initial {
		p := f.path(m.Suffix)
		if m.Status == wire.StatusEnded {
			seen[p] = false
			continue
		}
		if _, dup := seen[p]; !dup {
			active = append(active, p)
		}
		seen[p] = true
	}
	live := active[:0]
	for _, p := range active {
		if seen[p] {
			live = append(live, p)
		}
	}
	f.feed.Reconcile(live, true)
}

func (f *follow) streamErr(str session.Stream, err error) error {
	if errors.Is(err, session.ErrProtocol) {
		session.ResetStream(str, wire.CodeDecode)
	} else {
		str.CancelRead(wire.CodeCancel)
		str.Close()
	}
	return err
}
