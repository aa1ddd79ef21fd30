package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"time"
)

// Telling cheaply when a QUIC peer answers again.
//
// A client that lost its peer redials with a backoff, so that a fleet of
// clients does not hammer a relay that is down or refusing them. After a
// long outage the backoff has grown to its cap, and the peer's return is
// noticed only at the next dial: up to the cap later. A probe finds it
// within a second at no cost to the peer: it is one datagram with a
// reserved QUIC version, which every QUIC server (RFC 9000 section 6, RFC
// 8999) answers statelessly with a Version Negotiation packet, without a
// handshake, keys or any state. A server that is down, or a path that
// drops everything, answers nothing; the probe only says "something
// speaking QUIC listens there again", and the dial that follows says the
// rest.
//
// It is written by hand because no QUIC library exposes such a probe: the
// packet is the invariant long header (RFC 8999 section 5.1) with a
// version of the reserved 0x?a?a?a?a pattern, padded to the 1,200 bytes
// below which servers must not answer.

// probeSize is the smallest datagram a server answers with Version
// Negotiation (RFC 9000 section 14.1).
const probeSize = 1200

// probeVersion is a reserved version (RFC 9000 section 15: 0x?a?a?a?a)
// that no server speaks.
const probeVersion = 0x1a2a3a4a

// Prober sends reachability probes to one QUIC peer from one UDP socket.
// It is used by one goroutine at a time.
type Prober struct {
	conn *net.UDPConn
	buf  []byte
}

// NewProber returns a Prober for the QUIC peer at hostport.
func NewProber(hostport string) (*Prober, error) {
	addr, err := net.ResolveUDPAddr("udp", hostport)
	if err != nil {
		return nil, err
	}
	c, err := net.DialUDP("udp", nil, addr)
	if err != nil {
		return nil, err
	}
	return &Prober{conn: c, buf: make([]byte, 2048)}, nil
}

// Close releases the socket.
func (p *Prober) Close() error { return p.conn.Close() }

// Probe sends one probe and waits at most wait (or until ctx ends) for the
// peer's Version Negotiation answer to it. It reports whether one came. A
// datagram that is not that answer (a stale answer to an earlier probe,
// anything else) is ignored; an ICMP "port unreachable" counts as no
// answer.
func (p *Prober) Probe(ctx context.Context, wait time.Duration) bool {
	pkt, dcid, scid := probePacket()
	deadline := time.Now().Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	stop := context.AfterFunc(ctx, func() { p.conn.SetReadDeadline(time.Now()) })
	defer stop()
	if err := p.conn.SetReadDeadline(deadline); err != nil {
		return false
	}
	if ctx.Err() != nil {
		return false
	}
	if _, err := p.conn.Write(pkt); err != nil {
		// Refused at once (the port is closed): nothing listens yet.
		sleepUntil(ctx, deadline)
		return false
	}
	for {
		n, err := p.conn.Read(p.buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return false
			}
			// An ICMP error reported on the connected socket: no answer
			// from this probe.
			sleepUntil(ctx, deadline)
			return false
		}
		if isVersionNegotiation(p.buf[:n], dcid, scid) {
			return true
		}
	}
}

// sleepUntil waits until t or ctx's end.
func sleepUntil(ctx context.Context, t time.Time) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

// probePacket returns a probe with fresh random connection IDs, and them.
func probePacket() (pkt, dcid, scid []byte) {
	pkt = make([]byte, probeSize)
	// Long header, fixed bit, random type bits; the version; 8-byte
	// destination and source connection IDs; the rest is padding.
	_, _ = rand.Read(pkt[:1])
	pkt[0] |= 0xc0
	binary.BigEndian.PutUint32(pkt[1:5], probeVersion)
	pkt[5] = 8
	dcid = pkt[6:14]
	_, _ = rand.Read(dcid)
	pkt[14] = 8
	scid = pkt[15:23]
	_, _ = rand.Read(scid)
	return pkt, dcid, scid
}

// isVersionNegotiation reports whether b is a Version Negotiation packet
// answering the probe with connection IDs dcid and scid: its destination
// is our source and its source our destination (RFC 9000 section 17.2.1).
func isVersionNegotiation(b, dcid, scid []byte) bool {
	if len(b) < 7 || b[0]&0x80 == 0 || binary.BigEndian.Uint32(b[1:5]) != 0 {
		return false
	}
	b = b[5:]
	d := int(b[0])
	if len(b) < 1+d+1 || !bytes.Equal(b[1:1+d], scid) {
		return false
	}
	b = b[1+d:]
	s := int(b[0])
	return len(b) >= 1+s && bytes.Equal(b[1:1+s], dcid)
}
