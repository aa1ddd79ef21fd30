package subscribe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/model"
)

// The publisher side of a moq-transport session: Session.Publish serves
// its broadcasts to a moq-transport peer as it does to a moq-lite one.
// Every published broadcast is offered with PUBLISH_NAMESPACE (unasked:
// SUBSCRIBE_NAMESPACE is answered OK and changes nothing). SUBSCRIBE gets
// SUBSCRIBE_OK (track alias = request id, timescale microseconds) and one
// subgroup stream per model group from where its filter starts
// (ietfSubscribeRange), each object carrying its timestamp as the
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

// ietfPublishTimescale is the timescale of published tracks.
const ietfPublishTimescale = 1_000_000

// Request error codes this publisher sends.
const (
	ietfErrNotSupported   = 0x3
	ietfErrDoesNotExist   = 0x4
	ietfErrInvalidRange   = 0x5
	ietfErrNoObjects      = 0x6 // FETCH
	ietfErrInvalidJoining = 0x7 // FETCH
)

// ietfServe is one request the peer made of us: answered on the control
// stream (drafts 14-16) or on the request's own stream (str), cancelled
// by UNSUBSCRIBE / FETCH_CANCEL or the end of that stream.
type ietfServe struct {
	ic     *ietfConn
	id     uint64
	str    bidiStream
	wmu    sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc

	// What a served SUBSCRIBE answered, for the FETCHes that join it
	// (under ic.mu): its track, and its Largest Location (nil: none).
	track     *model.Track
	broadcast string
	trackName string
	largest   *ietf.Location
	joinable  bool // the SUBSCRIBE_OK went out with a Largest Object filter
}

func (ic *ietfConn) newServe(id uint64, str bidiStream) *ietfServe {
	sv := &ietfServe{ic: ic, id: id, str: str}
	sv.ctx, sv.cancel = context.WithCancel(ic.Context())
	// Every request is found by its id: UNSUBSCRIBE and FETCH_CANCEL name
	// control-stream requests, joining fetches any subscription.
	ic.mu.Lock()
	ic.serves[id] = sv
	ic.mu.Unlock()
	return sv
}

// done forgets sv.
func (sv *ietfServe) done() {
	sv.cancel()
	sv.ic.mu.Lock()
	if sv.ic.serves[sv.id] == sv {
		delete(sv.ic.serves, sv.id)
	}
	sv.ic.mu.Unlock()
	if sv.str != nil {
		sv.str.Close()
		sv.str.CancelRead(CodeCancel)
	}
}

// cancelServe cancels the served request id (UNSUBSCRIBE, FETCH_CANCEL).
func (ic *ietfConn) cancelServe(id uint64) {
	ic.mu.Lock()
	sv := ic.serves[id]
	ic.mu.Unlock()
	if sv != nil {
		sv.cancel()
	}
}

func (sv *ietfServe) reply(typ uint64, m ietf.Message) error {
	return sv.ic.writeOn(sv.str, &sv.wmu, typ, m)
}

// refuse answers with the refusal of typ's request (draft 14 has one type
// per request; later drafts REQUEST_ERROR).
func (sv *ietfServe) refuse(reqType, code uint64, reason string) {
	typ := uint64(ietf.TypeRequestError)
	if sv.ic.v == ietf.Draft14 {
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

// serveIETFRequest answers one request of the peer (body of type typ),
// on the control stream or on the request's own stream str (read by r
// after the request: its end cancels the request).
func (s *publisher) serveIETFRequest(ic *ietfConn, str bidiStream, r io.Reader, typ uint64, body []byte) error {
	id, err := ietf.RequestIDOf(body, ic.v)
	if err != nil {
		return protocolErr(err)
	}
	if p := s.opts.strict; p != nil {
		what := p.refuses(typ, body, ic.v)
		m, ok := decodeSubscribe(typ, body, ic.v)
		switch {
		case what != "" || typ != ietf.TypeSubscribe:
		case !ok:
			what = "malformed SUBSCRIBE" // MediaMTX's parser fails: a close
		case s.ietfPublishedTrack(strictNamespace(s, m.Namespace), m.Track) == nil:
			what = "unknown track"
		}
		if what != "" {
			s.log.Debug("moq: strict: closing the session on a request it does not support", "request", what)
			p.count(what)
			ic.Close(ietfNoError, "")
			return nil
		}
	}
	ic.grant(id)
	sv := ic.newServe(id, str)
	if str != nil {
		s.wg.Go(func() {
			_, _ = io.Copy(io.Discard, r)
			sv.cancel()
		})
	}
	switch typ {
	case ietf.TypeSubscribe:
		var m ietf.Subscribe
		if err := ietf.Decode(body, &m, ic.v); err != nil {
			sv.done()
			return fmt.Errorf("SUBSCRIBE: %w", protocolErr(err))
		}
		if s.opts.strict != nil {
			m.Namespace = strictNamespace(s, m.Namespace)
		}
		s.wg.Go(func() {
			defer sv.done()
			s.ietfServeSubscribe(sv, m)
		})
	case ietf.TypeFetch:
		var m ietf.Fetch
		if err := ietf.Decode(body, &m, ic.v); err != nil {
			sv.done()
			return fmt.Errorf("FETCH: %w", protocolErr(err))
		}
		s.wg.Go(func() {
			defer sv.done()
			s.ietfServeFetch(sv, m)
		})
	case ietf.TypeTrackStatus:
		// SUBSCRIBE's layout in every draft.
		var m ietf.Subscribe
		if err := ietf.Decode(body, &m, ic.v); err != nil {
			sv.done()
			return fmt.Errorf("TRACK_STATUS: %w", protocolErr(err))
		}
		s.ietfServeTrackStatus(sv, m)
		sv.done()
	case ietf.TypeSubscribeNamespace14, ietf.TypeSubscribeNamespace:
		// Every broadcast is offered with PUBLISH_NAMESPACE already.
		ok := uint64(ietf.TypeRequestOK)
		if ic.v == ietf.Draft14 {
			ok = ietf.TypeSubscribeNamespaceOK
		}
		err := sv.reply(ok, &ietf.RequestOK{RequestID: id})
		if str == nil {
			sv.done()
			return err
		}
		// Held until the peer ends its stream.
		s.wg.Go(func() {
			defer sv.done()
			<-sv.ctx.Done()
		})
	default:
		s.log.Debug("moq: refusing a request", "type", typ)
		sv.refuse(typ, ietfErrNotSupported, "not supported")
		sv.done()
	}
	return nil
}

// timestampExt is the extension block of a published object at ts (µs):
// its Timestamp, in microseconds, or as MediaMTX writes it for a track
// package hang calls Bare (draft-03's id, the catalog's clock).
func timestampExt(pk hang.Track, ts int64, v ietf.Version) []byte {
	if pk.Bare() {
		return ietf.AppendTimestampExt03(nil, uint64(max(pk.ClockTime(ts), 0)), v)
	}
	return ietf.AppendTimestampExt(nil, uint64(ts), v)
}

// strictNamespace is the broadcast a SUBSCRIBE names on a Strict server:
// as MediaMTX ties a session to the stream its path names, the namespace
// is taken relative to the session path ("" is the session's stream).
func strictNamespace(s *publisher, ns string) string { return joinPath(s.root(), ns) }

// decodeSubscribe decodes body when typ is SUBSCRIBE.
func decodeSubscribe(typ uint64, body []byte, v ietf.Version) (ietf.Subscribe, bool) {
	var m ietf.Subscribe
	if typ != ietf.TypeSubscribe || ietf.Decode(body, &m, v) != nil {
		return m, false
	}
	return m, true
}

// ietfRange is the part of a track a request asks for: objects from
// Start on; through group End (inclusive) when HasEnd, and in that group
// below EndObject when it is not 0.
type ietfRange struct {
	Start     ietf.Location
	End       uint64
	EndObject uint64
	HasEnd    bool
}

// before reports whether object obj of group g lies before the range,
// after whether it lies past its end.
func (r ietfRange) before(g, obj uint64) bool {
	return g < r.Start.Group || (g == r.Start.Group && obj < r.Start.Object)
}

func (r ietfRange) after(g, obj uint64) bool {
	return r.HasEnd && (g > r.End || (g == r.End && r.EndObject > 0 && obj >= r.EndObject))
}

// ietfEdge is a track's live edge: its newest group and how many objects
// that group holds (none: no group yet).
type ietfEdge struct {
	group   uint64
	objects uint64
	ok      bool
}

func edgeOf(t *model.Track) ietfEdge {
	seq, ok := t.LatestGroup()
	if !ok {
		return ietfEdge{}
	}
	e := ietfEdge{group: seq, ok: true}
	if g := t.Group(seq); g != nil {
		frames, _, _ := g.Frames(0)
		e.objects = uint64(len(frames))
	}
	return e
}

// largest is the edge's Largest Location (nil before any object).
func (e ietfEdge) largest() *ietf.Location {
	if !e.ok {
		return nil
	}
	l := ietf.Location{Group: e.group}
	if e.objects > 0 {
		l.Object = e.objects - 1
	}
	return &l
}

// ietfSubscribeRange resolves a SUBSCRIBE filter against the live edge:
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
func ietfSubscribeRange(f ietf.Filter, v ietf.Version, e ietfEdge) ietfRange {
	var r ietfRange
	switch f.Type {
	case ietf.FilterLargestObject:
		if e.ok {
			r.Start.Group = e.group
			if v >= ietf.Draft20 {
				r.Start.Object = e.objects
			}
		}
	case ietf.FilterNextGroup:
		if e.ok {
			r.Start.Group = e.group + 1
		}
	case ietf.FilterRelative:
		if e.ok {
			r.Start.Group = e.group + 1 - min(f.Groups, e.group+1)
		}
	case ietf.FilterAbsoluteStart:
		r.Start = f.Start
		if f.Start == (ietf.Location{}) && e.ok {
			r.Start.Group = e.group
		}
	case ietf.FilterAbsoluteRange:
		r.Start, r.End, r.HasEnd = f.Start, f.End, true
	}
	return r
}

// ietfServeTrackStatus answers TRACK_STATUS with what SUBSCRIBE_OK would
// say (Largest Object, timescale), or the refusal SUBSCRIBE would get.
func (s *publisher) ietfServeTrackStatus(sv *ietfServe, m ietf.Subscribe) {
	t := s.ietfPublishedTrack(m.Namespace, m.Track)
	if t == nil {
		sv.refuse(ietf.TypeTrackStatus, ietfErrDoesNotExist, "no such track")
		return
	}
	largest := edgeOf(t).largest()
	if sv.ic.v == ietf.Draft14 {
		_ = sv.reply(ietf.TypeTrackStatusOK, &ietf.SubscribeOK{RequestID: sv.id,
			GroupOrder: ietf.GroupOrderDescending, Largest: largest})
		return
	}
	ok := ietf.RequestOK{RequestID: sv.id}
	if largest != nil {
		ok.Params.SetBytes(ietf.ParamLargestObject, ietf.AppendLocation(nil, *largest, sv.ic.v))
	}
	_ = sv.reply(ietf.TypeRequestOK, &ok)
}

// errRangeDone ends a subscription whose absolute range was delivered.
var errRangeDone = errors.New("the subscription's range was delivered")

// ietfServeSubscribe serves one SUBSCRIBE until the track ends, its range
// was delivered or the peer unsubscribes.
func (s *publisher) ietfServeSubscribe(sv *ietfServe, m ietf.Subscribe) {
	t := s.ietfPublishedTrack(m.Namespace, m.Track)
	if t == nil {
		sv.refuse(ietf.TypeSubscribe, ietfErrDoesNotExist, "no such track")
		return
	}
	if m.Filter.Type == ietf.FilterAbsoluteRange && m.Filter.End < m.Filter.Start.Group {
		sv.refuse(ietf.TypeSubscribe, ietfErrInvalidRange, "range ends before its start")
		return
	}
	// Subscribed before the edge is read: nothing published in between
	// is missed.
	cons := t.Subscribe(time.Hour)
	defer cons.Close()
	edge := edgeOf(t)
	rng := ietfSubscribeRange(m.Filter, sv.ic.v, edge)
	ok := ietf.SubscribeOK{RequestID: sv.id, TrackAlias: sv.id, GroupOrder: ietf.GroupOrderDescending,
		Timescale: ietfPublishTimescale, Largest: edge.largest()}
	if s.opts.strict != nil && s.opts.strict.groupPerFrame {
		// MediaMTX names no Largest Location (its groups are counted from
		// 0 per subscription, not the track's), and starts a reader at
		// the next keyframe, whatever the filter (the catalog it sends
		// at once).
		ok.Largest = nil
		if !isCatalogTrack(m.Track) {
			rng = ietfRange{}
			if edge.ok {
				rng.Start.Group = edge.group + 1
			}
		}
	}
	sv.ic.mu.Lock()
	sv.track, sv.broadcast, sv.trackName, sv.largest = t, m.Namespace, m.Track, ok.Largest
	sv.joinable = m.Filter.Type == ietf.FilterLargestObject
	sv.ic.mu.Unlock()
	if err := sv.reply(ietf.TypeSubscribeOK, &ok); err != nil {
		return
	}
	key := servingKey{normPath(m.Namespace), m.Track}
	s.countServing(key, 1)
	defer s.countServing(key, -1)
	w := ietfGroupWriter{sv: sv, pack: packagingOf(s.publishedBroadcast(m.Namespace), m.Track),
		perFrame: s.opts.strict != nil && s.opts.strict.groupPerFrame}
	status, reason := uint64(ietf.DoneTrackEnded), "track ended"
	err := w.serve(t, cons, rng)
	w.close()
	switch {
	case err == errRangeDone:
		status, reason = ietf.DoneSubscriptionEnded, "range delivered"
	case err != nil:
		status, reason = ietf.DoneSubscriptionEnded, "unsubscribed"
		if sv.ctx.Err() == nil {
			status, reason = ietf.DoneInternalError, "internal error"
			s.log.Debug("moq: serving subscription", "track", m.Track, "err", err)
		}
	}
	if sv.ic.Context().Err() == nil {
		_ = sv.reply(ietf.TypePublishDone, &ietf.PublishDone{RequestID: sv.id, Status: status,
			StreamCount: w.streams, Reason: reason})
	}
}

// ietfPublishedTrack returns a track of a published broadcast, nil when
// either is unknown.
func (s *publisher) ietfPublishedTrack(broadcast, track string) *model.Track {
	b := s.publishedBroadcast(broadcast)
	if b == nil {
		return nil
	}
	t, err := b.Track(track)
	if err != nil {
		return nil
	}
	return t
}

// ietfGroupWriter sends the groups of one subscription.
type ietfGroupWriter struct {
	sv      *ietfServe
	pack    hang.Track
	payload []byte // the packaged payload of the frame being written
	group   sendStream
	seq     uint64
	last    uint64 // id of the last object written on group
	streams uint64
	buf     []byte
	// perFrame sends each frame as its own group, ids counting from 0
	// (ServerOptions.GroupPerFrame); frames counts them.
	perFrame bool
	frames   uint64
}

// serve sends what cons reads within rng until the track ends (nil), the
// range was delivered (errRangeDone) or the subscription is cancelled.
func (w *ietfGroupWriter) serve(t *model.Track, cons *model.Consumer, rng ietfRange) error {
	rs := model.NewReadySet()
	cons.Watch(rs)
	// The object id of each frame: its place in its group.
	var cur, id uint64
	inGroup := false
	for {
		for {
			ev, ok := cons.Next()
			if !ok {
				break
			}
			switch ev.Kind {
			case model.EventDiscontinuity:
				inGroup = false
				w.close()
			case model.EventEnd:
				return nil
			case model.EventFrame:
				if inGroup && ev.Group == cur {
					id++
				} else {
					cur, id, inGroup = ev.Group, 0, true
				}
				if rng.after(cur, id) {
					return errRangeDone
				}
				if rng.before(cur, id) {
					continue
				}
				if err := w.write(ev, id); err != nil {
					return err
				}
			}
		}
		if w.group != nil && groupDone(t, w.seq, w.last) {
			// The group is complete: FIN its stream now rather than when
			// the next group starts.
			w.close()
		}
		if rng.HasEnd && inGroup && cur == rng.End && groupDone(t, cur, id) {
			return errRangeDone
		}
		select {
		case <-rs.Wakeup():
			rs.Take(nil)
		case <-w.sv.ctx.Done():
			return w.sv.ctx.Err()
		}
	}
}

// groupDone reports whether group seq of t is finished with object last
// as its last one.
func groupDone(t *model.Track, seq, last uint64) bool {
	g := t.Group(seq)
	if g == nil {
		return false
	}
	frames, finished, _ := g.Frames(int(last) + 1)
	return finished && len(frames) == 0
}

func (w *ietfGroupWriter) header(first bool) ietf.SubgroupHeader {
	return ietf.SubgroupHeader{TrackAlias: w.sv.id, Group: w.seq, HasPriority: true,
		Extensions: true, EndOfGroup: true, FirstObject: first}
}

// write sends the frame of ev as object id of its group.
func (w *ietfGroupWriter) write(ev model.Event, id uint64) error {
	v := w.sv.ic.v
	// Object ids are deltas: the first on a stream absolute, each later
	// one the previous plus the delta plus one.
	delta := id - w.last - 1
	if w.perFrame {
		w.close()
		ev.Group, id = w.frames, 0
		w.frames++
	}
	if w.group == nil || ev.Group != w.seq || ev.Keyframe {
		w.close()
		g, err := w.sv.ic.OpenUni(w.sv.ctx)
		if err != nil {
			return err
		}
		w.group, w.seq = g, ev.Group
		w.streams++
		// A stream that starts past object 0 (a filter starting
		// mid-group) says so from draft 18 on.
		if _, err := g.Write(ietf.AppendSubgroupHeader(w.buf[:0], w.header(id == 0), v)); err != nil {
			w.drop()
			return nil
		}
		delta = id
	}
	w.last = id
	ts := max(ev.Frame.Timestamp, 0)
	w.payload = w.pack.AppendPayload(w.payload[:0], ev.Frame)
	b := ietf.AppendObject(w.buf[:0], w.header(true), delta, timestampExt(w.pack, ts, v), w.payload, 0, v)
	w.buf = b
	if _, err := w.group.Write(b); err != nil {
		// The subscriber stopped this group: carry on with the next.
		w.drop()
	}
	if w.perFrame {
		w.close()
	}
	return nil
}

// drop abandons the open group stream.
func (w *ietfGroupWriter) drop() {
	if w.group != nil {
		w.group.CancelWrite(CodeCancel)
		w.group = nil
	}
}

// close ends the open group with a FIN: its header says the subgroup
// holds the end of the group (an explicit End of Group object after it is
// what @moq/net 0.3.4 refuses on such a stream).
func (w *ietfGroupWriter) close() {
	if w.group == nil {
		return
	}
	w.group.Close()
	w.group = nil
}

// ietfFetchRange resolves a FETCH into its track and range: a standalone
// fetch names both; a joining fetch takes the track of the subscription
// it joins and ends at that subscription's Largest Location, starting
// Offset groups before it (relative) or at group Offset (absolute). ns
// and name are the broadcast and track.
func (s *publisher) ietfFetchRange(sv *ietfServe, m ietf.Fetch) (t *model.Track, ns, name string, r ietfRange, code uint64, reason string) {
	if m.Type == ietf.FetchStandalone {
		t = s.ietfPublishedTrack(m.Namespace, m.Track)
		if t == nil {
			return nil, "", "", r, ietfErrDoesNotExist, "no such track"
		}
		if m.End.Group < m.Start.Group || (m.End.Group == m.Start.Group && m.End.Object != 0 && m.End.Object <= m.Start.Object) {
			return nil, "", "", r, ietfErrInvalidRange, "range ends before its start"
		}
		return t, m.Namespace, m.Track, ietfRange{Start: m.Start, End: m.End.Group, EndObject: m.End.Object, HasEnd: true}, 0, ""
	}
	ic := sv.ic
	ic.mu.Lock()
	sub := ic.serves[m.Joining]
	var largest *ietf.Location
	joinable := false
	if sub != nil {
		t, ns, name, largest, joinable = sub.track, sub.broadcast, sub.trackName, sub.largest, sub.joinable
	}
	ic.mu.Unlock()
	switch {
	case t == nil:
		return nil, "", "", r, ietfErrInvalidJoining, "no such subscription"
	case !joinable:
		return nil, "", "", r, ietfErrInvalidJoining, "the subscription has no Largest Object filter"
	case largest == nil:
		return nil, "", "", r, ietfErrInvalidRange, "the track had no objects when subscribed"
	}
	r = ietfRange{End: largest.Group, EndObject: largest.Object + 1, HasEnd: true}
	if m.Type == ietf.FetchRelativeJoining {
		r.Start.Group = largest.Group - min(m.Offset, largest.Group)
	} else {
		r.Start.Group = min(m.Offset, largest.Group)
	}
	return t, ns, name, r, 0, ""
}

// ietfServeFetch serves a FETCH: the objects of its range that the track
// holds, in ascending group order (descending when asked, in draft 14) on
// one fetch stream; a group still being written is served as it grows.
func (s *publisher) ietfServeFetch(sv *ietfServe, m ietf.Fetch) {
	t, ns, name, rng, code, reason := s.ietfFetchRange(sv, m)
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
		sv.refuse(ietf.TypeFetch, ietfErrNoObjects, "no group of the range is held")
		return
	}
	descending := m.GroupOrder == ietf.GroupOrderDescending && sv.ic.v == ietf.Draft14
	if descending {
		// Draft 14 only: later drafts' fetch objects carry their group as
		// a delta that @moq/net (and the codec) read as ascending.
		slices.Reverse(groups)
		slices.Reverse(seqs)
	}
	end := ietf.Location{Group: rng.End, Object: rng.EndObject}
	if largest := edgeOf(t).largest(); largest != nil && (largest.Group < end.Group || (largest.Group == end.Group && end.Object == 0)) {
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
	str, err := sv.ic.OpenUni(sv.ctx)
	if err != nil {
		return
	}
	// A consumer that never reads serves as the wake-up of a group still
	// being written.
	cons := t.Subscribe(time.Hour)
	defer cons.Close()
	rs := model.NewReadySet()
	cons.Watch(rs)
	out := fetchWriter{sv: sv, str: str, pack: packagingOf(s.publishedBroadcast(ns), name), rs: rs,
		fw: ietf.FetchObjectWriter{V: sv.ic.v}}
	out.buf = ietf.AppendFetchHeader(nil, ietf.FetchHeader{RequestID: sv.id}, sv.ic.v)
	for i, g := range groups {
		if !out.group(g, seqs[i], rng) {
			return
		}
	}
	if len(out.buf) > 0 {
		if _, err := str.Write(out.buf); err != nil {
			return
		}
	}
	str.Close()
}

// fetchWriter writes the objects of a FETCH on its stream.
type fetchWriter struct {
	sv      *ietfServe
	str     sendStream
	pack    hang.Track
	payload []byte // the packaged payload of the frame being written
	rs      *model.ReadySet
	fw      ietf.FetchObjectWriter
	buf     []byte
}

// group writes the objects of group g (sequence seq) inside rng, waiting
// for the rest of a group still being written. It returns false when the
// fetch was abandoned (cancelled, or the stream refused).
func (w *fetchWriter) group(g *model.Group, seq uint64, rng ietfRange) bool {
	v := w.sv.ic.v
	for next := 0; ; {
		frames, finished, err := g.Frames(next)
		for i, f := range frames {
			id := uint64(next + i)
			if rng.before(seq, id) || rng.after(seq, id) {
				continue
			}
			ts := max(f.Timestamp, 0)
			w.payload = w.pack.AppendPayload(w.payload[:0], f)
			w.buf = w.fw.Append(w.buf, seq, id, timestampExt(w.pack, ts, v), w.payload)
		}
		next += len(frames)
		if len(w.buf) > 0 {
			if _, werr := w.str.Write(w.buf); werr != nil {
				return false
			}
			w.buf = w.buf[:0]
		}
		if finished {
			if err != nil {
				// A group that ended in an error cannot be vouched for.
				w.str.CancelWrite(CodeCancel)
				return false
			}
			return true
		}
		if rng.after(seq, uint64(next)) {
			return true
		}
		select {
		case <-w.rs.Wakeup():
			w.rs.Take(nil)
		case <-w.sv.ctx.Done():
			w.str.CancelWrite(CodeCancel)
			return false
		}
	}
}

// ietfAnnounce offers every published broadcast to the peer with
// PUBLISH_NAMESPACE, and withdraws the unpublished ones, until the
// connection is gone.
func (s *publisher) ietfAnnounce(ic *ietfConn) {
	if s.opts.strict != nil {
		return // MediaMTX announces nothing
	}
	offered := map[string]*ietfRequest{}
	defer func() {
		for _, req := range offered {
			ic.endRequest(req)
		}
	}()
	for {
		s.mu.Lock()
		want := map[string]bool{}
		for p := range s.published {
			want[p] = true
		}
		ch := s.pubChanged
		s.mu.Unlock()
		for p := range want {
			if offered[p] != nil {
				continue
			}
			req, err := ic.newRequest(ic.Context(), false)
			if err != nil {
				return
			}
			if err := req.send(ietf.TypePublishNamespace, &ietf.PublishNamespace{RequestID: req.id, Namespace: p}); err != nil {
				ic.endRequest(req)
				return
			}
			offered[p] = req
		}
		for p, req := range offered {
			if want[p] {
				continue
			}
			if req.str == nil {
				m := ietf.PublishNamespaceDone{Namespace: p, RequestID: req.id}
				_ = ic.writeControl(ietf.TypePublishNamespaceDone, &m)
			}
			ic.endRequest(req)
			delete(offered, p)
		}
		select {
		case <-ch:
		case <-ic.Context().Done():
			return
		}
	}
}
