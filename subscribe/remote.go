package subscribe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe/internal/container"
	"github.com/moq-export/moq-export/subscribe/internal/wire"
)

// kindRaw marks tracks without a container: catalog tracks, whose frame
// timestamps come from the wire.
const kindRaw = "raw"

func isCatalogTrack(name string) bool {
	return name == catalog.TrackName || name == catalog.CompressedTrackName || name == catalog.MSFTrackName
}

// remoteBroadcast is a broadcast of the peer that we subscribe to.
type remoteBroadcast struct {
	s      *Session
	path   string
	b      *model.Broadcast
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu          sync.Mutex
	activated   chan struct{} // closed and replaced on each active announcement
	tracks      map[string]*remoteTrack
	catalogOnce sync.Once
	catalogSeen chan struct{}
}

// Broadcast returns the peer's broadcast at path (relative to the session
// root). Its tracks are subscribed on demand (model.Broadcast.Track). The
// same path returns the same broadcast until it ends (an "ended"
// announcement, Close, or the session's end); then a new one.
func (s *Session) Broadcast(path string) *model.Broadcast {
	path = normPath(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if rb, ok := s.remotes[path]; ok {
		return rb.b
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	rb := &remoteBroadcast{
		s: s, path: path, b: model.NewBroadcast(path), ctx: ctx, cancel: cancel,
		tracks: map[string]*remoteTrack{}, catalogSeen: make(chan struct{}), activated: make(chan struct{}),
	}
	rb.b.HandleRequests(rb.request)
	s.remotes[path] = rb
	if s.err != nil {
		err := s.err
		go rb.close(err)
		return rb.b
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		rb.watch()
	}()
	return rb.b
}

// watch ends the broadcast's work when the model broadcast is closed by its
// owner, and follows its announcements until then.
func (rb *remoteBroadcast) watch() {
	rb.s.wg.Add(1)
	go func() {
		defer rb.s.wg.Done()
		rb.followAnnouncements()
	}()
	select {
	case <-rb.b.Done():
		rb.close(rb.b.Err())
	case <-rb.ctx.Done():
	}
}

// followAnnouncements closes the broadcast on an "ended" announcement and
// resubscribes its tracks on a restart. When the feed ends (the peer closed
// the announce stream) the broadcast stays: its tracks report their own
// ends.
func (rb *remoteBroadcast) followAnnouncements() {
	feed := rb.s.announced(rb.path)
	defer feed.Close()
	for {
		a, err := feed.Next(rb.ctx)
		if err != nil {
			return
		}
		if a.Path != rb.path {
			continue
		}
		if a.Active {
			rb.mu.Lock()
			close(rb.activated)
			rb.activated = make(chan struct{})
			rb.mu.Unlock()
		}
		switch {
		case !a.Active && !a.diff:
			rb.s.log.Info("moq: broadcast ended", "broadcast", rb.path)
			rb.close(nil)
			return
		case a.Active && a.restart:
			rb.s.log.Info("moq: broadcast restarted, resubscribing", "broadcast", rb.path)
			rb.mu.Lock()
			for _, rt := range rb.tracks {
				rt.restart()
			}
			rb.mu.Unlock()
		}
	}
}

// close ends the broadcast and forgets it, so the next Broadcast call for
// the path starts over.
func (rb *remoteBroadcast) close(err error) {
	rb.s.mu.Lock()
	if rb.s.remotes[rb.path] == rb {
		delete(rb.s.remotes, rb.path)
	}
	rb.s.mu.Unlock()
	if err == nil {
		rb.cancel(errStopped)
	} else {
		rb.cancel(err)
	}
	rb.b.Close(err)
}

// request is the model.Broadcast request handler: it starts a
// subscription for track name.
func (rb *remoteBroadcast) request(name string) (*model.Track, error) {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	if rt, ok := rb.tracks[name]; ok {
		return rt.track, nil
	}
	if rb.ctx.Err() != nil {
		return nil, fmt.Errorf("broadcast %q: %w", rb.path, model.ErrClosed)
	}
	kind := rb.knownKind(name)
	if kind != "" && kind != container.Legacy && kind != container.LOC && kind != kindRaw {
		return nil, fmt.Errorf("track %q of %q: %w: %q", name, rb.path, ErrUnsupportedContainer, kind)
	}
	rt := &remoteTrack{rb: rb, name: name, track: model.NewTrack(name), kind: kind}
	rb.tracks[name] = rt
	if !isCatalogTrack(name) {
		rt.track.HandleBackfill(rt.backfill)
	}
	rb.s.wg.Add(1)
	go func() {
		defer rb.s.wg.Done()
		rt.run()
	}()
	return rt.track, nil
}

// knownKind returns the container of track name if it is known without
// waiting.
func (rb *remoteBroadcast) knownKind(name string) string {
	if isCatalogTrack(name) {
		return kindRaw
	}
	if f := rb.s.opts.Container; f != nil {
		if k := f(rb.path, name); k != "" {
			return k
		}
	}
	rb.s.mu.Lock()
	defer rb.s.mu.Unlock()
	return rb.s.containers[rb.path][name]
}

// kindOf returns the container of track name, reading the broadcast's
// catalog when it is not known yet (bounded by the request timeout;
// "legacy" when the catalog does not say).
func (rb *remoteBroadcast) kindOf(name string) (string, error) {
	if k := rb.knownKind(name); k != "" {
		return k, nil
	}
	rb.catalogOnce.Do(func() {
		rb.s.wg.Add(1)
		go func() {
			defer rb.s.wg.Done()
			rb.followCatalog()
		}()
	})
	t := time.NewTimer(rb.s.opts.RequestTimeout)
	defer t.Stop()
	select {
	case <-rb.catalogSeen:
	case <-t.C:
	case <-rb.ctx.Done():
		return "", context.Cause(rb.ctx)
	}
	if k := rb.knownKind(name); k != "" {
		return k, nil
	}
	rb.s.log.Warn("moq: track not in the catalog, assuming the legacy container", "broadcast", rb.path, "track", name)
	return container.Legacy, nil
}

// followCatalog records the containers of the broadcast's renditions.
func (rb *remoteBroadcast) followCatalog() {
	w, err := WatchCatalog(rb.b, CatalogOptions{})
	if err != nil {
		rb.s.log.Warn("moq: catalog", "broadcast", rb.path, "err", err)
		return
	}
	defer w.Close()
	first := true
	for {
		c, err := w.Next(rb.ctx)
		if err != nil {
			if first {
				close(rb.catalogSeen)
			}
			return
		}
		rb.s.learnCatalog(rb.path, c)
		if first {
			close(rb.catalogSeen)
			first = false
		}
	}
}

// learnCatalog records the container of every rendition of c (the catalog
// of broadcast path), following "broadcast" references.
func (s *Session) learnCatalog(path string, c *catalog.Catalog) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range c.Renditions() {
		cm := r.Common()
		bpath := path
		if cm.Broadcast != nil {
			p, ok := ResolveBroadcast(path, *cm.Broadcast)
			if !ok {
				s.log.Warn("moq: rendition broadcast escapes the root, ignored", "broadcast", path, "rendition", r.Name)
				continue
			}
			bpath = p
		}
		m := s.containers[bpath]
		if m == nil {
			m = map[string]string{}
			s.containers[bpath] = m
		}
		m[r.Name] = string(cm.ContainerKind())
	}
}

// remoteTrack is one subscribed track; it survives reconnects.
type remoteTrack struct {
	rb    *remoteBroadcast
	name  string
	track *model.Track
	kind  string

	// live is set once TRACK_INFO arrived: from then on the track resumes
	// after reconnects. Owned by the run goroutine.
	live bool

	mu      sync.Mutex
	attempt context.CancelCauseFunc // cancels the current subscription
	// The connection and timescale of the current subscription (conn nil
	// between subscriptions), for backfill; subGen counts subscriptions.
	conn      conn
	timescale uint64
	subGen    uint64
}

var errRestart = errors.New("moq: broadcast restarted")

func (rt *remoteTrack) restart() {
	rt.mu.Lock()
	if rt.attempt != nil {
		rt.attempt(errRestart)
	}
	rt.mu.Unlock()
}

// resumeWindow bounds how long a track that was live keeps retrying
// refusals after a reconnect or restart (the publisher may not be back on
// the relay yet).
func (rt *remoteTrack) resumeWindow() time.Duration {
	return 2*rt.rb.s.opts.Reconnect.Max + rt.rb.s.opts.resumeGrace
}

func (rt *remoteTrack) run() {
	s := rt.rb.s
	log := s.log.With("broadcast", rt.rb.path, "track", rt.name)
	if rt.kind == "" {
		k, err := rt.rb.kindOf(rt.name)
		if err != nil {
			rt.track.Close(closeReason(err))
			return
		}
		if k != container.Legacy && k != container.LOC && k != kindRaw {
			log.Warn("moq: unsupported container, track skipped", "container", k)
			rt.track.Close(fmt.Errorf("track %q: %w: %q", rt.name, ErrUnsupportedContainer, k))
			return
		}
		rt.kind = k
	}
	var gen uint64
	var refusedSince time.Time
	for {
		c, g, err := s.waitConn(rt.rb.ctx, gen)
		if err != nil {
			rt.track.Close(closeReason(err))
			return
		}
		gen = g
		ctx, cancel := context.WithCancelCause(rt.rb.ctx)
		stop := context.AfterFunc(c.Context(), func() { cancel(connCause(c)) })
		rt.mu.Lock()
		rt.attempt = cancel
		rt.mu.Unlock()
		err = rt.subscribe(ctx, c)
		stop()
		cancel(nil)
		if !errors.Is(err, ErrRefused) {
			// The window counts one run of refusals, not the track's life.
			refusedSince = time.Time{}
		}
		switch {
		case err == nil:
			log.Debug("moq: track ended")
			rt.track.Close(nil)
			return
		case rt.rb.ctx.Err() != nil:
			rt.track.Close(closeReason(context.Cause(rt.rb.ctx)))
			return
		case errors.Is(err, errRestart):
			gen = 0 // same connection is fine
			continue
		case connGone(c, err):
			continue // resume on the next connection
		case errors.Is(err, ErrRefused) && !rt.live && isResetCode(err, CodeUnroutable):
			// The relay has not heard of the broadcast yet: wait for its
			// announcement (or retry now and then) instead of giving up.
			log.Debug("moq: broadcast not routable yet, waiting for its announcement")
			rt.rb.mu.Lock()
			ch := rt.rb.activated
			rt.rb.mu.Unlock()
			t := time.NewTimer(s.opts.Reconnect.Max)
			select {
			case <-ch:
			case <-t.C:
			case <-rt.rb.ctx.Done():
			}
			t.Stop()
			gen = 0
			continue
		case errors.Is(err, ErrRefused) && rt.live:
			if refusedSince.IsZero() {
				refusedSince = time.Now()
			}
			if time.Since(refusedSince) > rt.resumeWindow() {
				rt.track.Close(err)
				return
			}
			log.Debug("moq: resubscribe refused, retrying", "err", err)
			if !sleepCtx(rt.rb.ctx, s.opts.Reconnect.Min) {
				continue
			}
			gen = 0
			continue
		default:
			log.Warn("moq: subscription failed", "err", err)
			rt.track.Close(err)
			return
		}
	}
}

func isResetCode(err error, code uint64) bool {
	re, ok := errors.AsType[*ResetError](err)
	return ok && re.Code == code
}

func closeReason(err error) error {
	if errors.Is(err, errStopped) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// subscription is one SUBSCRIBE on one connection.
type subscription struct {
	id        uint64
	rt        *remoteTrack
	timescale uint64
	groups    sync.WaitGroup
	// ctx ends with the subscription attempt, or when the drain gives up
	// on the group streams still open; group readers stop reading then.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// started is closed once SUBSCRIBE_OK fixed the first group (or the
	// subscription ended without it): group streams that land earlier
	// wait for it before they become model groups, so that readers start
	// at the group it names and not at whichever stream landed first.
	started     chan struct{}
	startedOnce sync.Once

	mu      sync.Mutex
	seen    map[uint64]bool // group sequences received
	arrived chan struct{}   // signalled when a group arrives
}

// markStarted releases the group streams waiting for SUBSCRIBE_OK.
func (sub *subscription) markStarted() {
	sub.startedOnce.Do(func() { close(sub.started) })
}

// waitStarted holds a group stream that landed before SUBSCRIBE_OK until
// the start group is known. A publisher sends SUBSCRIBE_OK no later than
// its first group, but on another stream, so the group may be read first;
// a peer that never sends it is waited for at most the request timeout.
func (sub *subscription) waitStarted(seq uint64) {
	select {
	case <-sub.started:
		return
	default:
	}
	log := sub.rt.rb.s.log
	log.Debug("moq: group landed before SUBSCRIBE_OK, waiting for it", "track", sub.rt.name, "group", seq)
	t := time.NewTimer(sub.rt.rb.s.opts.RequestTimeout)
	defer t.Stop()
	select {
	case <-sub.started:
	case <-sub.ctx.Done():
	case <-t.C:
		log.Warn("moq: no SUBSCRIBE_OK before the group streams, reading them anyway", "track", sub.rt.name)
		sub.markStarted()
	}
}

// groupArrived records group seq.
func (sub *subscription) groupArrived(seq uint64) {
	sub.mu.Lock()
	sub.seen[seq] = true
	sub.mu.Unlock()
	select {
	case sub.arrived <- struct{}{}:
	default:
	}
}

// drain waits, after the publisher's FIN, for the group streams still in
// flight: every group in [start, end) when both are known, otherwise until
// no new group arrived for a short while. Then it unregisters the
// subscription, so that no group stream joins the wait for those already
// reading, and waits for those. The whole wait is bounded by the drain
// grace period: group streams still open then get STOP_SENDING and their
// model groups end as truncated (ErrTruncated).
func (sub *subscription) drain(ctx context.Context, start, end uint64, bounded bool) {
	grace, stop := context.WithTimeout(ctx, sub.rt.rb.s.opts.drainGrace)
	defer stop()
	for {
		sub.mu.Lock()
		complete := false
		if bounded {
			complete = true
			for seq := start; seq < end && seq-start < 1<<16; seq++ {
				if !sub.seen[seq] {
					complete = false
					break
				}
			}
		}
		sub.mu.Unlock()
		if complete {
			break
		}
		quiet := time.NewTimer(100 * time.Millisecond)
		if bounded {
			quiet.Stop()
		}
		select {
		case <-sub.arrived:
			quiet.Stop()
			continue
		case <-quiet.C:
		case <-grace.Done():
			quiet.Stop()
		}
		break
	}
	sub.rt.rb.s.unregister(sub)
	done := make(chan struct{})
	go func() {
		sub.groups.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-grace.Done():
	}
	if ctx.Err() == nil {
		sub.rt.rb.s.log.Warn("moq: group streams still open after the subscription ended, stopped",
			"broadcast", sub.rt.rb.path, "track", sub.rt.name)
	}
	sub.cancel(fmt.Errorf("%w: stream still open %v after the subscription ended", ErrTruncated, sub.rt.rb.s.opts.drainGrace))
	<-done
}

// unregister removes sub from the session: group streams for it are
// refused from now on.
func (s *Session) unregister(sub *subscription) {
	s.mu.Lock()
	if s.subs[sub.id] == sub {
		delete(s.subs, sub.id)
	}
	s.mu.Unlock()
}

// subscribe runs TRACK and SUBSCRIBE on c until the subscription ends:
// nil for a clean end by the publisher, an error otherwise.
func (rt *remoteTrack) subscribe(ctx context.Context, c conn) error {
	s := rt.rb.s
	v := connVersion(c)
	// Without a Track stream (lite-01..04) nothing tells the timescale;
	// frames carry no wire timestamp there either, so raw tracks get 0.
	info := wire.TrackInfo{Timescale: publishTimescale}
	if v.TrackInfo {
		var err error
		if info, err = rt.trackInfo(ctx, c); err != nil {
			return err
		}
	}
	resumed := rt.live
	rt.live = true

	s.mu.Lock()
	id := s.nextSubID
	s.nextSubID++
	sub := &subscription{id: id, rt: rt, timescale: info.Timescale,
		seen: map[uint64]bool{}, arrived: make(chan struct{}, 1), started: make(chan struct{})}
	sub.ctx, sub.cancel = context.WithCancelCause(ctx)
	s.subs[id] = sub
	s.mu.Unlock()
	defer s.unregister(sub)
	defer sub.cancel(nil)
	defer sub.markStarted()
	rt.mu.Lock()
	rt.conn, rt.timescale = c, info.Timescale
	rt.subGen++
	rt.mu.Unlock()
	defer func() {
		rt.mu.Lock()
		rt.conn = nil
		rt.mu.Unlock()
	}()
	if resumed {
		// Groups of this subscription start a new timeline.
		rt.track.Discontinuity()
	}

	str, err := c.OpenBidi(ctx)
	if err != nil {
		return fmt.Errorf("open subscribe stream: %w", err)
	}
	m := wire.Subscribe{
		ID: id, Broadcast: rt.rb.path, Track: rt.name,
		SubscribeParams: wire.SubscribeParams{
			Priority: priorityOf(rt.name), MaxLatency: uint64(s.opts.MaxLatency.Milliseconds()),
		},
	}
	if _, err := str.Write(m.AppendFor(wire.AppendVarint(nil, wire.StreamSubscribe), v)); err != nil {
		str.CancelRead(CodeCancel)
		return fmt.Errorf("send SUBSCRIBE: %w", err)
	}
	// Unsubscribe with a FIN when the attempt is cancelled (the @moq/net
	// publisher only stops on a FIN).
	stop := context.AfterFunc(ctx, func() {
		str.Close()
		str.SetReadDeadline(time.Now())
	})
	defer stop()

	r := bufio.NewReader(str)
	started := false
	var first, end uint64
	var haveFirst, haveEnd bool
	for {
		resp, err := wire.ReadSubscribeResponseFor(r, v)
		if err != nil {
			if ctx.Err() != nil {
				str.CancelRead(CodeCancel)
				return context.Cause(ctx)
			}
			if connGone(c, err) {
				return connLoss(c, err)
			}
			if err == io.EOF {
				// The publisher accounted for every group: wait for the
				// streams still on their way.
				sub.markStarted()
				sub.drain(ctx, first, end, haveFirst && haveEnd)
				str.Close()
				return nil
			}
			if re, ok := errors.AsType[*ResetError](err); ok {
				str.CancelWrite(CodeCancel)
				if !started {
					return fmt.Errorf("%w: SUBSCRIBE %q/%q: %w", ErrRefused, rt.rb.path, rt.name, re)
				}
				return re
			}
			resetStream(str, CodeDecode)
			return fmt.Errorf("subscribe stream: %w", protocolErr(err))
		}
		switch resp.Type {
		case wire.RespOK:
			started = true
			first, haveFirst = resp.Group, true
			// Groups travel on separate streams: the first one may land
			// after the second. Readers start at the group named here.
			rt.track.SetStart(resp.Group)
			sub.markStarted()
			s.log.Debug("moq: subscribed", "broadcast", rt.rb.path, "track", rt.name, "group", resp.Group)
		case wire.RespAck:
			// lite-01..04: accepted. The reference names no start group
			// here (it sends none), so readers start where groups land.
			started = true
			if resp.Ack.Start.Valid {
				first, haveFirst = resp.Ack.Start.Seq, true
				rt.track.SetStart(first)
			}
			sub.markStarted()
			s.log.Debug("moq: subscribed", "broadcast", rt.rb.path, "track", rt.name, "version", v.Name)
		case wire.RespEnd:
			end, haveEnd = resp.Group, true
			s.log.Debug("moq: subscription end announced", "broadcast", rt.rb.path, "track", rt.name, "end", resp.Group)
		case wire.RespDrop:
			s.log.Debug("moq: groups dropped", "broadcast", rt.rb.path, "track", rt.name,
				"start", resp.Start, "end", resp.End, "code", resp.Code)
		}
	}
}

// trackInfo sends TRACK and reads TRACK_INFO, bounded by the request
// timeout (a @moq/net publisher never answers for an unknown track).
func (rt *remoteTrack) trackInfo(ctx context.Context, c conn) (wire.TrackInfo, error) {
	var info wire.TrackInfo
	str, err := c.OpenBidi(ctx)
	if err != nil {
		return info, fmt.Errorf("open track stream: %w", err)
	}
	m := wire.TrackRequest{Broadcast: rt.rb.path, Track: rt.name}
	if _, err := str.Write(m.Append(wire.AppendVarint(nil, wire.StreamTrack))); err != nil {
		str.CancelRead(CodeCancel)
		return info, fmt.Errorf("send TRACK: %w", err)
	}
	str.SetReadDeadline(time.Now().Add(rt.rb.s.opts.RequestTimeout))
	stop := context.AfterFunc(ctx, func() { str.SetReadDeadline(time.Now()) })
	defer stop()
	err = readMsg(bufio.NewReader(str), &info)
	if err != nil {
		resetStream(str, CodeCancel)
		if ctx.Err() != nil {
			return info, context.Cause(ctx)
		}
		if errors.Is(err, ErrProtocol) {
			return info, fmt.Errorf("TRACK_INFO %q/%q: %w", rt.rb.path, rt.name, err)
		}
		if err == io.EOF {
			err = errors.New("FIN without TRACK_INFO")
		} else if isTimeout(err) {
			err = errors.New("no TRACK_INFO within the request timeout")
		}
		return info, fmt.Errorf("%w: TRACK %q/%q: %w", ErrRefused, rt.rb.path, rt.name, err)
	}
	str.Close()
	str.CancelRead(CodeCancel)
	return info, nil
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

// priorityOf is the hang default: catalog 100, audio 80, video 60. Without
// the catalog's kind at hand, media tracks get 60.
func priorityOf(name string) uint8 {
	if isCatalogTrack(name) {
		return 100
	}
	return 60
}

// readGroup turns one group stream into a model group.
func (s *Session) readGroup(ctx context.Context, c conn, str recvStream, r *bufio.Reader) {
	var h wire.Group
	if err := readMsg(r, &h); err != nil {
		if _, reset := errors.AsType[*ResetError](err); reset {
			s.log.Debug("moq: group reset before its header", "err", err)
			return
		}
		str.CancelRead(CodeDecode)
		if !connGone(c, err) {
			s.log.Warn("moq: bad group header", "err", err)
		}
		return
	}
	s.mu.Lock()
	sub := s.subs[h.SubscribeID]
	if sub != nil {
		sub.groups.Add(1)
	}
	s.mu.Unlock()
	if sub == nil {
		str.CancelRead(CodeNotFound)
		return
	}
	defer sub.groups.Done()
	sub.groupArrived(h.Sequence)
	sub.waitStarted(h.Sequence)
	rt := sub.rt
	g, err := rt.track.CreateGroup(h.Sequence)
	if err != nil {
		s.log.Debug("moq: group dropped", "track", rt.name, "group", h.Sequence, "err", err)
		str.CancelRead(CodeCancel)
		return
	}
	// The group ends with its subscription: STOP_SENDING wakes the read.
	stop := context.AfterFunc(sub.ctx, func() { str.CancelRead(CodeCancel) })
	defer stop()
	fr := wire.NewFrameReader(r, connVersion(c))
	for {
		payload, err := fr.Next()
		if err != nil {
			switch {
			case err == io.EOF:
				g.Close(nil)
			case connGone(c, err):
				g.Close(connLoss(c, err))
			case sub.ctx.Err() != nil:
				cause := context.Cause(sub.ctx)
				if !errors.Is(cause, ErrTruncated) {
					cause = fmt.Errorf("%w: %w", ErrTruncated, cause)
				}
				s.log.Debug("moq: group stopped", "track", rt.name, "group", h.Sequence, "err", cause)
				g.Close(fmt.Errorf("group %d of %q: %w", h.Sequence, rt.name, cause))
			default:
				if _, reset := errors.AsType[*ResetError](err); !reset {
					str.CancelRead(CodeDecode)
					s.log.Warn("moq: bad group stream", "track", rt.name, "group", h.Sequence, "err", err)
				} else {
					s.log.Debug("moq: group reset", "track", rt.name, "group", h.Sequence, "err", err)
				}
				g.Close(fmt.Errorf("group %d of %q: %w", h.Sequence, rt.name, protocolErr(err)))
			}
			return
		}
		f, ok, err := decodeFrame(rt.kind, fr.Timestamp, sub.timescale, payload)
		if err != nil {
			str.CancelRead(CodeDecode)
			s.log.Warn("moq: bad frame", "track", rt.name, "group", h.Sequence, "err", err)
			g.Close(fmt.Errorf("group %d of %q: %w", h.Sequence, rt.name, err))
			return
		}
		if !ok {
			continue
		}
		if err := g.WriteFrame(f); err != nil {
			str.CancelRead(CodeCancel)
			return
		}
	}
}

// decodeFrame turns a wire frame into a model frame. ok is false for a
// marker that carries no sample (an empty legacy or loc payload).
func decodeFrame(kind string, wireTS int64, timescale uint64, payload []byte) (model.Frame, bool, error) {
	switch kind {
	case container.Legacy:
		ts, codec, err := container.DecodeLegacy(payload)
		if err != nil {
			return model.Frame{}, false, err
		}
		return model.Frame{Timestamp: ts, Payload: codec}, len(codec) > 0, nil
	case container.LOC:
		ts, codec, err := container.DecodeLOC(payload)
		if err != nil {
			return model.Frame{}, false, err
		}
		return model.Frame{Timestamp: ts, Payload: codec}, len(codec) > 0, nil
	default:
		ts, ok := container.RescaleSigned(wireTS, timescale)
		if !ok {
			return model.Frame{}, false, fmt.Errorf("%w: timestamp %d at timescale %d", ErrProtocol, wireTS, timescale)
		}
		return model.Frame{Timestamp: ts, Payload: payload}, true, nil
	}
}
