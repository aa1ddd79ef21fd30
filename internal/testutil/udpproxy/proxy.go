package udpproxy

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards UDP between the clients that send to Addr and the
// upstream address. Each client gets its own upstream socket, so the
// upstream sees one peer per client, as through a NAT.
type Proxy struct {
	ln       *net.UDPConn
	upstream *net.UDPAddr
	blocked  atomic.Bool
	dropped  atomic.Int64
	// rate is the link's capacity in bytes a second in each direction
	// (0: unlimited); queue how long a datagram may wait for it before
	// it is dropped, as a router's queue does (see Limit).
	rate, queue atomic.Int64
	limited     atomic.Int64
	// delay holds every datagram this long in each direction (see Delay).
	delay atomic.Int64

	mu      sync.Mutex
	clients map[string]*net.UDPConn
	closed  bool
	wg      sync.WaitGroup
}

// New listens on a free loopback port and forwards to upstream
// (host:port).
func New(upstream string) (*Proxy, error) {
	up, err := net.ResolveUDPAddr("udp", upstream)
	if err != nil {
		return nil, err
	}
	ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: up, clients: map[string]*net.UDPConn{}}
	p.wg.Add(1)
	go p.fromClients()
	return p, nil
}

// Addr is where clients send: host:port.
func (p *Proxy) Addr() string { return p.ln.LocalAddr().String() }

// Blackhole drops every datagram in both directions while on is true.
func (p *Proxy) Blackhole(on bool) { p.blocked.Store(on) }

// Delay holds every datagram for d before it is sent on, in both
// directions, as a path with a long round trip (2d) does; 0 (the default)
// sends at once. It adds to Limit's queueing.
func (p *Proxy) Delay(d time.Duration) { p.delay.Store(int64(d)) }

// Dropped returns how many datagrams were dropped by Blackhole so far.
func (p *Proxy) Dropped() int64 { return p.dropped.Load() }

// Limit makes each direction a link of rate bytes a second whose queue
// holds queue's worth of datagrams: a datagram leaves when the ones before
// it have, and one that would wait longer than queue is dropped (counted by
// Limited). A rate of 0 lifts the limit.
func (p *Proxy) Limit(rate int64, queue time.Duration) {
	p.queue.Store(int64(queue))
	p.rate.Store(rate)
}

// Limited returns how many datagrams Limit's queue dropped so far.
func (p *Proxy) Limited() int64 { return p.limited.Load() }

// link is one direction's queue under Limit: when the datagrams queued
// so far will have left.
type link struct{ free time.Time }

// admit returns how long a datagram of n bytes takes to cross the link
// (its wait in the queue and its own transmission), or false when the
// queue is full and it is dropped.
func (l *link) admit(p *Proxy, n int) (time.Duration, bool) {
	rate := p.rate.Load()
	if rate <= 0 {
		return 0, true
	}
	now := time.Now()
	start := l.free
	if start.Before(now) {
		start = now
	}
	if start.Sub(now) > time.Duration(p.queue.Load()) {
		p.limited.Add(1)
		return 0, false
	}
	l.free = start.Add(time.Duration(int64(n) * int64(time.Second) / rate))
	return l.free.Sub(now), true
}

// Close stops forwarding and waits for the forwarders.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	err := p.ln.Close()
	for _, c := range p.clients {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) fromClients() {
	defer p.wg.Done()
	p.forward(p.ln.ReadFromUDP, func(b []byte, from *net.UDPAddr) bool {
		up := p.clientConn(from)
		if up == nil {
			return false
		}
		_, _ = up.Write(b)
		return true
	})
}

// forward reads datagrams with read and hands those the blackhole lets
// through to send, until the socket closes or send returns false. Other
// read errors (an ICMP "port unreachable" while the upstream is down) are
// skipped: it may come back.
func (p *Proxy) forward(read func([]byte) (int, *net.UDPAddr, error), send func([]byte, *net.UDPAddr) bool) {
	buf := make([]byte, 64<<10)
	var l link
	for {
		n, from, err := read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if p.blocked.Load() {
			p.dropped.Add(1)
			continue
		}
		wait, ok := l.admit(p, n)
		if !ok {
			continue
		}
		wait += time.Duration(p.delay.Load())
		if wait > 0 {
			// Sent when it has crossed the link (and its delay); the reads go on
			// meanwhile, so that the queue is admit's, not the
			// socket's buffer. (A send after Close fails, unseen.)
			b := append([]byte(nil), buf[:n]...)
			time.AfterFunc(wait, func() { send(b, from) })
			continue
		}
		if !send(buf[:n], from) {
			return
		}
	}
}

// clientConn returns the upstream socket of client from, creating it and
// its return path at the first datagram.
func (p *Proxy) clientConn(from *net.UDPAddr) *net.UDPConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	key := from.String()
	if c, ok := p.clients[key]; ok {
		return c
	}
	c, err := net.DialUDP("udp", nil, p.upstream)
	if err != nil {
		return nil
	}
	p.clients[key] = c
	p.wg.Add(1)
	go p.toClient(c, from)
	return c
}

func (p *Proxy) toClient(up *net.UDPConn, client *net.UDPAddr) {
	defer p.wg.Done()
	p.forward(up.ReadFromUDP, func(b []byte, _ *net.UDPAddr) bool {
		_, _ = p.ln.WriteToUDP(b, client)
		return true
	})
}
