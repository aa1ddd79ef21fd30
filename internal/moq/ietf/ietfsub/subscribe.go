package ietfsub

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/model"
)

// The subscriber side of a moq-transport session: SUBSCRIBE and its
// subgroup streams, FETCH for backfills (the core's session.Family, which
// the facade's connection forwards here).

// defaultTimescale is the timescale of object timestamps when the track
// declared none (drafts before 17 have no Track Properties): the hang
// containers carry their own microsecond timestamps, so only catalog
// tracks read it.
const defaultTimescale = 1_000_000

// aliasWait bounds how long a subgroup stream waits for the SUBSCRIBE_OK
// that names its track alias (the data stream may overtake the control
// stream).
const aliasWait = 2 * time.Second

// subscription is one moq-transport SUBSCRIBE in its wire: the request
// and its SUBSCRIBE_OK, then the messages that come through the request
// until PUBLISH_DONE; its subgroup streams are routed by track alias
// (session.Subscribe runs the rest).
type subscription struct {
	session.AttemptTrack
	ctx context.Context
	s   *Session
	req *request // nil before the request was made
	ok  ietf.SubscribeOK
	// startPending: the start SUBSCRIBE_OK gave is still to be told.
	startPending bool
	// pending is a message the parked wait took.
	pending *message

	// wakeCh is settle's: it ends the parked wait, which parks afresh.
	wakeCh chan struct{}
}

// NewSubscription is one subscription attempt of t on the session, whose
// connection the core knows as f (session.Family.NewSubscription).
func (s *Session) NewSubscription(ctx context.Context, f session.Family, t *session.Remote) session.SubscriptionWire {
	return &subscription{AttemptTrack: session.AttemptTrack{R: t, C: f}, ctx: ctx, s: s, wakeCh: make(chan struct{}, 1)}
}

// Accept sends SUBSCRIBE and waits for SUBSCRIBE_OK, which names the
// timescale (drafts 17+) and the newest group. A SUBSCRIBE_ERROR, a
// request that ends unanswered, or a reset refuses it; no answer within
// the request timeout is session.ErrTimeout.
func (is *subscription) Accept(ctx context.Context) (uint64, bool, error) {
	rt, s := is.R, is.s
	if catalog.IsTrackName(rt.Name) && s.server.closesOn(rt.Broadcast, rt.Name) {
		// Asked once, it closed the session: the catalog watcher goes on
		// to another name.
		return 0, false, fmt.Errorf("%w: SUBSCRIBE %q/%q: the server closed the session on it before", session.ErrRefused, rt.Broadcast, rt.Name)
	}
	req, err := s.newRequest(ctx, false)
	if err != nil {
		return 0, false, err
	}
	is.req = req
	filter := ietf.Filter{Type: ietf.FilterLargestObject}
	if s.v.RelativeFilter() {
		// The start of the current group.
		filter = ietf.Filter{Type: ietf.FilterRelative, Groups: 1}
	}
	if sp, ok := rt.Span(); ok {
		// A span of past groups (session.Remote's span subscription):
		// an absolute range, from the start of group From through group
		// To, in every draft's form of it.
		filter = ietf.Filter{Type: ietf.FilterAbsoluteRange, Start: ietf.Location{Group: sp.From}, End: sp.To}
	}
	m := ietf.Subscribe{
		RequestID: req.id, Namespace: rt.Broadcast, Track: rt.Name, Priority: session.Priority(rt.Name),
		GroupOrder: ietf.DefaultGroupOrder, Forward: true, Filter: filter,
	}
	if s.server.minimalParams.Load() {
		// The server closes the session on optional parameters: ask for
		// the defaults, which travel as none.
		m.Priority, m.Filter = ietf.DefaultSubscriberPriority, ietf.DefaultFilter
	}
	optional := s.v.SubscribeParams() && len(m.OptionalParams(s.v)) > 0
	if optional {
		s.Asked.Optional.Store(true)
	}
	asksCatalog := !optional && catalog.IsTrackName(rt.Name)
	if asksCatalog {
		s.Asked.CatalogAsked(rt.Broadcast, rt.Name, false)
	}
	if err := req.send(ietf.TypeSubscribe, &m); err != nil {
		return 0, false, fmt.Errorf("send SUBSCRIBE: %w", err)
	}
	resp, err := s.readRequest(ctx, req, rt.Host.Config().RequestTimeout)
	if err == nil && optional {
		s.Asked.OptionalAnswered.Store(true)
	}
	if err == nil && asksCatalog {
		s.Asked.CatalogAsked(rt.Broadcast, rt.Name, true)
	}
	if err != nil {
		switch {
		case errors.Is(err, errRequestTimeout):
			// Silence is no answer: the connection may be dead and not
			// found so yet (the track's retry tells, session.LostWith).
			req.cancel(ietf.TypeUnsubscribe)
			return 0, false, fmt.Errorf("%w: SUBSCRIBE %q/%q: %w", session.ErrTimeout, rt.Broadcast, rt.Name, err)
		case errors.Is(err, errRequestEnded):
			req.cancel(ietf.TypeUnsubscribe)
			return 0, false, fmt.Errorf("%w: SUBSCRIBE %q/%q: %w", session.ErrRefused, rt.Broadcast, rt.Name, err)
		}
		if s.isReset(err) && !s.c.Gone(err) {
			return 0, false, fmt.Errorf("%w: SUBSCRIBE %q/%q: %w", session.ErrRefused, rt.Broadcast, rt.Name, err)
		}
		return 0, false, err
	}
	switch resp.typ {
	case ietf.TypeSubscribeOK:
		if err := ietf.Decode(resp.body, &is.ok, s.v); err != nil {
			return 0, false, fmt.Errorf("SUBSCRIBE_OK: %w", protocolErr(err))
		}
	case ietf.TypeRequestError:
		var re ietf.RequestError
		if err := ietf.Decode(resp.body, &re, s.v); err != nil {
			return 0, false, fmt.Errorf("SUBSCRIBE_ERROR: %w", protocolErr(err))
		}
		return 0, false, fmt.Errorf("%w: SUBSCRIBE %q/%q: %w", session.ErrRefused, rt.Broadcast, rt.Name, &re)
	default:
		return 0, false, fmt.Errorf("%w: message %#x answers SUBSCRIBE", session.ErrProtocol, resp.typ)
	}
	is.startPending = true
	s.log.Debug("moq: SUBSCRIBE_OK", "broadcast", rt.Broadcast, "track", rt.Name, "alias", is.ok.TrackAlias, "version", s.v)
	if is.ok.Timescale == 0 {
		return defaultTimescale, true, nil
	}
	return is.ok.Timescale, true, nil
}

// Route routes the subgroup streams of the track alias SUBSCRIBE_OK named
// to sub.
func (is *subscription) Route(sub *session.Sub) error {
	sub.ID, sub.Router = is.req.id, is
	if err := is.s.addAlias(is.ok.TrackAlias, sub); err != nil {
		is.req.cancel(ietf.TypeUnsubscribe)
		return err
	}
	return nil
}

func (is *subscription) Unroute(sub *session.Sub) { is.s.routes.Remove(is.ok.TrackAlias, sub) }

// Request: SUBSCRIBE went out in Accept.
func (is *subscription) Request(context.Context, *session.Sub, bool) error { return nil }

// Ready reports whether a message, or the end of the request, the attempt
// or the connection, is waiting.
func (is *subscription) Ready() bool {
	if is.startPending || is.pending != nil {
		return true
	}
	select {
	case <-is.req.ended:
		return true
	default:
	}
	return len(is.req.msgs) > 0 || is.ctx.Err() != nil || is.s.Context().Err() != nil
}

// Next tells the start SUBSCRIBE_OK gave first, then reads the request's
// messages: PUBLISH_DONE, or the request's end without it, is the
// publisher's end.
func (is *subscription) Next() (session.Event, error) {
	if is.startPending {
		is.startPending = false
		if _, span := is.R.Span(); span {
			// SUBSCRIBE_OK names the publisher's newest group, not the
			// first one the range delivers (the oldest it still holds of
			// it): none is named, and the span's end is known from the
			// range's end group and PUBLISH_DONE (session.Remote.SpanEnded).
			return session.Event{Kind: session.EventStart, Start: session.StartAck}, nil
		}
		if l := is.ok.Largest; l != nil {
			// The publisher starts at the newest group (the reference
			// and our publisher from its first object, a publisher that
			// follows the filter to the letter after Largest, so that
			// group is skipped as partial and costs a consumer's
			// latency at most).
			return session.Event{Kind: session.EventStart, Start: session.StartNamed, Group: l.Group}, nil
		}
		return session.Event{Kind: session.EventStart, Start: session.StartUnnamed}, nil
	}
	var msg message
	if is.pending != nil {
		msg, is.pending = *is.pending, nil
	} else {
		var err error
		if msg, err = is.s.readRequest(is.ctx, is.req, 0); err != nil {
			if errors.Is(err, errRequestEnded) && is.ctx.Err() == nil && !is.s.c.Gone(err) {
				// The publisher closed the request stream without
				// PUBLISH_DONE: the subscription is over all the same.
				return session.Event{Kind: session.EventDone}, nil
			}
			return session.Event{}, err
		}
	}
	rt := is.R
	if msg.typ != ietf.TypePublishDone {
		is.s.log.Debug("moq: unexpected message for a subscription", "type", msg.typ)
		return session.Event{}, nil
	}
	var done ietf.PublishDone
	if err := ietf.Decode(msg.body, &done, is.s.v); err != nil {
		return session.Event{}, fmt.Errorf("PUBLISH_DONE: %w", protocolErr(err))
	}
	is.s.log.Debug("moq: subscription done", "broadcast", rt.Broadcast, "track", rt.Name,
		"status", done.Status, "streams", done.StreamCount)
	// A span's end, as soon as its groups are in.
	rt.SpanEnded(done.StreamCount)
	// The group streams may still be on their way: all StreamCount of
	// them when the publisher counted, then as for moq-lite.
	ev := session.Event{Kind: session.EventDone, Streams: done.StreamCount}
	switch done.Status {
	case ietf.DoneTrackEnded, ietf.DoneSubscriptionEnded:
	case ietf.DoneGoingAway:
		ev.Err = is.s.goingAway
	default:
		ev.Err = fmt.Errorf("moq: publisher ended %q/%q: status %d: %q", rt.Broadcast, rt.Name, done.Status, done.Reason)
	}
	return ev, nil
}

func (is *subscription) Failed(err error, _ bool) error { return is.s.loss(err) }

func (is *subscription) Cancel() { is.req.cancel(ietf.TypeUnsubscribe) }

func (is *subscription) Release(error, bool) {
	if is.req != nil {
		is.s.endRequest(is.req)
	}
}

// Wait is the parked goroutine's: for the request's next message or end,
// the attempt's or the connection's end, or settle's wake.
func (is *subscription) Wait() (woken bool) {
	select {
	case m := <-is.req.msgs:
		is.pending = &m
	case <-is.req.ended:
	case <-is.ctx.Done():
	case <-is.s.Context().Done():
	case <-is.wakeCh:
		return true
	}
	return false
}

// Resettle: a wait settle's wake ended parks afresh; a wake that lost the
// race to a message is dropped.
func (is *subscription) Resettle(woken bool) bool {
	if woken {
		return true
	}
	select {
	case <-is.wakeCh:
	default:
	}
	return false
}

func (is *subscription) Wake() { is.wakeCh <- struct{}{} }

// loss returns why the connection is gone: its cause once it is there,
// otherwise err (the stream error that reported the loss first).
func (s *Session) loss(err error) error {
	if cause := s.c.Cause(); cause != nil {
		return cause
	}
	return err
}

// addAlias routes subgroup streams of alias to sub.
func (s *Session) addAlias(alias uint64, sub *session.Sub) error {
	if !s.routes.Add(alias, sub) {
		return fmt.Errorf("%w: track alias %d already in use", session.ErrProtocol, alias)
	}
	return nil
}

// isReset reports whether err is the peer's reset of one stream.
func (s *Session) isReset(err error) bool {
	_, ok := s.c.ResetCode(err)
	return ok
}

// Routed returns the subscriptions whose subgroup streams the session
// routes (by track alias).
func (s *Session) Routed() []*session.Sub { return s.routes.Routed() }

// HandleUni reads one incoming data stream: a subgroup of a subscription
// or the objects of a fetch. t is its place in the order the streams were
// accepted.
func (s *Session) HandleUni(str session.RecvStream, t session.OrderTicket) {
	r := bufio.NewReaderSize(str, session.GroupReadBuffer)
	typ, err := ietf.ReadVarint(r, s.v)
	if err != nil {
		str.CancelRead(codeCancel)
		return
	}
	if typ == ietf.StreamFetch {
		t.Done()
		id, err := ietf.ReadVarint(r, s.v)
		if err != nil {
			str.CancelRead(CodeProtocolViolation)
			return
		}
		s.routeData(id, str, r)
		return
	}
	h, err := ietf.ReadSubgroupHeader(r, typ, s.v)
	if err != nil {
		if !s.c.Gone(err) {
			s.log.Warn("moq: bad data stream header", "type", typ, "err", err)
		}
		str.CancelRead(CodeProtocolViolation)
		return
	}
	s.readSubgroup(str, r, h, t)
}

// readSubgroup turns one subgroup stream into a model group.
//
// It runs on a goroutine of its own per stream (a group an audio frame,
// as hang publishes audio), whose stack starts at 2 KiB and is copied to
// twice the size whenever a call goes deeper: what runs once per group
// (the joins, the group's creation) and every log line and wrapped error
// are functions of their own, so that the frames under which quic-go's
// reads and the model's writes run stay small (as litesub's ReadGroup).
// Log lines name the track and group at their call: a logger made With
// them cost allocations per group, logged or not.
func (s *Session) readSubgroup(str session.RecvStream, r *bufio.Reader, h ietf.SubgroupHeader, t session.OrderTicket) {
	t.Name(h.TrackAlias, h.Group)
	sub := s.routes.Await(s.Context(), h.TrackAlias, aliasWait)
	if sub == nil {
		s.unknownAlias(str, h.TrackAlias)
		return
	}
	defer sub.Groups.Done()
	sub.GroupArrived(h.Group)
	sub.WaitStarted(h.Group)
	defer sub.Created(h.Group)
	// The group ends with its subscription: STOP_SENDING wakes the read.
	stop := context.AfterFunc(sub.Ctx, func() { session.StopReading(str, codeCancel) })
	defer stop()
	s.readObjects(str, r, &h, sub, t)
}

// unknownAlias refuses a subgroup stream whose track alias names no
// subscription.
//
//go:noinline
func (s *Session) unknownAlias(str session.RecvStream, alias uint64) {
	s.log.Debug("moq: data stream for an unknown track alias", "alias", alias)
	str.CancelRead(codeCancel)
}

// readObjects reads the objects of subgroup h of sub off r into its model
// group, until the stream ends.
func (s *Session) readObjects(str session.RecvStream, r *bufio.Reader, h *ietf.SubgroupHeader, sub *session.Sub, t session.OrderTicket) {
	var or ietf.ObjectReader
	var pump session.Pump
	s.startObjects(&or, &pump, r, h, sub.Remote)
	defer pump.Dec.Close()
	for {
		obj, err := or.Next()
		if err != nil {
			cut := err != io.EOF && s.c.Gone(err)
			sub.EndGroup(str, pump.Group, h.Group, protocolErr(err), cut, s.isReset(err), CodeProtocolViolation)
			return
		}
		if pump.Group == nil && !s.firstObject(str, h, sub, obj.ID, t, &pump) {
			return
		}
		switch obj.Status {
		case ietf.StatusEndOfGroup, ietf.StatusEndOfTrack:
			pump.Group.Close(nil)
			str.CancelRead(codeCancel)
			return
		case ietf.StatusDoesNotExist:
			continue
		}
		o, err := object(obj, sub.Timescale, s.v)
		if err == nil {
			err = pump.Feed(o)
		}
		if err != nil {
			s.badObject(str, h, sub.Remote.Name, obj.ID, pump.Group, err)
			return
		}
	}
}

// startObjects readies or to read subgroup h's objects off r, and pump
// to decode them as rt's.
//
//go:noinline
func (s *Session) startObjects(or *ietf.ObjectReader, pump *session.Pump, r *bufio.Reader, h *ietf.SubgroupHeader, rt *session.Remote) {
	*or = ietf.ObjectReader{R: r, V: s.v, Header: *h}
	*pump = session.Pump{Dec: rt.Pack.Decoder(), Log: s.log, Track: rt.Name, Seq: h.Group}
	pump.Dec.Verbatim = rt.Host.Config().Objects
}

// firstObject makes the model group of subgroup h at its first object
// (id) and hands it to pump. A subscription that joined mid-group (or a
// stream that does not start at the group's first object) cannot be
// decoded from its start: that group is skipped. False when the stream
// was ended instead.
//
//go:noinline
func (s *Session) firstObject(str session.RecvStream, h *ietf.SubgroupHeader, sub *session.Sub, id uint64, t session.OrderTicket, pump *session.Pump) bool {
	name := sub.Remote.Name
	if !h.FirstObject || id != 0 || h.Subgroup != 0 {
		s.log.Debug("moq: group joined past its start, skipped", "track", name, "group", h.Group, "object", id, "subgroup", h.Subgroup)
		str.CancelRead(codeCancel)
		return false
	}
	g, skip, adopted, err := sub.CreateGroup(h.Group, t)
	if adopted {
		s.log.Debug("moq: completing a cut group", "track", name, "group", h.Group, "have", skip)
	}
	if err != nil {
		s.log.Debug("moq: group dropped", "track", name, "group", h.Group, "err", err)
		str.CancelRead(codeCancel)
		return false
	}
	pump.Group, pump.Skip = g, skip
	return true
}

// badObject ends subgroup h (its group g) after object id failed with
// err: the group was closed before its stream ended, or the object is not
// what the catalog says.
//
//go:noinline
func (s *Session) badObject(str session.RecvStream, h *ietf.SubgroupHeader, name string, id uint64, g *model.Group, err error) {
	if errors.Is(err, session.ErrGroupClosed) {
		str.CancelRead(codeCancel)
		return
	}
	err = session.DecodeErr(err)
	str.CancelRead(codeDecode)
	s.log.Warn("moq: bad object", "track", name, "group", h.Group, "object", id, "err", err)
	g.Close(fmt.Errorf("group %d of %q: %w", h.Group, name, err))
}

// object is a moq-transport object as package hang reads it: its payload
// and its Timestamp extension (in the track's timescale unless the object
// names its own).
func object(obj ietf.Object, timescale uint64, v ietf.Version) (hang.Object, error) {
	ts, scale, haveTS, err := ietf.ObjectTimestamp(obj.Extensions, timescale, v)
	if err != nil {
		return hang.Object{}, fmt.Errorf("%w: object extensions: %w", session.ErrProtocol, err)
	}
	if ts > math.MaxInt64 {
		return hang.Object{}, fmt.Errorf("%w: object timestamp %d", session.ErrProtocol, ts)
	}
	return hang.Object{Payload: obj.Payload, Timestamp: int64(ts), Timescale: scale, HasTimestamp: haveTS}, nil
}

// OpenFetch sends a standalone FETCH of r's groups and waits for its data
// stream, which races FETCH_OK: that stream is the reply. A refusal is
// session.ErrNoFetch. moq-transport asks whole groups (r names no
// frames): one, or the run of r.Groups from r.Group on (Start {Group, 0},
// End {last group, 0}: End Object 0 is the whole end group, in every
// draft's FETCH).
func (s *Session) OpenFetch(ctx context.Context, rt *session.Remote, timescale uint64, r session.FetchRange, what string) (_ session.FetchReply, err error) {
	if s.server.noFetch.Load() {
		return nil, fmt.Errorf("%w: the server closes the session on FETCH", session.ErrFetchRefused)
	}
	req, err := s.newRequest(ctx, false)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.endRequest(req)
		}
	}()
	last := r.Group + max(r.Groups, 1) - 1
	m := ietf.Fetch{
		RequestID: req.id, Priority: session.Priority(rt.Name), GroupOrder: ietf.GroupOrderAscending,
		Type: ietf.FetchStandalone, Namespace: rt.Broadcast, Track: rt.Name,
		// End object 0: the whole end group.
		Start: ietf.Location{Group: r.Group}, End: ietf.Location{Group: last},
	}
	s.Asked.Fetch.Store(true)
	if err := req.send(ietf.TypeFetch, &m); err != nil {
		return nil, fmt.Errorf("send FETCH: %w", err)
	}
	cancel := func() { req.cancel(ietf.TypeFetchCancel) }
	// FETCH_OK and the data stream race each other.
	t := time.NewTimer(rt.Host.Config().RequestTimeout)
	defer t.Stop()
	var data *dataStream
	ended := req.ended
	for data == nil {
		select {
		case resp := <-req.msgs:
			s.Asked.FetchAnswered.Store(true)
			switch resp.typ {
			case ietf.TypeFetchOK:
				// The request stream may end now; the data stream is
				// still to come.
				ended = nil
			case ietf.TypeFetchError, ietf.TypeRequestError:
				var re ietf.RequestError
				_ = ietf.Decode(resp.body, &re, s.v)
				return nil, fmt.Errorf("%w: %s: %w", FetchRefusal(re.Code, s.v), what, &re)
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
			// A stream that broke says why (the connection's loss, as
			// the stream saw it before the session did).
			why := errRequestEnded
			if req.endErr != nil && req.endErr != io.EOF {
				why = req.endErr
			}
			return nil, fmt.Errorf("%w: %s: %w", session.ErrNoFetch, what, why)
		case <-t.C:
			// No answer is no refusal: the connection may be dead and
			// not found so yet (the gap fill tells, session.LostWith).
			cancel()
			return nil, fmt.Errorf("%w: %s: %w", session.ErrTimeout, what, errRequestTimeout)
		case <-ctx.Done():
			cancel()
			return nil, context.Cause(ctx)
		case <-s.Context().Done():
			return nil, s.c.Cause()
		}
	}
	return &fetchReply{s: s, req: req, data: data, fr: ietf.FetchObjectReader{R: data.r, V: s.v},
		group: r.Group, last: last, timescale: timescale}, nil
}

// FetchRefusal is what a FETCH's refusal with code says in draft v
// (wrapping session.ErrNoFetch either way): NOT_SUPPORTED is a peer that
// serves no FETCH (session.ErrFetchRefused: the reference publisher, which
// refuses every standalone FETCH so), a missing track or a range it holds
// nothing of (DOES_NOT_EXIST, INVALID_RANGE, draft 14's NO_OBJECTS) is a
// peer without the groups (session.ErrNotServed); any other code says
// neither.
func FetchRefusal(code uint64, v ietf.Version) error {
	switch code {
	case ietf.ReqNotSupported:
		return session.ErrFetchRefused
	case ietf.ReqDoesNotExist(v), ietf.ReqInvalidRange(v), ietf.ReqNoObjects(v):
		return session.ErrNotServed
	}
	return session.ErrNoFetch
}

// fetchReply is a moq-transport FETCH's answer: the objects on its data
// stream.
type fetchReply struct {
	s           *Session
	req         *request
	data        *dataStream
	fr          ietf.FetchObjectReader
	group, last uint64 // the groups asked
	timescale   uint64
	bad         bool // an object's extensions did not parse
}

func (f *fetchReply) Next() (hang.Object, uint64, bool, error) {
	obj, err := f.fr.Next()
	if err != nil {
		return hang.Object{}, 0, false, f.readErr(err)
	}
	if obj.Group < f.group || obj.Group > f.last || obj.Status != ietf.StatusNormal {
		return hang.Object{}, obj.Group, true, nil
	}
	o, err := object(obj, f.timescale, f.s.v)
	f.bad = err != nil
	return o, obj.Group, false, err
}

// readErr is how a reply's read error reaches the core: a reset is the
// peer withdrawing it (ErrNoFetch), bytes the codec rejects are
// ErrProtocol.
func (f *fetchReply) readErr(err error) error {
	if err == io.EOF {
		return err
	}
	if f.s.isReset(err) {
		return fmt.Errorf("%w: %w", session.ErrNoFetch, err)
	}
	return protocolErr(err)
}

func (f *fetchReply) Interrupt() { f.data.str.SetReadDeadline(time.Now()) }

func (f *fetchReply) End(err error, bad bool) {
	switch {
	case err == nil:
	case bad || f.bad:
		f.data.str.CancelRead(codeDecode)
	default:
		f.data.str.CancelRead(codeCancel)
	}
	f.s.endRequest(f.req)
}
