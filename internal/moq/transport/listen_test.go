package transport

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
)

// TestListenSocketsNeedsBothTwins: the fingerprint bootstrap serves on the
// QUIC port's TCP twin; an explicit port whose TCP side is taken is an
// error that says so, and port 0 finds a port free on both.
func TestListenSocketsNeedsBothTwins(t *testing.T) {
	taken, port := tcpPortWithFreeUDPTwin(t)
	defer taken.Close()
	if udp, tcp, err := listenSockets(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}, true); err == nil {
		udp.Close()
		tcp.Close()
		t.Fatalf("port %d: both sockets bound although its TCP side is taken", port)
	} else if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "fingerprint") {
		t.Fatalf("port %d: %v", port, err)
	}
	for range 50 {
		udp, tcp, err := listenSockets(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, true)
		if err != nil {
			t.Fatal(err)
		}
		if u, l := udp.LocalAddr().(*net.UDPAddr).Port, tcp.Addr().(*net.TCPAddr).Port; u != l {
			t.Errorf("UDP port %d, TCP port %d", u, l)
		}
		udp.Close()
		tcp.Close()
	}
}

// tcpPortWithFreeUDPTwin takes a TCP port whose UDP twin is free as it
// returns (the machine is shared: another program may hold the UDP side
// of the first port the kernel gives).
func tcpPortWithFreeUDPTwin(t *testing.T) (net.Listener, int) {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}); err == nil {
			u.Close()
			return l, port
		}
		l.Close()
	}
	t.Fatal("no TCP port with a free UDP twin in 50 tries")
	return nil, 0
}
