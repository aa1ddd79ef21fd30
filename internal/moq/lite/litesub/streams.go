package litesub

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/litepub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/varint"
)

// The streams the peer opens on a moq-lite connection: its SETUP and the
// group streams (uni), its requests to what we publish, its GOAWAY and
// probes (bidi).

// uniReaders are the buffered readers of uni streams, reused: a group
// stream (one per frame of hang's audio) would allocate one otherwise. A
// reader goes back when its handler returned; what was read from it was
// copied out (wire.FrameReader's payloads, decoded messages).
var uniReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, session.GroupReadBuffer) }}

// Peer is what the session does with what the peer's own streams say.
type Peer struct {
	// Setup takes what the peer's SETUP says (lite-03+ SETUP stream).
	Setup func(m Setup)
	// GoAway takes the peer's valid GOAWAY naming uri; an error (a
	// second GOAWAY on the connection) is a violation that closes it.
	GoAway func(uri string) error
	// Client says this end dialled: a GOAWAY naming a URI is the server's
	// only.
	Client bool
	// Pub serves the peer's requests to what we publish.
	Pub *litepub.Publisher
}

// HandleUni reads one uni stream the peer opened: its SETUP or a group.
func (c Conn) HandleUni(str session.RecvStream, t session.OrderTicket, p *Peer) {
	r := uniReaders.Get().(*bufio.Reader)
	r.Reset(str)
	defer func() {
		r.Reset(nil)
		uniReaders.Put(r)
	}()
	typ, err := varint.Read(r)
	if err != nil {
		str.CancelRead(wire.CodeCancel)
		return
	}
	if typ != wire.UniGroup {
		t.Done()
	}
	switch {
	case typ == wire.UniSetup && c.V.SetupStream:
		c.readSetup(str, r, p)
	case typ == wire.UniGroup:
		c.ReadGroup(str, r, t)
	default:
		c.S.Log.Debug("moq: unknown uni stream type", "type", typ)
		str.CancelRead(10)
	}
}

func (c Conn) readSetup(str session.RecvStream, r *bufio.Reader, p *Peer) {
	log := c.S.Log
	body, err := wire.ReadMessage(r, 0)
	if err != nil {
		log.Warn("moq: peer SETUP", "err", err)
		str.CancelRead(wire.CodeDecode)
		return
	}
	var m wire.Setup
	if err := m.Decode(body); err != nil {
		log.Warn("moq: peer SETUP", "err", err)
		str.CancelRead(wire.CodeDecode)
		return
	}
	probe, _, _ := m.Varint(wire.ParamProbe)
	log.Debug("moq: peer SETUP", "params", len(m.Params), "probe", probe)
	p.Setup(setupOf(&m))
	// Stop reading: the peer may or may not FIN.
	str.CancelRead(wire.CodeCancel)
}

// HandleBidi serves one bidi stream the peer opened: a request to what we
// publish (to p.Pub), a probe, or GOAWAY.
func (c Conn) HandleBidi(ctx context.Context, str session.Stream, p *Peer) {
	// The stream was opened for its request: a peer that opens one and
	// says nothing whole holds it, and this goroutine, only for as long as
	// messageTimeout.
	typ, r, err := c.readOpening(str)
	if err != nil {
		if errors.Is(err, session.ErrTimeout) {
			c.S.Log.Debug("moq: request stream", "err", err)
		}
		session.ResetStream(str, wire.CodeCancel)
		return
	}
	v := c.V
	switch {
	case typ == wire.StreamAnnounce:
		p.Pub.ServeAnnounce(ctx, v, str, r)
	case typ == wire.StreamTrack && v.TrackInfo:
		p.Pub.ServeTrack(v, str, r)
	case typ == wire.StreamSubscribe:
		p.Pub.ServeSubscribe(ctx, v, c.C.OpenUni, str, r)
	case typ == wire.StreamProbe && v.ProbeStream:
		// No transport statistics to report: FIN at once, as @moq/net does.
		str.Close()
		str.CancelRead(wire.CodeCancel)
	case typ == wire.StreamGoaway && v.Goaway:
		c.readGoAway(str, r, p)
	case typ == wire.StreamFetch && v.Fetch:
		p.Pub.ServeFetch(ctx, v, str, r)
	default:
		// Unknown streams: refused, never fatal.
		c.S.Log.Debug("moq: refusing bidi stream", "type", typ, "version", v.Name)
		session.ResetStream(str, 10)
	}
}

// GOAWAY's lite-06 rules: only a server sends a non-empty URI, at most
// 8 KB; one GOAWAY per session; anything else closes the session with
// PROTOCOL_VIOLATION.

// maxGoawayURI bounds a GOAWAY's New Session URI.
const maxGoawayURI = 8192

// readGoAway handles the GOAWAY stream the peer opened.
func (c Conn) readGoAway(str session.Stream, r *bufio.Reader, p *Peer) {
	body, err := wire.ReadMessage(r, maxGoawayURI+8)
	var m wire.Goaway
	if err == nil {
		err = m.Decode(body)
	}
	str.CancelRead(wire.CodeCancel)
	str.Close()
	switch {
	case err == nil && len(m.URI) > maxGoawayURI:
		err = fmt.Errorf("GOAWAY URI of %d bytes", len(m.URI))
	case err == nil && !p.Client && m.URI != "":
		err = errors.New("GOAWAY from a client names a URI")
	}
	if err == nil {
		err = p.GoAway(m.URI)
	}
	if err != nil && !c.C.Gone(err) {
		c.S.Log.Warn("moq: bad GOAWAY, closing the session", "err", err)
		c.C.Close(SessionProtocolViolation, "GOAWAY")
	}
}

// ErrNoGoaway means GoAway was asked of a session whose protocol version
// has no GOAWAY (moq-lite before 04). (Package subscribe names it as its
// own.)
var ErrNoGoaway = errors.New("moq: the session's protocol version has no GOAWAY")

// SendGoAway sends a moq-lite GOAWAY naming uri ("" for the same server)
// on its own stream, within ctx.
func (c Conn) SendGoAway(ctx context.Context, uri string) error {
	if !c.V.Goaway {
		return ErrNoGoaway
	}
	str, err := c.C.OpenBidi(ctx)
	if err != nil {
		return fmt.Errorf("moq: GOAWAY: %w", err)
	}
	m := wire.Goaway{URI: uri}
	if _, err := str.Write(m.Append(varint.Append(nil, wire.StreamGoaway))); err != nil {
		str.CancelRead(wire.CodeCancel)
		return fmt.Errorf("moq: GOAWAY: %w", err)
	}
	str.Close()
	str.CancelRead(wire.CodeCancel)
	return nil
}

// messageTimeout bounds what a bidi stream the peer opened begins with:
// its type and the request that follows it.
var messageTimeout = 10 * time.Second

// opensWithMessage reports whether a bidi stream of type typ begins with a
// message after its type (all but the probe, which has none, and the
// types v does not know, which are refused).
func (c Conn) opensWithMessage(typ uint64) bool {
	v := c.V
	switch {
	case typ == wire.StreamAnnounce, typ == wire.StreamSubscribe:
		return true
	case typ == wire.StreamTrack:
		return v.TrackInfo
	case typ == wire.StreamGoaway:
		return v.Goaway
	case typ == wire.StreamFetch:
		return v.Fetch
	}
	return false
}

// readOpening reads the type of a bidi stream the peer opened and buffers
// the request that follows it whole, ending the read by a deadline when
// that is not done within messageTimeout of the stream's opening: nothing
// else wakes a read on a stream whose peer went silent while its
// connection stays up. It returns the type and the reader to serve the
// stream from, the request first. A request that took that long is a
// timeout even if it came whole as the deadline fell; the deadline stays
// set then, and the stream is given up (the error wraps
// session.ErrTimeout). A request that cannot be buffered (larger than a
// message may be, or cut short) is left to its reader, which refuses it
// as it always did.
func (c Conn) readOpening(str session.Stream) (uint64, *bufio.Reader, error) {
	var (
		typ uint64
		err error
	)
	r := bufio.NewReader(str)
	if session.ReadWithin(str, messageTimeout, func() {
		typ, err = varint.Read(r)
		if err == nil && c.opensWithMessage(typ) {
			r = bufferMessage(r)
		}
	}) {
		return 0, nil, fmt.Errorf("%w: the request of a stream the peer opened was not whole within %v", session.ErrTimeout, messageTimeout)
	}
	return typ, r, err
}

// bufferMessage waits until r holds the whole length-prefixed message it
// begins with, or its read fails, and returns the reader that holds it: r,
// or one with room for a message larger than r's buffer reading r. It
// consumes nothing.
func bufferMessage(r *bufio.Reader) *bufio.Reader {
	// The length: a varint, its size in its first byte's top bits.
	first, err := r.Peek(1)
	if err != nil {
		return r
	}
	lenSize := 1 << (first[0] >> 6)
	head, err := r.Peek(lenSize)
	if err != nil {
		return r
	}
	n, err := varint.Read(bytes.NewReader(head))
	if err != nil || n > wire.MaxMessage {
		return r
	}
	need := lenSize + int(n)
	if need > r.Size() {
		r = bufio.NewReaderSize(r, need)
	}
	_, _ = r.Peek(need)
	return r
}
