//go:build linux

package transport

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// quicPacketConn returns the socket quic-go reads and writes: udp itself,
// wrapped so that the per-packet work allocates nothing.
//
// quic-go reads a UDP socket in batches (recvmmsg) through x/net's
// ipv4.PacketConn.ReadBatch, which allocates the sender's address afresh
// for every datagram (a net.UDPAddr and its IP: two allocations per
// packet, the largest share of a received frame's), and it writes with
// net.UDPConn.WriteMsgUDP, which allocates a sockaddr per write. quic-go
// takes a socket that brings its own ReadBatch instead (sys_conn_oob.go,
// v0.64.1); this one runs the same recvmmsg and hands out one *net.UDPAddr
// per peer, kept in a small cache, and writes through WriteMsgUDPAddrPort,
// which allocates nothing. Written here because neither x/net nor quic-go
// has the option.
func quicPacketConn(udp *net.UDPConn) net.PacketConn {
	raw, err := udp.SyscallConn()
	if err != nil {
		return udp
	}
	c := &batchConn{UDPConn: udp, raw: raw, addrs: map[netip.AddrPort]*net.UDPAddr{}}
	c.recv = c.recvmmsg
	c.stat = addSocket()
	return c
}

// Close closes the socket and drops it from ReceivedPackets.
func (c *batchConn) Close() error {
	removeSocket(c.stat)
	return c.UDPConn.Close()
}

// batchConn is a UDP socket with an allocation-free ReadBatch and
// WriteMsgUDP. ReadBatch is called by one goroutine (the transport's read
// loop), so its scratch space needs no lock.
type batchConn struct {
	*net.UDPConn
	raw syscall.RawConn

	hdrs  []mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrAny
	addrs map[netip.AddrPort]*net.UDPAddr

	// The call in progress, for recv (a method value made once, where a
	// closure per call would allocate).
	recv  func(fd uintptr) bool
	stat  *socketStat // datagrams received (ReceivedPackets)
	count int
	flags int
	n     int
	errno syscall.Errno
}

// mmsghdr is struct mmsghdr: Go pads it as C does (to the alignment of
// msghdr's pointers).
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
}

// maxCachedAddrs bounds the address cache; a server that hears from more
// peers starts it over.
const maxCachedAddrs = 256

// ReadBatch reads up to len(ms) datagrams into ms[i].Buffers[0] and
// ms[i].OOB, as ipv4.PacketConn.ReadBatch does on Linux.
func (c *batchConn) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	if len(ms) > len(c.hdrs) {
		c.hdrs = make([]mmsghdr, len(ms))
		c.iovs = make([]unix.Iovec, len(ms))
		c.names = make([]unix.RawSockaddrAny, len(ms))
	}
	for i := range ms {
		m := &ms[i]
		if len(m.Buffers) != 1 {
			return 0, errors.New("moq: ReadBatch takes one buffer per message")
		}
		c.iovs[i] = unix.Iovec{Base: unsafe.SliceData(m.Buffers[0])}
		c.iovs[i].SetLen(len(m.Buffers[0]))
		h := &c.hdrs[i]
		h.hdr = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&c.names[i])), Namelen: unix.SizeofSockaddrAny, Iov: &c.iovs[i]}
		h.hdr.SetIovlen(1)
		if len(m.OOB) > 0 {
			h.hdr.Control = unsafe.SliceData(m.OOB)
			h.hdr.SetControllen(len(m.OOB))
		}
		h.len = 0
	}
	c.count, c.flags, c.n, c.errno = len(ms), flags, 0, 0
	err := c.raw.Read(c.recv)
	if err == nil && c.errno != 0 {
		err = os.NewSyscallError("recvmmsg", c.errno)
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "udp", Source: c.LocalAddr(), Err: err}
	}
	c.stat.packets.Add(uint64(c.n))
	for i := range c.n {
		m, h := &ms[i], &c.hdrs[i]
		m.N, m.NN, m.Flags = int(h.len), int(h.hdr.Controllen), int(h.hdr.Flags)
		m.Addr = c.addrOf(&c.names[i])
	}
	return c.n, nil
}

// recvmmsg is the RawConn.Read callback: false asks the poller to wait.
func (c *batchConn) recvmmsg(fd uintptr) bool {
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&c.hdrs[0])), uintptr(c.count), uintptr(c.flags), 0, 0)
	if errno == unix.EAGAIN || errno == unix.EWOULDBLOCK {
		return c.flags&unix.MSG_DONTWAIT != 0
	}
	c.n, c.errno = int(n), errno
	return true
}

// addrOf returns the sender in sa as x/net would (a 4- or 16-byte IP as
// the socket family gives it), the same *net.UDPAddr for the same peer.
// Nobody writes to an address quic-go was handed.
func (c *batchConn) addrOf(sa *unix.RawSockaddrAny) net.Addr {
	var ap netip.AddrPort
	var scope uint32
	switch sa.Addr.Family {
	case unix.AF_INET:
		in := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		ap = netip.AddrPortFrom(netip.AddrFrom4(in.Addr), portOf(&in.Port))
	case unix.AF_INET6:
		in := (*unix.RawSockaddrInet6)(unsafe.Pointer(sa))
		ap = netip.AddrPortFrom(netip.AddrFrom16(in.Addr), portOf(&in.Port))
		scope = in.Scope_id
	default:
		return nil
	}
	if scope != 0 {
		// A link-local peer: uncached (its zone is part of it).
		return &net.UDPAddr{IP: ap.Addr().AsSlice(), Port: int(ap.Port()), Zone: strconv.Itoa(int(scope))}
	}
	if a, ok := c.addrs[ap]; ok {
		return a
	}
	if len(c.addrs) >= maxCachedAddrs {
		clear(c.addrs)
	}
	a := &net.UDPAddr{IP: ap.Addr().AsSlice(), Port: int(ap.Port())}
	c.addrs[ap] = a
	return a
}

// portOf reads a port in network byte order.
func portOf(p *uint16) uint16 { return binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(p))[:]) }

// WriteMsgUDP is net.UDPConn.WriteMsgUDP without the sockaddr it
// allocates per call.
func (c *batchConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	if addr == nil {
		return c.UDPConn.WriteMsgUDP(b, oob, nil)
	}
	ap := addr.AddrPort()
	// An IPv4 peer in its 16-byte form: an IPv4 socket takes only the
	// 4-byte one, a dual-stack socket maps either.
	return c.UDPConn.WriteMsgUDPAddrPort(b, oob, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
}
