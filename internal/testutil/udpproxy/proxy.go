package udpproxy

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
)

// Proxy forwards UDP between the clients that send to Addr and the
// upstream address. Each client gets its own upstream socket, so the
// upstream sees one peer per client, as through a NAT.
type Proxy struct {
	ln       *net.UDPConn
	upstream *net.UDPAddr
	blocked  atomic.Bool
	dropped  atomic.Int64

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

// Dropped returns how many datagrams were dropped by Blackhole so far.
func (p *Proxy) Dropped() int64 { return p.dropped.Load() }

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
