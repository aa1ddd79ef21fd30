package ietfpub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moqpath"
	"github.com/moq-export/moq-export/model"
)

// The publisher side of a moq-transport session: Session.Publish serves
// its broadcasts to a moq-transport peer as it does to a moq-lite one.
// Every published broadcast is offered with PUBLISH_NAMESPACE (unasked:
// SUBSCRIBE_NAMESPACE is answered OK and changes nothing). SUBSCRIBE gets
// SUBSCRIBE_OK (track alias = request id, timescale microseconds) and one
// subgroup stream per model group from where its filter starts
// (subscribeRange), each object carrying its timestamp as the
// Timestamp extension (microseconds) and the payload as on moq-lite, in
// the packaging the broadcast's catalog declares (package hang: catalog
// tracks raw, media legacy, loc or cmaf); PUBLISH_DONE follows the track's
// end (TRACK_ENDED) or the end of an absolute range (SUBSCRIPTION_ENDED).
// FETCH (standalone, or joining a subscription) gets FETCH_OK and one fetch
// stream with the objects of the range that the track holds. TRACK_STATUS
// is answered as the SUBSCRIBE_OK it would get (TRACK_STATUS_OK in draft
// 14, REQUEST_OK later). PUBLISH is refused NOT_SUPPORTED, as @moq/net
// and the reference relay's subscriber refuse it: Publish offers
// namespaces, it does not push tracks.

// timescale is the timescale of published tracks.
const timescale = 1_000_000

// serve is one request the peer made of us: answered on the control
// stream (drafts 14-16) or on the request's own stream (str), cancelled
// by UNSUBSCRIBE / FETCH_CANCEL or the end of that stream.
type serve struct {
	sd     *Served
	id     uint64
	str    session.Stream
	wmu    sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc

	// What a served SUBSCRIBE answered, for the FETCHes that join it
	// (under sd.mu): its track, and its Largest Location (nil: none).
	track     *model.Track
	broadcast string
	trackName string
	largest   *ietf.Location
	joinable  bool // the SUBSCRIBE_OK went out with a Largest Object filter
}

func (sd *Served) newServe(id uint64, str session.Stream) *serve {
	sv := &serve{sd: sd, id: id, str: str}
	sv.ctx, sv.cancel = context.WithCancel(sd.c.Context())
	// Every request is found by its id: UNSUBSCRIBE and FETCH_CANCEL name
	// control-stream requests, joining fetches any subscription.
	sd.mu.Lock()
	sd.serves[id] = sv
	sd.mu.Unlock()
	return sv
}

// done forgets sv.
func (sv *serve) done() {
	sv.cancel()
	sv.sd.mu.Lock()
	if sv.sd.serves[sv.id] == sv {
		delete(sv.sd.serves, sv.id)
	}
	sv.sd.mu.Unlock()
	if sv.str != nil {
		sv.str.Close()
		sv.str.CancelRead(codeCancel)
	}
}

// Cancel cancels the served request id (UNSUBSCRIBE, FETCH_CANCEL).
func (sd *Served) Cancel(id uint64) {
	sd.mu.Lock()
	sv := sd.serves[id]
	sd.mu.Unlock()
	if sv != nil {
		sv.cancel()
	}
}

// reply sends one message of the request: on its own stream, or the
// control stream.
func (sv *serve) reply(typ uint64, m ietf.Message) error {
	if sv.str == nil {
		return sv.sd.c.WriteControl(typ, m)
	}
	b := ietf.Append(nil, typ, m, sv.sd.v)
	sv.wmu.Lock()
	defer sv.wmu.Unlock()
	_, err := sv.str.Write(b)
	return err
}

// refuse answers with the refusal of typ's request (draft 14 has one type
// per request; later drafts REQUEST_ERROR).
func (sv *serve) refuse(reqType, code uint64, reason string) {
	typ := uint64(ietf.TypeRequestError)
	if sv.sd.v.PerRequestResponses() {
		switch reqType {
		case ietf.TypeFetch:
			typ = ietf.TypeFetchError
		case ietf.TypeSubscribeNamespace14:
			typ = ietf.TypeSubscribeNamespaceErr
		case ietf.TypePublish:
			typ = ietf.TypePublishError
		case ietf.TypeTrackStatus:
			typ = ietf.TypeTrackStatusError
		}
	}
	_ = sv.reply(typ, &ietf.RequestError{RequestID: sv.id, Code: code, Reason: reason})
}

// Request answers one request of the peer (body of type typ), on the
// control stream (str nil) or on the request's own stream str (read by r
// after the request: its end cancels the request). An error (wrapping
// the codec's, for a malformed request) ends the session.
func (sd *Served) Request(str session.Stream, r io.Reader, typ uint64, body []byte) error {
	s, v := sd.p, sd.v
	id, err := ietf.RequestIDOf(body, v)
	if err != nil {
		return err
	}
	if p := s.Strict; p != nil {
		what := p.Refuses(typ, body, v)
		m, ok := decodeSubscribe(typ, body, v)
		switch {
		case what != "" || typ != ietf.TypeSubscribe:
		case !ok:
			what = "malformed SUBSCRIBE" // MediaMTX's parser fails: a close
		case !s.Pubs.Has(strictNamespace(s, m.Namespace), m.Track):
			what = "unknown track"
		}
		if what != "" {
			s.Log.Debug("moq: strict: closing the session on a request it does not support", "request", what)
			p.Count(what)
			sd.c.Close(codeNoError, "")
			return nil
		}
	}
	sd.c.Grant(id)
	sv := sd.newServe(id, str)
	if str != nil {
		// The read ends with the request, or with the connection, by a
		// deadline: a WebTransport stream that the peer reset with
		// WT_SESSION_GONE holds its Read until the session is closed
		// or a deadline passes, and CancelRead wakes neither (a
		// publisher's Close then waited for this read for ever: the e2e
		// matrix, accept role over WebTransport, under load).
		wake := context.AfterFunc(sv.ctx, func() { _ = str.SetReadDeadline(time.Now()) })
		s.Go(func() {
			defer wake()
			_, _ = io.Copy(io.Discard, r)
			sv.cancel()
		})
	}
	switch typ {
	case ietf.TypeSubscribe:
		var m ietf.Subscribe
		if err := ietf.Decode(body, &m, v); err != nil {
			sv.done()
			return fmt.Errorf("SUBSCRIBE: %w", err)
		}
		if s.Strict != nil {
			m.Namespace = strictNamespace(s, m.Namespace)
		}
		s.Go(func() {
			defer sv.done()
			s.serveSubscribe(sv, m)
		})
	case ietf.TypeFetch:
		var m ietf.Fetch
		if err := ietf.Decode(body, &m, v); err != nil {
			sv.done()
			return fmt.Errorf("FETCH: %w", err)
		}
		s.Go(func() {
			defer sv.done()
			s.serveFetch(sv, m)
		})
	case ietf.TypeTrackStatus:
		// SUBSCRIBE's layout in every draft.
		var m ietf.Subscribe
		if err := ietf.Decode(body, &m, v); err != nil {
			sv.done()
			return fmt.Errorf("TRACK_STATUS: %w", err)
		}
		s.serveTrackStatus(sv, m)
		sv.done()
	case ietf.TypeSubscribeNamespace14, ietf.TypeSubscribeNamespace:
		// Every broadcast is offered with PUBLISH_NAMESPACE already.
		ok := uint64(ietf.TypeRequestOK)
		if v.PerRequestResponses() {
			ok = ietf.TypeSubscribeNamespaceOK
		}
		err := sv.reply(ok, &ietf.RequestOK{RequestID: id})
		if str == nil {
			sv.done()
			return err
		}
		// Held until the peer ends its stream.
		s.Go(func() {
			defer sv.done()
			<-sv.ctx.Done()
		})
	default:
		s.Log.Debug("moq: refusing a request", "type", typ)
		sv.refuse(typ, ietf.ReqNotSupported, "not supported")
		sv.done()
	}
	return nil
}

// timestampExt is the extension block of published object o: its
// Timestamp, in microseconds, or as MediaMTX writes it for a Bare track
// (draft-03's id, the catalog's clock).
func timestampExt(o session.Object, bare bool, v ietf.Version) []byte {
	if bare {
		return ietf.AppendTimestampExt03(nil, uint64(o.Clock), v)
	}
	return ietf.AppendTimestampExt(nil, uint64(o.Micros), v)
}

// strictNamespace is the broadcast a SUBSCRIBE names on a Strict server:
// as MediaMTX ties a session to the stream its path names, the namespace
// is taken relative to the session path ("" is the session's stream).
func strictNamespace(s *Publisher, ns string) string {
	return moqpath.Join(moqpath.Clean(s.Root()), moqpath.Clean(ns))
}

// decodeSubscribe decodes body when typ is SUBSCRIBE.
func decodeSubscribe(typ uint64, body []byte, v ietf.Version) (ietf.Subscribe, bool) {
	var m ietf.Subscribe
	if typ != ietf.TypeSubscribe || ietf.Decode(body, &m, v) != nil {
		return m, false
	}
	return m, true
}

// trackRange is the part of a track a request asks for: objects from
// Start on; through group End (inclusive) when HasEnd, and in that group
// below EndObject when it is not 0.
type trackRange struct {
	Start     ietf.Location
	End       uint64
	EndObject uint64
	HasEnd    bool
}

// window is the range as the core's subscription window: it ends once
// delivered.
func (r trackRange) window() session.Window {
	return session.Window{Start: session.Location{Group: r.Start.Group, Frame: r.Start.Object}, HasStart: true,
		End: r.End, EndFrame: r.EndObject, HasEnd: r.HasEnd, Finite: true}
}

// frames is the part of group seq inside the range: from frame from,
// below frame to (0: to the group's end).
func (r trackRange) frames(seq uint64) (from, to uint64) {
	if seq == r.Start.Group {
		from = r.Start.Object
	}
	if r.HasEnd && seq == r.End {
		to = r.EndObject
	}
	return from, to
}

// largestOf is the Largest Location of a track's live edge (nil before
// any object).
func largestOf(e session.Edge) *ietf.Location {
	if !e.OK {
		return nil
	}
	l := ietf.Location{Group: e.Group}
	if e.Frames > 0 {
		l.Object = e.Frames - 1
	}
	return &l
}

// subscribeRange resolves a SUBSCRIBE filter against the live edge:
//
//   - Largest Object: the start of the newest group in drafts 14-19, as the
//     reference relay and @moq/net serve it (the draft's {Largest.Group,
//     Largest.Object+1} starts mid-group, which no hang reader can decode);
//     in draft 20 ("the next object") to the letter, as @moq/net does.
//   - Next Group Start / a relative start of 0: {Largest.Group+1, 0}; a
//     relative start of n groups (draft 20): {Largest.Group+1-n, 0}.
//   - Absolute Start and Range: as given (a start in the past replays the
//     groups the track still holds), the range ending after its End
//     Group. {0, 0} open-ended is how drafts before 20 say "no filter",
//     which starts at the newest group as in moq-lite.
//
// Before any content, every filter starts at {0, 0}, as the drafts say.
func subscribeRange(f ietf.Filter, v ietf.Version, e session.Edge) trackRange {
	var r trackRange
	switch f.Type {
	case ietf.FilterLargestObject:
		if e.OK {
			r.Start.Group = e.Group
			if v.LargestObjectMidGroup() {
				r.Start.Object = e.Frames
			}
		}
	case ietf.FilterNextGroup:
		if e.OK {
			r.Start.Group = e.Group + 1
		}
	case ietf.FilterRelative:
		if e.OK {
			r.Start.Group = e.Group + 1 - min(f.Groups, e.Group+1)
		}
	case ietf.FilterAbsoluteStart:
		r.Start = f.Start
		if f.Start == (ietf.Location{}) && e.OK {
			r.Start.Group = e.Group
		}
	case ietf.FilterAbsoluteRange:
		r.Start, r.End, r.HasEnd = f.Start, f.End, true
	}
	return r
}

// serveTrackStatus answers TRACK_STATUS with what SUBSCRIBE_OK would
// say (Largest Object, timescale), or the refusal SUBSCRIBE would get.
func (s *Publisher) serveTrackStatus(sv *serve, m ietf.Subscribe) {
	t, _, err := s.Pubs.Track(m.Namespace, m.Track)
	if err != nil {
		sv.refuse(ietf.TypeTrackStatus, ietf.ReqDoesNotExist(sv.sd.v), "no such track")
		return
	}
	largest := largestOf(session.EdgeOf(t))
	if sv.sd.v.PerRequestResponses() {
		_ = sv.reply(ietf.TypeTrackStatusOK, &ietf.SubscribeOK{RequestID: sv.id,
			GroupOrder: ietf.GroupOrderDescending, Largest: largest})
		return
	}
	ok := ietf.RequestOK{RequestID: sv.id}
	if largest != nil {
		ok.Params.SetBytes(ietf.ParamLargestObject, ietf.AppendLocation(nil, *largest, sv.sd.v))
	}
	_ = sv.reply(ietf.TypeRequestOK, &ok)
}

// serveSubscribe serves one SUBSCRIBE until the track ends, its range
// was delivered or the peer unsubscribes.
func (s *Publisher) serveSubscribe(sv *serve, m ietf.Subscribe) {
	t, enc, err := s.Pubs.Track(m.Namespace, m.Track)
	if err != nil {
		sv.refuse(ietf.TypeSubscribe, ietf.ReqDoesNotExist(sv.sd.v), "no such track")
		return
	}
	if m.Filter.Type == ietf.FilterAbsoluteRange && m.Filter.End < m.Filter.Start.Group {
		sv.refuse(ietf.TypeSubscribe, ietf.ReqInvalidRange(sv.sd.v), "range ends before its start")
		return
	}
	// Subscribed before the edge is read: nothing published in between
	// is missed.
	cons := t.Subscribe(time.Hour)
	defer cons.Close()
	edge := session.EdgeOf(t)
	rng := subscribeRange(m.Filter, sv.sd.v, edge)
	ok := ietf.SubscribeOK{RequestID: sv.id, TrackAlias: sv.id, GroupOrder: ietf.GroupOrderDescending,
		Timescale: timescale, Largest: largestOf(edge)}
	perFrame := s.Strict != nil && s.Strict.GroupPerFrame()
	if perFrame {
		// MediaMTX names no Largest Location (its groups are counted from
		// 0 per subscription, not the track's), and starts a reader at
		// the next keyframe, whatever the filter (the catalog it sends
		// at once).
		ok.Largest = nil
		if !catalog.IsTrackName(m.Track) {
			rng = trackRange{}
			if edge.OK {
				rng.Start.Group = edge.Group + 1
			}
		}
	}
	sv.sd.mu.Lock()
	sv.track, sv.broadcast, sv.trackName, sv.largest = t, m.Namespace, m.Track, ok.Largest
	sv.joinable = m.Filter.Type == ietf.FilterLargestObject
	sv.sd.mu.Unlock()
	if err := sv.reply(ietf.TypeSubscribeOK, &ok); err != nil {
		return
	}
	s.Pubs.CountServing(m.Namespace, m.Track, 1)
	defer s.Pubs.CountServing(m.Namespace, m.Track, -1)
	w := groupWriter{sv: sv, bare: enc.Bare(), perFrame: perFrame}
	status, reason := uint64(ietf.DoneTrackEnded), "track ended"
	// A session that ends cuts nothing here: moq-transport's subscriber
	// reads the session's close, not a reset code (nil ending: the open
	// group gets its FIN).
	_, err = session.Serve(sv.ctx, t, cons, rng.window(), &enc, &w, nil)
	switch {
	case err == session.ErrWindowDone:
		status, reason = ietf.DoneSubscriptionEnded, "range delivered"
	case err != nil:
		status, reason = ietf.DoneSubscriptionEnded, "unsubscribed"
		if sv.ctx.Err() == nil {
			status, reason = ietf.DoneInternalError, "internal error"
			s.Log.Debug("moq: serving subscription", "track", m.Track, "err", err)
		}
	}
	if sv.sd.c.Context().Err() == nil {
		_ = sv.reply(ietf.TypePublishDone, &ietf.PublishDone{RequestID: sv.id, Status: status,
			StreamCount: w.streams, Reason: reason})
	}
}

// groupWriter writes the groups of one subscription in
// moq-transport's wire (session.Sink): a subgroup stream per group, its
// objects carrying their timestamp as an extension.
type groupWriter struct {
	sv      *serve
	bare    bool // the objects' time as MediaMTX writes a Bare track's
	group   session.SendStream
	seq     uint64
	last    uint64 // id of the last object written on group
	fresh   bool   // nothing written on group yet: the next id is absolute
	streams uint64
	buf     []byte
	// perFrame sends each frame as its own group, ids counting from 0
	// (ServerOptions.GroupPerFrame); frames counts them.
	perFrame bool
	frames   uint64
}

func (w *groupWriter) header(first bool) ietf.SubgroupHeader {
	return ietf.SubgroupHeader{TrackAlias: w.sv.id, Group: w.seq, HasPriority: true,
		Extensions: true, EndOfGroup: true, FirstObject: first}
}

func (w *groupWriter) OpenGroup(seq, first uint64) error {
	if w.perFrame {
		return nil // WriteFrame opens a group per frame
	}
	return w.open(seq, first)
}

// open opens the subgroup stream of group seq, whose first object is
// first.
func (w *groupWriter) open(seq, first uint64) error {
	g, err := w.sv.sd.c.OpenUni(w.sv.ctx)
	if err != nil {
		return err
	}
	w.group, w.seq, w.fresh = g, seq, true
	w.streams++
	// A stream that starts past object 0 (a filter starting mid-group)
	// says so from draft 18 on.
	if _, err := g.Write(ietf.AppendSubgroupHeader(w.buf[:0], w.header(first == 0), w.sv.sd.v)); err != nil {
		w.CloseGroup(session.GroupFailed)
		return fmt.Errorf("%w: %w", session.ErrGroupStopped, err)
	}
	return nil
}

// WriteObject sends o as object id of the open group.
func (w *groupWriter) WriteObject(o session.Object, id uint64) error {
	v := w.sv.sd.v
	if w.perFrame {
		if err := w.open(w.frames, 0); err != nil {
			return err
		}
		id = 0
		w.frames++
	}
	// Object ids are deltas: the first on a stream absolute, each later
	// one the previous plus the delta plus one.
	delta := id - w.last - 1
	if w.fresh {
		delta, w.fresh = id, false
	}
	w.last = id
	b := ietf.AppendObject(w.buf[:0], w.header(true), delta, timestampExt(o, w.bare, v), o.Payload, 0, v)
	w.buf = b
	if _, err := w.group.Write(b); err != nil {
		// The subscriber stopped this group: carry on with the next.
		return fmt.Errorf("%w: %w", session.ErrGroupStopped, err)
	}
	if w.perFrame {
		w.CloseGroup(session.GroupComplete)
	}
	return nil
}

// CloseGroup ends the open group: a FIN, whose header says the subgroup
// holds the end of the group (an explicit End of Group object after it is
// what @moq/net 0.3.4 refuses on such a stream), also when the session
// ends; a reset after a failed write.
func (w *groupWriter) CloseGroup(how session.GroupEnd) {
	if w.group == nil {
		return
	}
	if how == session.GroupFailed {
		w.group.CancelWrite(codeCancel)
	} else {
		w.group.Close()
	}
	w.group = nil
}

// fetchRange resolves a FETCH into its track and range: a standalone
// fetch names both; a joining fetch takes the track of the subscription
// it joins and ends at that subscription's Largest Location, starting
// Offset groups before it (relative) or at group Offset (absolute). ns
// and name are the broadcast and track.
func (s *Publisher) fetchRange(sv *serve, m ietf.Fetch) (t *model.Track, ns, name string, r trackRange, code uint64, reason string) {
	v := sv.sd.v
	if m.Type == ietf.FetchStandalone {
		if t, _, _ = s.Pubs.Track(m.Namespace, m.Track); t == nil {
			return nil, "", "", r, ietf.ReqDoesNotExist(v), "no such track"
		}
		if m.End.Group < m.Start.Group || (m.End.Group == m.Start.Group && m.End.Object != 0 && m.End.Object <= m.Start.Object) {
			return nil, "", "", r, ietf.ReqInvalidRange(v), "range ends before its start"
		}
		return t, m.Namespace, m.Track, trackRange{Start: m.Start, End: m.End.Group, EndObject: m.End.Object, HasEnd: true}, 0, ""
	}
	sd := sv.sd
	sd.mu.Lock()
	sub := sd.serves[m.Joining]
	var largest *ietf.Location
	joinable := false
	if sub != nil {
		t, ns, name, largest, joinable = sub.track, sub.broadcast, sub.trackName, sub.largest, sub.joinable
	}
	sd.mu.Unlock()
	switch {
	case t == nil:
		return nil, "", "", r, ietf.ReqInvalidJoining(v), "no such subscription"
	case !joinable:
		return nil, "", "", r, ietf.ReqInvalidJoining(v), "the subscription has no Largest Object filter"
	case largest == nil:
		return nil, "", "", r, ietf.ReqInvalidRange(v), "the track had no objects when subscribed"
	}
	r = trackRange{End: largest.Group, EndObject: largest.Object + 1, HasEnd: true}
	if m.Type == ietf.FetchRelativeJoining {
		r.Start.Group = largest.Group - min(m.Offset, largest.Group)
	} else {
		r.Start.Group = min(m.Offset, largest.Group)
	}
	return t, ns, name, r, 0, ""
}

// serveFetch serves a FETCH: the objects of its range that the track
// holds, in ascending group order (descending when asked, in draft 14) on
// one fetch stream; a group still being written is served as it grows.
func (s *Publisher) serveFetch(sv *serve, m ietf.Fetch) {
	if s.NoFetch {
		sv.refuse(ietf.TypeFetch, ietf.ReqNotSupported, "FETCH not supported")
		return
	}
	t, ns, name, rng, code, reason := s.fetchRange(sv, m)
	if t == nil {
		sv.refuse(ietf.TypeFetch, code, reason)
		return
	}
	var groups []*model.Group
	var seqs []uint64
	for seq := rng.Start.Group; seq <= rng.End; seq++ {
		if g := t.Group(seq); g != nil {
			groups, seqs = append(groups, g), append(seqs, seq)
		}
		if seq == ^uint64(0) {
			break
		}
	}
	if len(groups) == 0 {
		sv.refuse(ietf.TypeFetch, ietf.ReqNoObjects(sv.sd.v), "no group of the range is held")
		return
	}
	v := sv.sd.v
	descending := m.GroupOrder == ietf.GroupOrderDescending && v.DescendingFetch()
	if descending {
		// Draft 14 only: later drafts' fetch objects carry their group as
		// a delta that @moq/net (and the codec) read as ascending.
		slices.Reverse(groups)
		slices.Reverse(seqs)
	}
	end := ietf.Location{Group: rng.End, Object: rng.EndObject}
	if largest := largestOf(session.EdgeOf(t)); largest != nil && (largest.Group < end.Group || (largest.Group == end.Group && end.Object == 0)) {
		// Beyond what the track holds: {Largest.Group, Largest.Object+1}.
		end = ietf.Location{Group: largest.Group, Object: largest.Object + 1}
	}
	ok := ietf.FetchOK{RequestID: sv.id, GroupOrder: ietf.GroupOrderAscending, End: end}
	if descending {
		ok.GroupOrder = ietf.GroupOrderDescending
	}
	if err := sv.reply(ietf.TypeFetchOK, &ok); err != nil {
		return
	}
	str, err := sv.sd.c.OpenUni(sv.ctx)
	if err != nil {
		return
	}
	// A consumer that never reads serves as the wake-up of a group still
	// being written.
	cons := t.Subscribe(time.Hour)
	defer cons.Close()
	rs := model.NewReadySet()
	cons.Watch(rs)
	enc := s.Pubs.Encoder(ns, name)
	bare := enc.Bare()
	fw := ietf.FetchObjectWriter{V: v}
	buf := ietf.AppendFetchHeader(nil, ietf.FetchHeader{RequestID: sv.id}, v)
	var werr error
	objects := 0
	for i, g := range groups {
		seq := seqs[i]
		from, to := rng.frames(seq)
		err := session.ServeGroup(sv.ctx, g, rs, from, to, &enc, func(o session.Object, index uint64, batchEnd bool) error {
			objects++
			buf = fw.Append(buf, seq, index, timestampExt(o, bare, v), o.Payload)
			if !batchEnd {
				return nil
			}
			_, werr = str.Write(buf)
			buf = buf[:0]
			return werr
		})
		switch {
		case err == nil || errors.Is(err, session.ErrNotHeld):
			// A group holding nothing of the range adds no object.
		case werr != nil:
			return // the subscriber refused the stream
		default:
			// Cancelled, or a group that ended in an error: it cannot
			// be vouched for.
			str.CancelWrite(codeCancel)
			return
		}
	}
	if len(buf) > 0 {
		if _, err := str.Write(buf); err != nil {
			return
		}
	}
	// Logged before the FIN, so that it is there once the subscriber has
	// the objects.
	s.Log.Debug("moq: fetch served", "track", name, "first", seqs[0], "last", seqs[len(seqs)-1], "groups", len(groups), "objects", objects)
	str.Close()
}

// Announce offers every published broadcast to the peer with
// PUBLISH_NAMESPACE, and withdraws the unpublished ones, until the
// connection is gone.
func (sd *Served) Announce() {
	if sd.p.Strict != nil {
		return // MediaMTX announces nothing
	}
	offered := map[string]func(withdraw bool){}
	defer func() {
		for _, end := range offered {
			end(false)
		}
	}()
	for {
		paths, ch := sd.p.Pubs.Paths()
		want := map[string]bool{}
		for _, p := range paths {
			want[p] = true
		}
		for p := range want {
			if offered[p] != nil {
				continue
			}
			end, err := sd.c.Offer(p)
			if err != nil {
				return
			}
			offered[p] = end
		}
		for p, end := range offered {
			if want[p] {
				continue
			}
			end(true)
			delete(offered, p)
		}
		select {
		case <-ch:
		case <-sd.c.Context().Done():
			return
		}
	}
}
