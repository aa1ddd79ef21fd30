package subscribe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/model"
)

// The subscriber side of a moq-transport session: SUBSCRIBE and its
// subgroup streams, FETCH for backfills, and namespace discovery.

// ietfDefaultTimescale is the timescale of object timestamps when the
// track declared none (drafts before 17 have no Track Properties): the
// hang containers carry their own microsecond timestamps, so only catalog
// tracks read it.
const ietfDefaultTimescale = 1_000_000

// ietfAliasWait bounds how long a subgroup stream waits for the
// SUBSCRIBE_OK that names its track alias (the data stream may overtake
// the control stream).
const ietfAliasWait = 2 * time.Second

// An ietfSubscription is one moq-transport SUBSCRIBE in its wire: the
// Request and its SUBSCRIBE_OK, then the messages that come through the
// Request (req.msgs, req.ended) until PUBLISH_DONE; its subgroup streams
// are routed by track alias (session.Subscribe runs the rest).
type ietfSubscription struct {
	session.AttemptTrack
	ctx context.Context
	ic  *ietfConn
	req *ietfRequest // nil before the request was made
	ok  ietf.SubscribeOK
	// startPending: the start SUBSCRIBE_OK gave is still to be told.
	startPending bool
	// pending is a message the parked wait took.
	pending *ietfMsg

	// wakeCh is settle's: it ends the parked wait, which parks afresh.
	wakeCh chan struct{}
}

func (ic *ietfConn) NewSubscription(ctx context.Context, rt *session.Remote) session.SubscriptionWire {
	return &ietfSubscription{AttemptTrack: session.AttemptTrack{R: rt, C: ic}, ctx: ctx, ic: ic, wakeCh: make(chan struct{}, 1)}
}

// Accept sends SUBSCRIBE and waits for SUBSCRIBE_OK, which names the
// timescale (drafts 17+) and the newest group. A SUBSCRIBE_ERROR, a
// Request that ends or times out unanswered, or a reset refuses it.
func (is *ietfSubscription) Accept(ctx context.Context) (uint64, bool, error) {
	rt, ic := is.R, is.ic
	s := sessionOf(rt)
	if isCatalogTrack(rt.Name) && s.compat.closesOn(rt.Broadcast, rt.Name) {
		// Asked once, it closed the session: the catalog watcher goes on
		// to another name.
		return 0, false, fmt.Errorf("%w: SUBSCRIBE %q/%q: the server closed the session on it before", ErrRefused, rt.Broadcast, rt.Name)
	}
	req, err := ic.newRequest(ctx, false)
	if err != nil {
		return 0, false, err
	}
	is.req = req
	filter := ietf.Filter{Type: ietf.FilterLargestObject}
	if ic.v >= ietf.Draft20 {
		// The start of the current group.
		filter = ietf.Filter{Type: ietf.FilterRelative, Groups: 1}
	}
	m := ietf.Subscribe{
		RequestID: req.id, Namespace: rt.Broadcast, Track: rt.Name, Priority: priorityOf(rt.Name),
		GroupOrder: ietf.DefaultGroupOrder, Forward: true, Filter: filter,
	}
	if s.compat.minimalParams.Load() {
		// The server closes the session on optional parameters: ask for
		// the defaults, which travel as none.
		m.Priority, m.Filter = ietf.DefaultSubscriberPriority, ietf.DefaultFilter
	}
	optional := ic.v != ietf.Draft14 && len(m.OptionalParams(ic.v)) > 0
	if optional {
		ic.asked.optional.Store(true)
	}
	asksCatalog := !optional && isCatalogTrack(rt.Name)
	if asksCatalog {
		ic.asked.catalogAsked(rt.Broadcast, rt.Name, false)
	}
	if err := req.send(ietf.TypeSubscribe, &m); err != nil {
		return 0, false, fmt.Errorf("send SUBSCRIBE: %w", err)
	}
	resp, err := ic.readRequest(ctx, req, s.opts.RequestTimeout)
	if err == nil && optional {
		ic.asked.optionalAnswered.Store(true)
	}
	if err == nil && asksCatalog {
		ic.asked.catalogAsked(rt.Broadcast, rt.Name, true)
	}
	if err != nil {
		if errors.Is(err, errRequestTimeout) || errors.Is(err, errRequestEnded) {
			req.cancel(ietf.TypeUnsubscribe)
			return 0, false, fmt.Errorf("%w: SUBSCRIBE %q/%q: %w", ErrRefused, rt.Broadcast, rt.Name, err)
		}
		if _, reset := errors.AsType[*ResetError](err); reset && !connGone(ic, err) {
			return 0, false, fmt.Errorf("%w: SUBSCRIBE %q/%q: %w", ErrRefused, rt.Broadcast, rt.Name, err)
		}
		return 0, false, err
	}
	switch resp.typ {
	case ietf.TypeSubscribeOK:
		if err := ietf.Decode(resp.body, &is.ok, ic.v); err != nil {
			return 0, false, fmt.Errorf("SUBSCRIBE_OK: %w", protocolErr(err))
		}
	case ietf.TypeRequestError:
		var re ietf.RequestError
		if err := ietf.Decode(resp.body, &re, ic.v); err != nil {
			return 0, false, fmt.Errorf("SUBSCRIBE_ERROR: %w", protocolErr(err))
		}
		return 0, false, fmt.Errorf("%w: SUBSCRIBE %q/%q: %w", ErrRefused, rt.Broadcast, rt.Name, &re)
	default:
		return 0, false, fmt.Errorf("%w: message %#x answers SUBSCRIBE", ErrProtocol, resp.typ)
	}
	is.startPending = true
	s.log.Debug("moq: SUBSCRIBE_OK", "broadcast", rt.Broadcast, "track", rt.Name, "alias", is.ok.TrackAlias, "version", ic.v)
	if is.ok.Timescale == 0 {
		return ietfDefaultTimescale, true, nil
	}
	return is.ok.Timescale, true, nil
}

// Route routes the subgroup streams of the track alias SUBSCRIBE_OK named
// to sub.
func (is *ietfSubscription) Route(sub *session.Sub) error {
	sub.ID, sub.Router = is.req.id, is
	if err := is.ic.addAlias(is.ok.TrackAlias, sub); err != nil {
		is.req.cancel(ietf.TypeUnsubscribe)
		return err
	}
	return nil
}

func (is *ietfSubscription) Unroute(sub *session.Sub) { is.ic.forgetAlias(is.ok.TrackAlias, sub) }

// request: SUBSCRIBE went out in accept.
func (is *ietfSubscription) Request(context.Context, *session.Sub, bool) error { return nil }

// Ready reports whether a message, or the end of the request, the attempt
// or the connection, is waiting.
func (is *ietfSubscription) Ready() bool {
	if is.startPending || is.pending != nil {
		return true
	}
	select {
	case <-is.req.ended:
		return true
	default:
	}
	return len(is.req.msgs) > 0 || is.ctx.Err() != nil || is.ic.Context().Err() != nil
}

// Next tells the start SUBSCRIBE_OK gave first, then reads the request's
// messages: PUBLISH_DONE, or the request's end without it, is the
// publisher's end.
func (is *ietfSubscription) Next() (session.Event, error) {
	if is.startPending {
		is.startPending = false
		if l := is.ok.Largest; l != nil {
			// The publisher starts at the newest group (the reference
			// and this package from its first object, a publisher that
			// follows the filter to the letter after Largest, so that
			// group is skipped as partial and costs a consumer's
			// latency at most).
			return session.Event{Kind: session.EventStart, Start: session.StartNamed, Group: l.Group}, nil
		}
		return session.Event{Kind: session.EventStart, Start: session.StartUnnamed}, nil
	}
	var msg ietfMsg
	if is.pending != nil {
		msg, is.pending = *is.pending, nil
	} else {
		var err error
		if msg, err = is.ic.readRequest(is.ctx, is.req, 0); err != nil {
			if errors.Is(err, errRequestEnded) && is.ctx.Err() == nil && !connGone(is.ic, err) {
				// The publisher closed the request stream without
				// PUBLISH_DONE: the subscription is over all the same.
				return session.Event{Kind: session.EventDone}, nil
			}
			return session.Event{}, err
		}
	}
	if msg.typ != ietf.TypePublishDone {
		is.ic.log.Debug("moq: unexpected message for a subscription", "type", msg.typ)
		return session.Event{}, nil
	}
	var done ietf.PublishDone
	if err := ietf.Decode(msg.body, &done, is.ic.v); err != nil {
		return session.Event{}, fmt.Errorf("PUBLISH_DONE: %w", protocolErr(err))
	}
	rt := is.R
	is.ic.log.Debug("moq: subscription done", "broadcast", rt.Broadcast, "track", rt.Name,
		"status", done.Status, "streams", done.StreamCount)
	// The group streams may still be on their way: all StreamCount of
	// them when the publisher counted, then as for moq-lite.
	ev := session.Event{Kind: session.EventDone, Streams: done.StreamCount}
	switch done.Status {
	case ietf.DoneTrackEnded, ietf.DoneSubscriptionEnded:
	case ietf.DoneGoingAway:
		ev.Err = errGoingAway
	default:
		ev.Err = fmt.Errorf("moq: publisher ended %q/%q: status %d: %q", rt.Broadcast, rt.Name, done.Status, done.Reason)
	}
	return ev, nil
}

func (is *ietfSubscription) Failed(err error, _ bool) error { return connLoss(is.ic, err) }

func (is *ietfSubscription) Cancel() { is.req.cancel(ietf.TypeUnsubscribe) }

func (is *ietfSubscription) Release(error, bool) {
	if is.req != nil {
		is.ic.endRequest(is.req)
	}
}

// Wait is the parked goroutine's: for the request's next message or end,
// the attempt's or the connection's end, or settle's wake.
func (is *ietfSubscription) Wait() (woken bool) {
	select {
	case m := <-is.req.msgs:
		is.pending = &m
	case <-is.req.ended:
	case <-is.ctx.Done():
	case <-is.ic.Context().Done():
	case <-is.wakeCh:
		return true
	}
	return false
}

// resettle: a wait settle's wake ended parks afresh; a wake that lost the
// race to a message is dropped.
func (is *ietfSubscription) Resettle(woken bool) bool {
	if woken {
		return true
	}
	select {
	case <-is.wakeCh:
	default:
	}
	return false
}

func (is *ietfSubscription) Wake() { is.wakeCh <- struct{}{} }

// cancel withdraws req: with message typ (UNSUBSCRIBE, FETCH_CANCEL,
// UNSUBSCRIBE_NAMESPACE) on the control stream, by closing the request's
// own stream otherwise.
func (req *ietfRequest) cancel(typ uint64) {
	if req.str != nil {
		req.closeStream()
		return
	}
	_ = req.ic.writeControl(typ, &ietf.RequestID{ID: req.id})
}

// addAlias routes subgroup streams of alias to sub.
func (ic *ietfConn) addAlias(alias uint64, sub *session.Sub) error {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if _, dup := ic.aliases[alias]; dup {
		return fmt.Errorf("%w: track alias %d already in use", ErrProtocol, alias)
	}
	ic.aliases[alias] = sub
	close(ic.aliasCh)
	ic.aliasCh = make(chan struct{})
	return nil
}

// forgetAlias stops routing alias to sub: later streams are refused, and
// none joins sub.Groups after this returns.
func (ic *ietfConn) forgetAlias(alias uint64, sub *session.Sub) {
	ic.mu.Lock()
	if ic.aliases[alias] == sub {
		delete(ic.aliases, alias)
	}
	ic.mu.Unlock()
}

// joinAlias returns the subscription of alias, waiting a little for its
// SUBSCRIBE_OK, and counts the caller in its group streams.
func (ic *ietfConn) joinAlias(alias uint64) *session.Sub {
	t := time.NewTimer(ietfAliasWait)
	defer t.Stop()
	for {
		ic.mu.Lock()
		sub, ch := ic.aliases[alias], ic.aliasCh
		if sub != nil {
			sub.Groups.Add(1)
		}
		ic.mu.Unlock()
		if sub != nil {
			return sub
		}
		select {
		case <-ch:
		case <-t.C:
			return nil
		case <-ic.Context().Done():
			return nil
		}
	}
}

// handleIETFUni reads one incoming data stream: a subgroup of a
// subscription or the objects of a fetch.
func (s *Session) handleIETFUni(ic *ietfConn, str recvStream, t session.OrderTicket) {
	r := bufio.NewReaderSize(str, groupReadBuffer)
	typ, err := ietf.ReadVarint(r, ic.v)
	if err != nil {
		str.CancelRead(CodeCancel)
		return
	}
	if typ == ietf.StreamFetch {
		t.Done()
		id, err := ietf.ReadVarint(r, ic.v)
		if err != nil {
			str.CancelRead(ietfProtocolViolation)
			return
		}
		ic.mu.Lock()
		req := ic.reqs[id]
		ic.mu.Unlock()
		if req == nil {
			str.CancelRead(CodeCancel)
			return
		}
		select {
		case req.data <- &ietfData{str: str, r: r}:
		default:
			str.CancelRead(ietfProtocolViolation)
		}
		return
	}
	h, err := ietf.ReadSubgroupHeader(r, typ, ic.v)
	if err != nil {
		if !connGone(ic, err) {
			s.log.Warn("moq: bad data stream header", "type", typ, "err", err)
		}
		str.CancelRead(ietfProtocolViolation)
		return
	}
	s.readIETFSubgroup(ic, str, r, h, t)
}

// readIETFSubgroup turns one subgroup stream into a model group.
func (s *Session) readIETFSubgroup(ic *ietfConn, str recvStream, r *bufio.Reader, h ietf.SubgroupHeader, t session.OrderTicket) {
	t.Name(h.TrackAlias, h.Group)
	sub := ic.joinAlias(h.TrackAlias)
	if sub == nil {
		s.log.Debug("moq: data stream for an unknown track alias", "alias", h.TrackAlias)
		str.CancelRead(CodeCancel)
		return
	}
	defer sub.Groups.Done()
	sub.GroupArrived(h.Group)
	sub.WaitStarted(h.Group)
	defer sub.Created(h.Group)
	rt := sub.Remote
	log := s.log.With("track", rt.Name, "group", h.Group)
	// The group ends with its subscription: STOP_SENDING wakes the read.
	stop := context.AfterFunc(sub.Ctx, func() { session.StopReading(str, CodeCancel) })
	defer stop()
	or := ietf.ObjectReader{R: r, V: ic.v, Header: h}
	pump := session.Pump{Dec: rt.Pack.Decoder(), Log: s.log, Track: rt.Name, Seq: h.Group}
	pump.Dec.Verbatim = s.opts.Objects
	defer pump.Dec.Close()
	var g *model.Group
	skip := 0 // objects the track already has (a group cut by a lost connection)
	end := func(err error) {
		if g != nil {
			g.Close(err)
		}
	}
	for {
		obj, err := or.Next()
		if err != nil {
			_, reset := errors.AsType[*ResetError](err)
			sub.EndGroup(str, g, h.Group, protocolErr(err), err != io.EOF && connGone(ic, err), reset, ietfProtocolViolation)
			return
		}
		if g == nil {
			// A subscription that joined mid-group (or a stream that does
			// not start at the group's first object) cannot be decoded
			// from its start: skip that group.
			if !h.FirstObject || obj.ID != 0 || h.Subgroup != 0 {
				log.Debug("moq: group joined past its start, skipped", "object", obj.ID, "subgroup", h.Subgroup)
				str.CancelRead(CodeCancel)
				return
			}
			var adopted bool
			if g, skip, adopted, err = sub.CreateGroup(h.Group, t); adopted {
				log.Debug("moq: completing a cut group", "have", skip)
			}
			if err != nil {
				g = nil
				log.Debug("moq: group dropped", "err", err)
				str.CancelRead(CodeCancel)
				return
			}
			pump.Group, pump.Skip = g, skip
		}
		switch obj.Status {
		case ietf.StatusEndOfGroup, ietf.StatusEndOfTrack:
			end(nil)
			str.CancelRead(CodeCancel)
			return
		case ietf.StatusDoesNotExist:
			continue
		}
		o, err := ietfObject(obj, sub.Timescale, ic.v)
		if err == nil {
			err = pump.Feed(o)
		}
		if errors.Is(err, session.ErrGroupClosed) {
			str.CancelRead(CodeCancel)
			return
		}
		if err != nil {
			err = session.DecodeErr(err)
			str.CancelRead(CodeDecode)
			log.Warn("moq: bad object", "object", obj.ID, "err", err)
			end(fmt.Errorf("group %d of %q: %w", h.Group, rt.Name, err))
			return
		}
	}
}

// ietfObject is a moq-transport object as package hang reads it: its
// payload and its Timestamp extension (in the track's timescale unless
// the object names its own).
func ietfObject(obj ietf.Object, timescale uint64, v ietf.Version) (hang.Object, error) {
	ts, scale, haveTS, err := ietf.ObjectTimestamp(obj.Extensions, timescale, v)
	if err != nil {
		return hang.Object{}, fmt.Errorf("%w: object extensions: %w", ErrProtocol, err)
	}
	if ts > math.MaxInt64 {
		return hang.Object{}, fmt.Errorf("%w: object timestamp %d", ErrProtocol, ts)
	}
	return hang.Object{Payload: obj.Payload, Timestamp: int64(ts), Timescale: scale, HasTimestamp: haveTS}, nil
}

// openFetch sends a standalone FETCH of r's group on ic and waits for its
// data stream, which races FETCH_OK: that stream is the reply. A refusal
// is errNoFetch. moq-transport asks whole groups (r names no frames).
func (ic *ietfConn) OpenFetch(ctx context.Context, rt *session.Remote, timescale uint64, r session.FetchRange, what string) (_ session.FetchReply, err error) {
	if sessionOf(rt).compat.noFetch.Load() {
		return nil, fmt.Errorf("%w: the server closes the session on FETCH", errNoFetch)
	}
	req, err := ic.newRequest(ctx, false)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			ic.endRequest(req)
		}
	}()
	m := ietf.Fetch{
		RequestID: req.id, Priority: priorityOf(rt.Name), GroupOrder: ietf.GroupOrderAscending,
		Type: ietf.FetchStandalone, Namespace: rt.Broadcast, Track: rt.Name,
		// End object 0: the whole end group.
		Start: ietf.Location{Group: r.Group}, End: ietf.Location{Group: r.Group},
	}
	ic.asked.fetch.Store(true)
	if err := req.send(ietf.TypeFetch, &m); err != nil {
		return nil, fmt.Errorf("send FETCH: %w", err)
	}
	cancel := func() { req.cancel(ietf.TypeFetchCancel) }
	// FETCH_OK and the data stream race each other.
	t := time.NewTimer(rt.Host.Config().RequestTimeout)
	defer t.Stop()
	var data *ietfData
	ended := req.ended
	for data == nil {
		select {
		case resp := <-req.msgs:
			ic.asked.fetchAnswered.Store(true)
			switch resp.typ {
			case ietf.TypeFetchOK:
				// The request stream may end now; the data stream is
				// still to come.
				ended = nil
			case ietf.TypeFetchError, ietf.TypeRequestError:
				var re ietf.RequestError
				_ = ietf.Decode(resp.body, &re, ic.v)
				return nil, fmt.Errorf("%w: %s: %w", errNoFetch, what, &re)
			}
		case data = <-req.data:
		case <-ended:
			select {
			case resp := <-req.msgs:
				if resp.typ == ietf.TypeFetchOK {
					ended = nil
					continue
				}
			default:
			}
			return nil, fmt.Errorf("%w: %s: %w", errNoFetch, what, errRequestEnded)
		case <-t.C:
			cancel()
			return nil, fmt.Errorf("%w: %s: %w", errNoFetch, what, errRequestTimeout)
		case <-ctx.Done():
			cancel()
			return nil, context.Cause(ctx)
		case <-ic.Context().Done():
			return nil, connCause(ic)
		}
	}
	return &ietfFetchReply{ic: ic, req: req, data: data, fr: ietf.FetchObjectReader{R: data.r, V: ic.v},
		group: r.Group, timescale: timescale}, nil
}

// ietfFetchReply is a moq-transport FETCH's answer: the objects on its
// data stream.
type ietfFetchReply struct {
	ic               *ietfConn
	req              *ietfRequest
	data             *ietfData
	fr               ietf.FetchObjectReader
	group, timescale uint64
	bad              bool // an object's extensions did not parse
}

func (f *ietfFetchReply) Next() (hang.Object, bool, error) {
	obj, err := f.fr.Next()
	if err != nil {
		return hang.Object{}, false, fetchReadErr(err)
	}
	if obj.Group != f.group || obj.Status != ietf.StatusNormal {
		return hang.Object{}, true, nil
	}
	o, err := ietfObject(obj, f.timescale, f.ic.v)
	f.bad = err != nil
	return o, false, err
}

func (f *ietfFetchReply) Interrupt() { f.data.str.SetReadDeadline(time.Now()) }

func (f *ietfFetchReply) End(err error, bad bool) {
	switch {
	case err == nil:
	case bad || f.bad:
		f.data.str.CancelRead(CodeDecode)
	default:
		f.data.str.CancelRead(CodeCancel)
	}
	f.ic.endRequest(f.req)
}

// followIETF runs one announcement feed on ic: SUBSCRIBE_NAMESPACE for
// the prefix, then the namespaces the peer publishes under it (answers to
// it, or unsolicited PUBLISH_NAMESPACE) as announcements. Draft 15 defines
// no NAMESPACE message (its answers are PUBLISH_NAMESPACE requests, as in
// draft 14); NAMESPACE and NAMESPACE_DONE entries that a peer sends on the
// draft-15 control stream anyway (draft 16's shapes) count for the feed
// when it is the only one on the connection (ietfConn.routeNamespace). It returns when
// the feed is closed or the connection is gone.
func (a *Announcements) followIETF(ic *ietfConn) error {
	// A broadcast's own feed (Session.Broadcast: the broadcast is named,
	// as with -b) asks for nothing: servers that tie a session to one
	// stream (MediaMTX) close the session on SUBSCRIBE_NAMESPACE, and
	// SUBSCRIBE finds the broadcast without it. It follows the namespaces
	// the peer publishes unasked. So does every feed on a server known to
	// refuse namespace discovery.
	a.mu.Lock()
	ask := a.held
	a.mu.Unlock()
	if ask && a.s.compat.noDiscovery.Load() {
		// A caller's feed has nothing to follow: it ends, saying why.
		a.s.compat.sayNoDiscovery(a.s.log)
		return ErrNoDiscovery
	}
	var (
		req   *ietfRequest
		msgs  chan ietfMsg
		ended chan struct{}
	)
	if ask {
		// Drafts 16+ answer on a stream of the request's own, with
		// NAMESPACE and NAMESPACE_DONE entries.
		var err error
		req, err = ic.newRequest(a.ctx, ic.v >= ietf.Draft16)
		if err != nil {
			return err
		}
		ic.mu.Lock()
		req.nsFeed = true
		ic.mu.Unlock()
		defer ic.endRequest(req)
		m := ietf.SubscribeNamespace{RequestID: req.id, Prefix: a.prefix, Options: 1}
		ic.asked.discovery.Store(true)
		if err := req.send(ietf.SubscribeNamespaceType(ic.v), &m); err != nil {
			return err
		}
		defer func() {
			if ic.Context().Err() == nil && req.str == nil {
				req.cancel(ietf.TypeUnsubscribeNamespace)
			}
		}()
		msgs, ended = req.msgs, req.ended
	}
	entries := map[string]bool{} // NAMESPACE entries of this request
	first := true
	for {
		if ic.Context().Err() != nil {
			return connCause(ic)
		}
		ic.mu.Lock()
		var active []string
		for p := range ic.peerNS {
			if _, ok := stripPrefix(p, a.prefix); ok {
				active = append(active, p)
			}
		}
		for p := range entries {
			if _, dup := ic.peerNS[p]; !dup {
				active = append(active, p)
			}
		}
		ch := ic.nsCh
		ic.mu.Unlock()
		sort.Strings(active)
		// Gone since an earlier connection: made up; gone on this one:
		// PUBLISH_NAMESPACE_DONE, the broadcast ended.
		a.reconcile(active, first)
		first = false
		select {
		case <-ch:
		case resp := <-msgs:
			ic.asked.discoveryAnswered.Store(true)
			switch resp.typ {
			case ietf.TypeSubscribeNamespaceErr, ietf.TypeRequestError:
				var re ietf.RequestError
				_ = ietf.Decode(resp.body, &re, ic.v)
				ic.log.Debug("moq: SUBSCRIBE_NAMESPACE refused; following unsolicited namespaces only", "prefix", a.prefix, "err", &re)
			case ietf.TypeNamespace, ietf.TypeNamespaceDone:
				if ic.v == ietf.Draft14 {
					break // draft 14's PUBLISH_NAMESPACE_ERROR shares 0x08
				}
				var e ietf.Namespace
				if err := ietf.Decode(resp.body, &e, ic.v); err != nil {
					return fmt.Errorf("NAMESPACE: %w", protocolErr(err))
				}
				p := joinPath(a.prefix, e.Suffix)
				if resp.typ == ietf.TypeNamespace {
					entries[p] = true
				} else {
					delete(entries, p)
				}
			}
		case <-ended:
			// The namespace subscription ended; unsolicited namespaces
			// still count.
			ended = nil
		case <-a.ctx.Done():
			return nil
		case <-ic.Context().Done():
			return connCause(ic)
		}
	}
}
