package subscribe

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe/internal/container"
	"github.com/moq-export/moq-export/subscribe/internal/ietf"
)

// The publisher side of a moq-transport session: Session.Publish serves
// its broadcasts to a moq-transport peer as it does to a moq-lite one.
// Every published broadcast is offered with PUBLISH_NAMESPACE (unasked:
// SUBSCRIBE_NAMESPACE is answered OK and changes nothing), SUBSCRIBE gets
// SUBSCRIBE_OK (track alias = request id, timescale microseconds) and one
// subgroup stream per model group, each object carrying its timestamp as
// the Timestamp extension and the payload as on moq-lite (catalog tracks
// raw, media in the hang legacy container), the group closed by an End of
// Group object; PUBLISH_DONE follows the track's end. A standalone FETCH
// of a group the track holds gets FETCH_OK and a fetch stream; other
// fetches are refused.

// ietfPublishTimescale is the timescale of published tracks.
const ietfPublishTimescale = 1_000_000

// Request error codes this publisher sends.
const (
	ietfErrNotSupported = 0x3
	ietfErrDoesNotExist = 0x4
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
}

func (ic *ietfConn) newServe(id uint64, str bidiStream) *ietfServe {
	sv := &ietfServe{ic: ic, id: id, str: str}
	sv.ctx, sv.cancel = context.WithCancel(ic.Context())
	if str == nil {
		ic.mu.Lock()
		ic.serves[id] = sv
		ic.mu.Unlock()
	}
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
		}
	}
	_ = sv.reply(typ, &ietf.RequestError{RequestID: sv.id, Code: code, Reason: reason})
}

// serveIETFRequest answers one request of the peer (body of type typ),
// on the control stream or on the request's own stream str (read by r
// after the request: its end cancels the request).
func (s *Session) serveIETFRequest(ic *ietfConn, str bidiStream, r io.Reader, typ uint64, body []byte) error {
	id, err := ietf.RequestIDOf(body, ic.v)
	if err != nil {
		return protocolErr(err)
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

// ietfServeSubscribe serves one SUBSCRIBE until the track ends or the
// peer unsubscribes.
func (s *Session) ietfServeSubscribe(sv *ietfServe, m ietf.Subscribe) {
	t := s.ietfPublishedTrack(m.Namespace, m.Track)
	if t == nil {
		sv.refuse(ietf.TypeSubscribe, ietfErrDoesNotExist, "no such track")
		return
	}
	start, hasStart := t.LatestGroup()
	cons := t.Subscribe(time.Hour)
	defer cons.Close()
	ok := ietf.SubscribeOK{RequestID: sv.id, TrackAlias: sv.id, GroupOrder: ietf.GroupOrderDescending,
		Timescale: ietfPublishTimescale}
	if hasStart {
		// Served from the start of that group on.
		largest := ietf.Location{Group: start}
		if g := t.Group(start); g != nil {
			if frames, _, _ := g.Frames(0); len(frames) > 0 {
				largest.Object = uint64(len(frames) - 1)
			}
		}
		ok.Largest = &largest
	}
	if err := sv.reply(ietf.TypeSubscribeOK, &ok); err != nil {
		return
	}
	key := servingKey{normPath(m.Namespace), m.Track}
	s.countServing(key, 1)
	defer s.countServing(key, -1)
	w := ietfGroupWriter{sv: sv, raw: isCatalogTrack(m.Track)}
	status, reason := uint64(ietf.DoneTrackEnded), "track ended"
	err := w.serve(cons, start, hasStart)
	w.close()
	if err != nil {
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
func (s *Session) ietfPublishedTrack(broadcast, track string) *model.Track {
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
	raw     bool
	group   sendStream
	seq     uint64
	next    uint64 // next object id in the group
	streams uint64
	buf     []byte
}

// serve sends what cons reads, from group start on when hasStart, until
// the track ends (nil) or the subscription is cancelled.
func (w *ietfGroupWriter) serve(cons *model.Consumer, start uint64, hasStart bool) error {
	rs := model.NewReadySet()
	cons.Watch(rs)
	for {
		for {
			ev, ok := cons.Next()
			if !ok {
				break
			}
			switch ev.Kind {
			case model.EventDiscontinuity:
				hasStart = false
				w.close()
			case model.EventEnd:
				return nil
			case model.EventFrame:
				if hasStart && ev.Group < start {
					continue
				}
				if err := w.write(ev); err != nil {
					return err
				}
			}
		}
		select {
		case <-rs.Wakeup():
			rs.Take(nil)
		case <-w.sv.ctx.Done():
			return w.sv.ctx.Err()
		}
	}
}

func (w *ietfGroupWriter) header() ietf.SubgroupHeader {
	return ietf.SubgroupHeader{TrackAlias: w.sv.id, Group: w.seq, HasPriority: true,
		Extensions: true, EndOfGroup: true, FirstObject: true}
}

func (w *ietfGroupWriter) write(ev model.Event) error {
	v := w.sv.ic.v
	if w.group == nil || ev.Group != w.seq || ev.Keyframe {
		w.close()
		g, err := w.sv.ic.OpenUni(w.sv.ctx)
		if err != nil {
			return err
		}
		w.group, w.seq, w.next = g, ev.Group, 0
		w.streams++
		if _, err := g.Write(ietf.AppendSubgroupHeader(w.buf[:0], w.header(), v)); err != nil {
			w.drop()
			return nil
		}
	}
	ts := max(ev.Frame.Timestamp, 0)
	payload := ev.Frame.Payload
	if !w.raw {
		payload = container.AppendLegacy(nil, ts, payload)
	}
	// Object ids run 0, 1, 2...: the first delta is the absolute id 0,
	// the later ones 0 too.
	b := ietf.AppendObject(w.buf[:0], w.header(), 0, ietf.AppendTimestampExt(nil, uint64(ts), v), payload, 0, v)
	w.buf = b
	w.next++
	if _, err := w.group.Write(b); err != nil {
		// The subscriber stopped this group: carry on with the next.
		w.drop()
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

// ietfServeFetch serves a standalone FETCH of one group the published
// track holds (a group still being written is served as it grows).
func (s *Session) ietfServeFetch(sv *ietfServe, m ietf.Fetch) {
	if m.Type != ietf.FetchStandalone || m.End.Group != m.Start.Group {
		sv.refuse(ietf.TypeFetch, ietfErrNotSupported, "only fetches of one group are served")
		return
	}
	t := s.ietfPublishedTrack(m.Namespace, m.Track)
	var g *model.Group
	if t != nil {
		g = t.Group(m.Start.Group)
	}
	if g == nil {
		sv.refuse(ietf.TypeFetch, ietfErrDoesNotExist, "group not held")
		return
	}
	ok := ietf.FetchOK{RequestID: sv.id, GroupOrder: ietf.GroupOrderAscending,
		End: ietf.Location{Group: m.Start.Group}}
	if err := sv.reply(ietf.TypeFetchOK, &ok); err != nil {
		return
	}
	str, err := sv.ic.OpenUni(sv.ctx)
	if err != nil {
		return
	}
	v := sv.ic.v
	raw := isCatalogTrack(m.Track)
	fw := ietf.FetchObjectWriter{V: v}
	buf := ietf.AppendFetchHeader(nil, ietf.FetchHeader{RequestID: sv.id}, v)
	// A consumer that never reads serves as the wake-up of a group still
	// being written.
	cons := t.Subscribe(time.Hour)
	defer cons.Close()
	rs := model.NewReadySet()
	cons.Watch(rs)
	for next := 0; ; {
		frames, finished, err := g.Frames(next)
		for i, f := range frames {
			ts := max(f.Timestamp, 0)
			payload := f.Payload
			if !raw {
				payload = container.AppendLegacy(nil, ts, payload)
			}
			buf = fw.Append(buf, m.Start.Group, uint64(next+i), ietf.AppendTimestampExt(nil, uint64(ts), v), payload)
		}
		next += len(frames)
		if len(buf) > 0 {
			if _, werr := str.Write(buf); werr != nil {
				return
			}
			buf = buf[:0]
		}
		if finished {
			if err != nil || m.Start.Object > uint64(next) {
				str.CancelWrite(CodeCancel)
				return
			}
			str.Close()
			return
		}
		select {
		case <-rs.Wakeup():
			rs.Take(nil)
		case <-sv.ctx.Done():
			str.CancelWrite(CodeCancel)
			return
		}
	}
}

// ietfAnnounce offers every published broadcast to the peer with
// PUBLISH_NAMESPACE, and withdraws the unpublished ones, until the
// connection is gone.
func (s *Session) ietfAnnounce(ic *ietfConn) {
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
