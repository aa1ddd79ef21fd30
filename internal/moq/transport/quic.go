package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/quic-go/quic-go"
)

// maxIncomingStreams bounds the streams a peer may hold open at once on
// one connection, bidi and uni alike. A subscription is a bidi stream for
// its whole life: a recorder of 1,000 broadcasts (catalog, video, audio)
// holds 3,000 on its one connection, and a publisher serving them accepts
// as many; their group streams are uni streams, one or more per track at
// a time. quic-go spends memory on the streams that exist, not on the
// limit, which only grants credit.
const maxIncomingStreams = 1 << 16

// connReceiveWindow is the connection-level flow-control window a peer
// may fill with data this side has not read (quic-go's default starts at
// 768 KB and only grows as data is read). A resumed subscription holds
// the live group streams that land while its gap is filled unread until
// the fill is done (subscription.waitStarted): after a 20 s blackhole,
// 20 s and more of every audio track of the connection (~1 MB for three
// broadcasts). At 768 KB that spent the whole window and stalled every
// other stream of the connection, the live video of the broadcasts whose
// fill was done too: it came seconds late, after the audio, and was
// dropped as late (6 s of video), or a group of it given up on. 16 MB
// holds minutes of such audio; it is credit, not memory, until a peer
// sends data nobody reads.
const connReceiveWindow = 16 << 20

// QUICConfig is the QUIC configuration of every connection: many incoming
// streams (see maxIncomingStreams), a connection window that streams held
// unread do not use up (connReceiveWindow), the keep-alive period and idle timeout
// that find a dead peer (the caller's defaults apply before), and what
// WebTransport needs. Tests that play a raw QUIC peer use it too.
func QUICConfig(keepAlive, idle time.Duration) *quic.Config {
	return &quic.Config{
		MaxIncomingStreams:               maxIncomingStreams,
		MaxIncomingUniStreams:            maxIncomingStreams,
		InitialConnectionReceiveWindow:   connReceiveWindow,
		MaxConnectionReceiveWindow:       connReceiveWindow,
		KeepAlivePeriod:                  keepAlive,
		MaxIdleTimeout:                   idle,
		HandshakeIdleTimeout:             5 * time.Second,
		EnableDatagrams:                  true,
		EnableStreamResetPartialDelivery: true,
	}
}

// quicConn is a raw QUIC connection.
type quicConn[E Errors] struct {
	c *quic.Conn
}

func (q *quicConn[E]) OpenBidi(ctx context.Context) (Stream, error) {
	s, err := q.c.OpenStreamSync(ctx)
	if err != nil {
		return nil, mapErr[E](err)
	}
	return quicStream[E]{s}, nil
}

// OpenUni opens a uni stream whose data is sent before that of the uni
// streams opened after it (see sendInOrder).
func (q *quicConn[E]) OpenUni(ctx context.Context) (SendStream, error) {
	s, err := q.c.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, mapErr[E](err)
	}
	sendInOrder(s)
	return quicSend[E]{s}, nil
}

// sendInOrder makes s's data go out before that of the streams opened
// after it, when the connection cannot send everything at once. Our uni
// streams carry media, a group each, so opening order is media order
// across tracks. quic-go's default (incremental) shares each packet
// round-robin among the streams with data instead, a turn per stream: a
// track that opens a stream per frame (hang's audio, ~47 a second) then
// takes nearly every turn from one that opens a stream per group (its
// video, one a second), and on a link that carries less than the
// broadcast (a loaded machine losing packets on loopback shrinks the
// congestion window to that) the video stalled for seconds while the
// audio kept coming. Non-incremental streams of one urgency go one at a
// time, by stream ID, the oldest first; the bidi request streams stay
// incremental (quic-go alternates the two kinds within an urgency).
func sendInOrder(s *quic.SendStream) { s.SetPriority(uniUrgency, false) }

// uniUrgency is the urgency of our uni streams: quic-go's default, that
// of every other stream, so that nothing but their order changes.
const uniUrgency = 3

func (q *quicConn[E]) AcceptBidi(ctx context.Context) (Stream, error) {
	s, err := q.c.AcceptStream(ctx)
	if err != nil {
		return nil, mapErr[E](err)
	}
	return quicStream[E]{s}, nil
}

func (q *quicConn[E]) AcceptUni(ctx context.Context) (RecvStream, error) {
	s, err := q.c.AcceptUniStream(ctx)
	if err != nil {
		return nil, mapErr[E](err)
	}
	return quicRecv[E]{s}, nil
}

func (q *quicConn[E]) Close(code uint64, reason string) {
	_ = q.c.CloseWithError(quic.ApplicationErrorCode(code), reason)
}
func (q *quicConn[E]) Context() context.Context { return q.c.Context() }
func (q *quicConn[E]) WebTransport() bool       { return false }
func (q *quicConn[E]) Protocol() string         { return q.c.ConnectionState().TLS.NegotiatedProtocol }
func (q *quicConn[E]) RemoteAddr() string       { return q.c.RemoteAddr().String() }

// pto is QUIC's probe timeout of the connection as its RTT estimate
// stands now.
func (q *quicConn[E]) pto() time.Duration { return ptoOf(q.c.ConnectionStats()) }

// ptoOf is the probe timeout of a connection with stats, as quic-go
// computes it: the peer's max_ack_delay is quic-go's default, 25 ms;
// 200 ms before any RTT sample.
func ptoOf(s quic.ConnectionStats) time.Duration {
	if s.SmoothedRTT == 0 {
		return 200 * time.Millisecond
	}
	return s.SmoothedRTT + max(4*s.MeanDeviation, time.Millisecond) + 25*time.Millisecond
}

// SilenceTimeout is how long c takes, as its RTT estimate stands now, to
// find that its peer went silent, given the keep-alive period and idle
// timeout it was made with. QUIC never lets the idle timeout be shorter
// than three PTOs, and counts it from the first packet sent after the last
// one received, which a keep-alive sends 1.5 PTOs after it at the latest
// (RFC 9000 10.1, as quic-go does). One slow RTT sample, such as a
// handshake on a starved machine, makes that seconds whatever the idle
// timeout: after a first sample of 1 s, 13.6 s. A connection that is not
// raw QUIC gets keepAlive + idle.
func SilenceTimeout(c Conn, keepAlive, idle time.Duration) time.Duration {
	q, ok := c.(interface{ pto() time.Duration })
	if !ok {
		return keepAlive + idle
	}
	return silence(keepAlive, idle, q.pto())
}

func silence(keepAlive, idle, pto time.Duration) time.Duration {
	return max(keepAlive, pto*3/2) + max(idle, 3*pto)
}

func (q *quicConn[E]) Cause() error {
	if err := context.Cause(q.c.Context()); err != nil {
		return mapErr[E](err)
	}
	return nil
}

type quicStream[E Errors] struct{ s *quic.Stream }

func (q quicStream[E]) Read(b []byte) (int, error) {
	n, err := q.s.Read(b)
	return n, mapErr[E](err)
}
func (q quicStream[E]) Write(b []byte) (int, error) {
	n, err := q.s.Write(b)
	return n, mapErr[E](err)
}
func (q quicStream[E]) Close() error                      { return q.s.Close() }
func (q quicStream[E]) CancelRead(code uint64)            { q.s.CancelRead(quic.StreamErrorCode(code)) }
func (q quicStream[E]) CancelWrite(code uint64)           { q.s.CancelWrite(quic.StreamErrorCode(code)) }
func (q quicStream[E]) SetReadDeadline(t time.Time) error { return q.s.SetReadDeadline(t) }

type quicSend[E Errors] struct{ s *quic.SendStream }

func (q quicSend[E]) Write(b []byte) (int, error) {
	// Queued at once when the stream's flow control allows it, not
	// when the connection has put it into packets (see sendInOrder).
	if err := q.s.TryWriteAll(b); err == nil {
		return len(b), nil
	} else if !errors.Is(err, quic.ErrWouldBlock) {
		return 0, mapErr[E](err)
	}
	n, err := q.s.Write(b)
	return n, mapErr[E](err)
}
func (q quicSend[E]) Close() error            { return q.s.Close() }
func (q quicSend[E]) CancelWrite(code uint64) { q.s.CancelWrite(quic.StreamErrorCode(code)) }

type quicRecv[E Errors] struct{ s *quic.ReceiveStream }

func (q quicRecv[E]) Read(b []byte) (int, error) {
	n, err := q.s.Read(b)
	return n, mapErr[E](err)
}
func (q quicRecv[E]) CancelRead(code uint64)            { q.s.CancelRead(quic.StreamErrorCode(code)) }
func (q quicRecv[E]) SetReadDeadline(t time.Time) error { return q.s.SetReadDeadline(t) }

// dialQUIC is quic.DialAddr (early: DialAddrEarly) from a socket of our
// own, read and written through quicPacketConn; the transport and the
// socket close with the connection, as DialAddr's do.
func dialQUIC(ctx context.Context, hostport string, tc *tls.Config, qc *quic.Config, early bool) (*quic.Conn, error) {
	addr, err := net.ResolveUDPAddr("udp", hostport)
	if err != nil {
		return nil, err
	}
	if tc.ServerName == "" {
		// What DialAddr infers from the address it was given.
		tc = tc.Clone()
		if tc.ServerName, _, err = net.SplitHostPort(hostport); err != nil {
			tc.ServerName = hostport
		}
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		return nil, err
	}
	tr := &quic.Transport{Conn: quicPacketConn(udp)}
	dial := tr.Dial
	if early {
		dial = tr.DialEarly
	}
	c, err := dial(ctx, addr, tc, qc)
	if err != nil {
		tr.Close()
		tr.Conn.Close() // udp, and its count in ReceivedPackets
		return nil, err
	}
	context.AfterFunc(c.Context(), func() {
		tr.Close()
		tr.Conn.Close()
	})
	return c, nil
}

// DialQUIC dials a raw QUIC connection to hostport offering tc's ALPNs
// (NextProtos); keepAlive and idle are the liveness settings.
func DialQUIC[E Errors](ctx context.Context, hostport string, tc *tls.Config, keepAlive, idle time.Duration) (Conn, error) {
	c, err := dialQUIC(ctx, hostport, tc, QUICConfig(keepAlive, idle), false)
	if err != nil {
		return nil, fmt.Errorf("moq: dial %s: %w", hostport, mapErr[E](err))
	}
	return &quicConn[E]{c: c}, nil
}
