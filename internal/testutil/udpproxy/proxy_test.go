package udpproxy

import (
	"net"
	"testing"
	"time"
)

// echo serves a UDP echo on loopback.
func echo(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			c.WriteToUDP(buf[:n], from)
		}
	}()
	return c
}

func TestForwardsBothWaysAndBlackholesOnDemand(t *testing.T) {
	up := echo(t)
	p, err := New(up.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("udp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip := func(msg string, wait time.Duration) (string, bool) {
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		if err != nil {
			return "", false
		}
		return string(buf[:n]), true
	}
	// Retried: UDP on loopback may still drop under load.
	got := false
	for i := 0; i < 50 && !got; i++ {
		var s string
		s, got = roundTrip("ping", 100*time.Millisecond)
		if got && s != "ping" {
			t.Fatalf("echo %q", s)
		}
	}
	if !got {
		t.Fatal("no echo through the proxy")
	}
	p.Blackhole(true)
	if s, ok := roundTrip("lost", 200*time.Millisecond); ok {
		t.Fatalf("echo %q through a blackhole", s)
	}
	if p.Dropped() == 0 {
		t.Fatal("nothing counted as dropped")
	}
	p.Blackhole(false)
	for i := 0; i < 50; i++ {
		// A reply to "lost" never comes: it was dropped before the echo.
		if s, ok := roundTrip("back", 100*time.Millisecond); ok && s == "back" {
			return
		}
	}
	t.Fatal("no echo after the blackhole ended")
}
