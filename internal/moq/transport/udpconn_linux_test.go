//go:build linux

package transport

import (
	"bytes"
	"errors"
	"net"
	"testing"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// TestBatchConnReadsAsXNetDoes sends the same datagrams from two peers to
// two sockets, reads one with x/net's ReadBatch (what quic-go uses
// otherwise) and the other with batchConn's, and compares what each
// message says: data, control data (the TOS byte quic-go reads ECN from),
// flags and sender. batchConn hands out one address per peer.
func TestBatchConnReadsAsXNetDoes(t *testing.T) {
	for _, tc := range []struct{ name, listen, peer string }{
		{"ipv4", "127.0.0.1:0", "127.0.0.1:0"},
		{"dual-stack socket, ipv4 peer", "0.0.0.0:0", "127.0.0.1:0"},
		{"ipv6", "[::1]:0", "[::1]:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			theirs, ours := listenUDP(t, tc.listen), listenUDP(t, tc.listen)
			peers := []*net.UDPConn{listenUDP(t, tc.peer), listenUDP(t, tc.peer)}
			var sent [][]byte
			for i := range 6 {
				p := bytes.Repeat([]byte{byte(i + 1)}, 100*(i+1))
				sent = append(sent, p)
				for _, to := range []*net.UDPConn{theirs, ours} {
					dst := to.LocalAddr().(*net.UDPAddr)
					if dst.IP.IsUnspecified() {
						dst = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: dst.Port}
					}
					if _, err := peers[i%2].WriteToUDP(p, dst); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := readBatches(t, ipv4.NewPacketConn(theirs), len(sent))
			bc := quicPacketConn(ours).(*batchConn)
			got := readBatches(t, bc, len(sent))
			for i := range sent {
				g, w := got[i], want[i]
				if !bytes.Equal(g.Buffers[0][:g.N], sent[i]) || g.N != w.N {
					t.Errorf("message %d: %d bytes, x/net %d, sent %d", i, g.N, w.N, len(sent[i]))
				}
				if !bytes.Equal(g.OOB[:g.NN], w.OOB[:w.NN]) || g.NN == 0 || g.Flags != w.Flags {
					t.Errorf("message %d: control %x flags %d, x/net %x flags %d", i, g.OOB[:g.NN], g.Flags, w.OOB[:w.NN], w.Flags)
				}
				if g.Addr.String() != w.Addr.String() || g.Addr.Network() != w.Addr.Network() {
					t.Errorf("message %d from %v, x/net says %v", i, g.Addr, w.Addr)
				}
				if len(g.Addr.(*net.UDPAddr).IP) != len(w.Addr.(*net.UDPAddr).IP) {
					t.Errorf("message %d: IP of %d bytes, x/net's %d", i, len(g.Addr.(*net.UDPAddr).IP), len(w.Addr.(*net.UDPAddr).IP))
				}
				if i >= 2 && g.Addr != got[i-2].Addr {
					t.Errorf("message %d: a new address for the same peer", i)
				}
			}
			if got[0].Addr == got[1].Addr {
				t.Error("two peers share an address")
			}
			// And back: WriteMsgUDP to a sender as quic-go holds it.
			if _, _, err := bc.WriteMsgUDP([]byte("pong"), nil, got[0].Addr.(*net.UDPAddr)); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 16)
			n, from, err := peers[0].ReadFromUDP(buf)
			if err != nil || string(buf[:n]) != "pong" || from.Port != ours.LocalAddr().(*net.UDPAddr).Port {
				t.Fatalf("peer read %q from %v: %v", buf[:n], from, err)
			}
		})
	}
}

// listenUDP opens a UDP socket that reports the TOS byte, or skips when the
// address family is not available here.
func listenUDP(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	a, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP("udp", a)
	if err != nil {
		t.Skipf("no %s socket here: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Control(func(fd uintptr) {
		// One of the two applies, as for quic-go.
		unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
		unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
	})
	return c
}

// readBatches reads n messages with r, in batches of up to 4.
func readBatches(t *testing.T, r interface {
	ReadBatch([]ipv4.Message, int) (int, error)
}, n int) []ipv4.Message {
	t.Helper()
	var out []ipv4.Message
	for len(out) < n {
		ms := make([]ipv4.Message, min(4, n-len(out)))
		for i := range ms {
			ms[i].Buffers = [][]byte{make([]byte, 1500)}
			ms[i].OOB = make([]byte, 128)
		}
		k, err := r.ReadBatch(ms, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ms[:k]...)
	}
	return out
}

// TestBatchConnReportsAClosedSocket: a read on a closed socket fails with
// net.ErrClosed, which ends quic-go's read loop.
func TestBatchConnReportsAClosedSocket(t *testing.T) {
	c := listenUDP(t, "127.0.0.1:0")
	bc := quicPacketConn(c).(*batchConn)
	c.Close()
	ms := []ipv4.Message{{Buffers: [][]byte{make([]byte, 100)}}}
	if _, err := bc.ReadBatch(ms, 0); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read on a closed socket: %v", err)
	}
}

// TestReceivedPacketsCountsTheDatagramsEachSocketRead: the overload
// monitor's packet rate comes from these counts. A socket's count is what
// its ReadBatch returned, and a closed socket is no longer listed.
func TestReceivedPacketsCountsTheDatagramsEachSocketRead(t *testing.T) {
	c := listenUDP(t, "127.0.0.1:0")
	bc := quicPacketConn(c).(*batchConn)
	count := func() (uint64, bool) {
		for _, sp := range ReceivedPackets(nil) {
			if sp.ID == bc.stat.id {
				return sp.Packets, true
			}
		}
		return 0, false
	}
	if n, ok := count(); !ok || n != 0 {
		t.Fatalf("a new socket: %d packets, listed %v", n, ok)
	}
	peer := listenUDP(t, "127.0.0.1:0")
	for i := range 7 {
		if _, err := peer.WriteTo([]byte{byte(i)}, c.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	readBatches(t, bc, 7)
	if n, _ := count(); n != 7 {
		t.Fatalf("%d packets counted, 7 read", n)
	}
	bc.Close()
	if _, ok := count(); ok {
		t.Fatal("a closed socket is still listed")
	}
}
