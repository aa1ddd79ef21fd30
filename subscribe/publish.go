package subscribe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/varint"
	"github.com/moq-export/moq-export/model"
)

// publishTimescale is the TRACK_INFO timescale of published tracks
// (model timestamps are microseconds), except cmaf ones (see packaging).
const publishTimescale = 1_000_000

// publishMaxLatency is the TRACK_INFO max latency (the reference default).
const publishMaxLatency = 5000

// Publish serves b to the peer under b.Name() (relative to the session
// root) until b ends or Unpublish. The broadcast is announced on every
// announce stream the peer has open or opens later. Tracks named like a
// catalog are sent as they are; every other track in the container its
// rendition declares in b's catalog.json: "cmaf" tracks hold moof+mdat
// frames already, sent as they are at the init's mdhd timescale (as
// `moq import fmp4` publishes them), "loc" tracks get the loc container,
// the others the legacy one.
func (s *Session) Publish(b *model.Broadcast) error { return s.pub.publish(b) }

func (s *publisher) publish(b *model.Broadcast) error {
	path := normPath(b.Name())
	if err := s.sessionErr(); err != nil {
		return err
	}
	s.mu.Lock()
	if _, ok := s.published[path]; ok {
		s.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrAlreadyPublished, path)
	}
	s.published[path] = b
	s.announceLocked(path, true)
	s.mu.Unlock()
	s.log.Debug("moq: publishing", "broadcast", path)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-b.Done():
			s.unpublish(path, b)
		case <-s.ctx.Done():
		}
	}()
	return nil
}

// Unpublish stops serving the broadcast at path and announces its end.
// Subscriptions already running continue until their tracks end.
func (s *Session) Unpublish(path string) { s.pub.unpublish(normPath(path), nil) }

func (s *publisher) unpublish(path string, only *model.Broadcast) {
	s.mu.Lock()
	b, ok := s.published[path]
	if !ok || (only != nil && b != only) {
		s.mu.Unlock()
		return
	}
	delete(s.published, path)
	s.announceLocked(path, false)
	s.mu.Unlock()
}

func (s *publisher) publishedBroadcast(path string) *model.Broadcast {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.published[normPath(path)]
}

// publishedTrack returns the published track a TRACK or SUBSCRIBE request
// names, or resets str (30 for an unknown broadcast, 13 for an unknown
// track) and returns nil.
func (s *publisher) publishedTrack(v *wire.Version, str bidiStream, broadcast, track string) *model.Track {
	code := uint64(CodeUnroutable)
	if b := s.publishedBroadcast(broadcast); b != nil {
		t, err := b.Track(track)
		if err == nil {
			return t
		}
		code = CodeNotFound
	}
	resetStream(str, liteCode(v, code))
	return nil
}

// readRequest reads the request that opens a stream, or resets str with a
// decode error.
func readRequest(str bidiStream, r *bufio.Reader, m interface{ Decode([]byte) error }) bool {
	if err := readMsg(r, m); err != nil {
		resetStream(str, CodeDecode)
		return false
	}
	return true
}

// serveTrack answers TRACK with TRACK_INFO, or resets the stream (30 for an
// unknown broadcast, 13 for an unknown track).
func (s *publisher) serveTrack(v *wire.Version, str bidiStream, r *bufio.Reader) {
	var req wire.TrackRequest
	if !readRequest(str, r, &req) || s.publishedTrack(v, str, req.Broadcast, req.Track) == nil {
		return
	}
	pk := packagingOf(s.publishedBroadcast(req.Broadcast), req.Track)
	info := wire.TrackInfo{MaxLatency: publishMaxLatency, Timescale: pk.Timescale()}
	if _, err := str.Write(info.AppendFor(nil, v)); err != nil {
		return
	}
	str.Close()
	str.CancelRead(CodeCancel)
}

// serveSubscribe serves one SUBSCRIBE: one uni stream per model group,
// SUBSCRIBE_OK with the first group, SUBSCRIBE_END and FIN when the track
// ends, FIN when the peer unsubscribes.
func (s *publisher) serveSubscribe(ctx context.Context, c conn, str bidiStream, r *bufio.Reader) {
	v := connVersion(c)
	var req wire.Subscribe
	if !readRequest(str, r, versioned{&req, v}) {
		return
	}
	t := s.publishedTrack(v, str, req.Broadcast, req.Track)
	if t == nil {
		return
	}
	parent := ctx // the connection's: done when the session ends
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The peer unsubscribes with a FIN (or a reset); updates are read and
	// ignored except for the end cap, which this publisher does not hold.
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		defer cancel()
		for {
			var u wire.SubscribeUpdate
			if err := readMsg(r, versioned{&u, v}); err != nil {
				return
			}
		}
	}()
	defer rwg.Wait()

	p := &pubTrack{s: s, c: c, v: v, ctx: ctx, parent: parent, str: str, sub: req, pack: packagingOf(s.publishedBroadcast(req.Broadcast), req.Track)}
	cons := p.begin(t)
	defer cons.Close()
	if v.SubscribeOK {
		// lite-01..04 acknowledge at once, as the reference does: the
		// subscriber's priority, and (unlike the reference, which sends
		// none) the start group when it is already known, which the
		// layout has room for and our subscriber uses.
		ack := wire.SubscribeResponse{Type: wire.RespAck, Ack: wire.SubscribeParams{Priority: req.Priority}}
		if p.hasFirst {
			ack.Ack.Start = wire.Some(p.first)
		}
		if _, err := str.Write(ack.AppendFor(nil, v)); err != nil {
			resetStream(str, CodeCancel)
			return
		}
	}
	// Counted once the start group is fixed and the consumer attached:
	// every group appended from now on reaches the subscriber.
	key := servingKey{normPath(req.Broadcast), req.Track}
	s.countServing(key, 1)
	defer s.countServing(key, -1)
	err := p.serve(cons)
	switch {
	case err == nil:
		str.Close()
	case parent.Err() != nil || s.ctx.Err() != nil:
		// The session is ending (Close, a server that stops): the
		// subscription is cut, not complete. A FIN would read as the
		// publisher's end of it.
		str.CancelWrite(liteCode(v, CodeClosed))
	case ctx.Err() != nil:
		// Unsubscribed: finish our side too.
		str.Close()
	default:
		s.log.Debug("moq: serving subscription", "track", req.Track, "err", err)
		str.CancelWrite(CodeCancel)
	}
	str.CancelRead(CodeCancel)
}

// pubTrack serves one subscription.
type pubTrack struct {
	s   *publisher
	c   conn
	v   *wire.Version
	ctx context.Context
	// parent is the connection's context: done when the session ends
	// (ctx also ends when the peer unsubscribes).
	parent context.Context
	str    bidiStream
	sub    wire.Subscribe
	pack   hang.Track

	first    uint64 // first group to send, when hasFirst
	hasFirst bool

	okSent  bool
	dropped bool // the subscriber stopped group seq
	group   sendStream
	seq     uint64
	sent    int // frames of group seq the consumer delivered
	// index is the group-local index of the frame being served (lite-06
	// frame ranges and GROUP's Frame Start); idxGroup is its group.
	index    int
	idxGroup uint64
	idxSet   bool
	lastTS   int64
	hasLast  bool // a group was opened
	buf      []byte
}

// begin fixes the first group to send and attaches a consumer to t.
func (p *pubTrack) begin(t *model.Track) *model.Consumer {
	p.first, p.hasFirst = p.sub.Start.Seq, p.sub.Start.Valid
	if latest, ok := t.LatestGroup(); p.v.FrameRange && ok && latest >= p.sub.Start.Seq {
		// lite-06 (section 6.2): Group Start is a floor. The start is the
		// oldest group at or above it that the max age does not expire:
		// the latest one without a max age. A floor above the latest
		// group waits there.
		p.first, p.hasFirst = latest, true
		if p.sub.MaxLatency > 0 {
			if seq, ok := oldestUnexpired(t, p.sub.Start.Seq, p.sub.MaxLatency); ok {
				p.first = seq
			}
		}
	}
	if !p.hasFirst {
		// Start at the live edge, like the reference publishers.
		p.first, p.hasFirst = t.LatestGroup()
	}
	return t.Subscribe(time.Hour)
}

// oldestUnexpired returns the oldest group of t at or above floor that a
// subscriber's max age (ms) does not expire (moq-lite-06 section 6.2): a
// group's reach is the first timestamp of the next group, its age the
// newest frame's timestamp minus its reach, and it expires when its age
// reaches maxAge. The latest group never expires; a group whose successor
// has no frame yet does not either. Groups the track no longer holds end
// the walk.
func oldestUnexpired(t *model.Track, floor, maxAge uint64) (uint64, bool) {
	latest, ok := t.LatestGroup()
	if !ok || latest < floor {
		return 0, false
	}
	newest, hasNewest := int64(0), false
	for seq := latest; ; seq-- {
		g := t.Group(seq)
		if g == nil {
			break
		}
		if frames, _, _ := g.Frames(0); len(frames) > 0 {
			newest, hasNewest = frames[len(frames)-1].Timestamp, true
			break
		}
		if seq == 0 {
			break
		}
	}
	first := latest
	for seq := latest; seq > floor; seq-- {
		g := t.Group(seq - 1)
		if g == nil || t.Group(seq) == nil {
			break
		}
		if next, _, _ := t.Group(seq).Frames(0); len(next) > 0 && hasNewest &&
			newest-next[0].Timestamp >= int64(min(maxAge, math.MaxInt64/1000)*1000) {
			break
		}
		first = seq - 1
	}
	return first, true
}

// serve sends what cons reads until the track ends or the subscription is
// cancelled.
func (p *pubTrack) serve(cons *model.Consumer) error {
	start, hasStart := p.first, p.hasFirst
	rs := model.NewReadySet()
	cons.Watch(rs)
	var ready []*model.Consumer
	defer p.closeGroup(nil)
	for {
		for {
			ev, ok := cons.Next()
			if !ok {
				break
			}
			switch ev.Kind {
			case model.EventDiscontinuity:
				// A new timeline: the start filter belongs to the old
				// one. (A marker's discontinuity goes on on the same
				// timeline: the filter holds.)
				if ev.Restart {
					hasStart = false
				}
				p.closeGroup(nil)
			case model.EventEnd:
				p.closeGroup(nil)
				end := uint64(0)
				if p.hasLast {
					end = p.seq + 1
				}
				// SUBSCRIBE_END where the version has it (lite-05+); the
				// FIN alone ends the subscription before.
				if !p.v.SubscribeOK {
					resp := wire.SubscribeResponse{Type: wire.RespEnd, Group: end}
					if _, err := p.str.Write(resp.AppendFor(nil, p.v)); err != nil {
						return err
					}
				}
				if ev.Err != nil {
					p.s.log.Debug("moq: published track ended with error", "track", p.sub.Track, "err", ev.Err)
				}
				return nil
			case model.EventFrame:
				if !p.idxSet || ev.Group != p.idxGroup {
					p.index, p.idxGroup, p.idxSet = 0, ev.Group, true
				} else {
					p.index++
				}
				if hasStart && ev.Group < start {
					continue
				}
				if p.sub.End.Valid && ev.Group > p.sub.End.Seq {
					continue
				}
				if !p.inFrameRange(ev.Group, hasStart && p.sub.Start.Valid) {
					if p.group != nil && ev.Group == p.seq {
						// Past the frame end: the group's stream is
						// complete.
						p.closeGroup(nil)
					}
					continue
				}
				if err := p.writeFrame(ev); err != nil {
					return err
				}
			}
		}
		p.finishGroup(cons.Track())
		select {
		case <-rs.Wakeup():
			ready = rs.Take(ready[:0])
		case <-p.ctx.Done():
			if p.group != nil && p.sessionEnding() {
				// Cut, not complete: a reset the subscriber reads as
				// the session closing, so that its resumed
				// subscription completes the group.
				p.group.CancelWrite(liteCode(p.v, CodeClosed))
				p.group = nil
			}
			return p.ctx.Err()
		}
	}
}

// inFrameRange reports whether the frame at p.index of group seq is inside
// the subscription's frame range (lite-06): at or after Frame Start in the
// floor group, at or before Frame End in the end group.
func (p *pubTrack) inFrameRange(seq uint64, floor bool) bool {
	if floor && seq == p.sub.Start.Seq && uint64(p.index) < p.sub.FrameStart {
		return false
	}
	return !(p.sub.End.Valid && p.sub.FrameEnd.Valid && seq == p.sub.End.Seq && uint64(p.index) > p.sub.FrameEnd.Seq)
}

// sessionEnding reports whether the subscription ends because its session
// or connection does (not because the subscriber left).
func (p *pubTrack) sessionEnding() bool { return p.parent.Err() != nil || p.s.ctx.Err() != nil }

func (p *pubTrack) writeFrame(ev model.Event) error {
	if p.dropped && ev.Group == p.seq && !ev.Keyframe {
		return nil
	}
	p.dropped = false
	if p.group == nil || ev.Group != p.seq || ev.Keyframe {
		p.closeGroup(nil)
		if !p.okSent && !p.v.SubscribeOK {
			resp := wire.SubscribeResponse{Type: wire.RespOK, Group: ev.Group}
			if _, err := p.str.Write(resp.Append(nil)); err != nil {
				return err
			}
			p.okSent = true
		}
		g, err := p.c.OpenUni(p.ctx)
		if err != nil {
			return err
		}
		h := wire.Group{SubscribeID: p.sub.ID, Sequence: ev.Group, FrameStart: uint64(p.index)}
		if _, err := g.Write(h.AppendFor(varint.Append(p.buf[:0], wire.UniGroup), p.v)); err != nil {
			g.CancelWrite(CodeCancel)
			return err
		}
		p.group, p.seq, p.sent, p.lastTS, p.hasLast = g, ev.Group, 0, 0, true
	}
	p.sent++
	ts := ev.Frame.Timestamp
	b := appendFrame(p.buf[:0], p.v, p.pack, ev.Frame, p.lastTS)
	p.buf = b
	p.lastTS = ts
	if _, err := p.group.Write(b); err != nil {
		p.closeGroup(err)
		if errors.Is(err, context.Canceled) || p.ctx.Err() != nil {
			return p.ctx.Err()
		}
		// The subscriber stopped this group (STOP_SENDING): carry on
		// with the next one.
		var re *ResetError
		if errors.As(err, &re) {
			p.dropped = true
			return nil
		}
		return err
	}
	return nil
}

// finishGroup FINs the open group stream once its model group is finished
// and every frame of it was delivered (as the moq-transport writer does),
// instead of when the next group begins: the subscriber learns at once
// that the group is complete, and its reader of the stream (a goroutine, a
// buffer, the stream's state) ends, where a paused broadcast would keep
// it open until it resumes. A group whose frames the consumer did not all
// deliver is left to the next group, as before.
func (p *pubTrack) finishGroup(t *model.Track) {
	last := uint64(p.sent - 1)
	if p.idxSet && p.idxGroup == p.seq {
		// The group-local index of the last frame read: the stream may
		// have begun inside the group (a frame range, a sync frame).
		last = uint64(p.index)
	}
	if p.group != nil && !p.dropped && groupDone(t, p.seq, last) {
		p.closeGroup(nil)
	}
}

// closeGroup finishes the open group stream: FIN, or a reset after err.
func (p *pubTrack) closeGroup(err error) {
	if p.group == nil {
		return
	}
	if err != nil {
		p.group.CancelWrite(CodeCancel)
	} else {
		p.group.Close()
	}
	p.group = nil
}

// servingKey names a served track: broadcast path and track name.
type servingKey struct{ broadcast, track string }

// countServing adds d to the served subscriptions of key.
func (s *publisher) countServing(key servingKey, d int) {
	s.mu.Lock()
	s.servingTracks[key] += d
	if s.servingTracks[key] == 0 {
		delete(s.servingTracks, key)
	}
	s.mu.Unlock()
	s.serving.Add(int64(d))
}

// servingTrack returns how many subscriptions to track of broadcast this
// session serves now, counting those whose start group is fixed.
func (s *publisher) servingTrack(broadcast, track string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servingTracks[servingKey{normPath(broadcast), track}]
}

// serveFetch answers FETCH with the frames of one group the published
// track still holds, then FIN; a group it does not hold (never made, or
// dropped from the track's buffer) is reset with 13, as the reference does.
// A group still being written is served as its frames arrive.
func (s *publisher) serveFetch(ctx context.Context, v *wire.Version, str bidiStream, r *bufio.Reader) {
	var req wire.Fetch
	if !readRequest(str, r, versioned{&req, v}) {
		return
	}
	t := s.publishedTrack(v, str, req.Broadcast, req.Track)
	if t == nil {
		return
	}
	g := t.Group(req.Group)
	if g == nil {
		s.log.Debug("moq: fetch of a group not held", "track", req.Track, "group", req.Group)
		resetStream(str, liteCode(v, CodeNotFound))
		return
	}
	// A reset of the subscriber's side cancels the fetch; its FIN does not.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if _, err := io.Copy(io.Discard, r); err != nil {
			cancel()
		}
	}()
	// A consumer that never reads serves as the wake-up of a group still
	// being written.
	cons := t.Subscribe(time.Hour)
	defer cons.Close()
	rs := model.NewReadySet()
	cons.Watch(rs)
	pack := packagingOf(s.publishedBroadcast(req.Broadcast), req.Track)
	var buf []byte
	var last int64
	// A frame range (lite-06) starts at FrameStart and stops after
	// FrameEnd; a group that ends before FrameStart cannot serve it and is
	// reset (never a shorter run), one that ends before FrameEnd is served
	// to its end.
	next := int(min(req.FrameStart, 1<<31))
	sent, bytes := 0, 0
	for {
		frames, finished, err := g.Frames(next)
		if req.FrameEnd.Valid && uint64(next)+uint64(len(frames)) >= req.FrameEnd.Seq+1 {
			frames = frames[:max(0, int(req.FrameEnd.Seq+1)-next)]
			finished, err = true, nil
		}
		if finished && len(frames) == 0 && next > 0 && uint64(next) == req.FrameStart {
			if held, _, _ := g.Frames(0); uint64(len(held)) < req.FrameStart {
				s.log.Debug("moq: fetch of frames a group does not hold", "track", req.Track, "group", req.Group, "from", req.FrameStart)
				resetStream(str, liteCode(v, CodeNotFound))
				return
			}
		}
		buf = buf[:0]
		for _, f := range frames {
			buf = appendFrame(buf, v, pack, f, last)
			last = f.Timestamp
		}
		next += len(frames)
		sent, bytes = sent+len(frames), bytes+len(buf)
		if len(buf) > 0 {
			if _, werr := str.Write(buf); werr != nil {
				str.CancelRead(CodeCancel)
				return
			}
		}
		if finished {
			if err != nil {
				resetStream(str, CodeCancel)
				return
			}
			// Logged before the FIN, so that it is there once the
			// subscriber has the frames.
			s.log.Debug("moq: fetch served", "track", req.Track, "group", req.Group, "from", req.FrameStart, "frames", sent, "bytes", bytes)
			str.Close()
			str.CancelRead(CodeCancel)
			return
		}
		select {
		case <-rs.Wakeup():
			rs.Take(nil)
		case <-ctx.Done():
			resetStream(str, CodeCancel)
			return
		}
	}
}
