package udpproxy

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// echo serves a UDP echo on loopback; its first answer waits firstDelay
// (a loaded machine's late reply).
func echo(t *testing.T, firstDelay time.Duration) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for first := true; ; first = false {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if first {
				time.Sleep(firstDelay)
			}
			c.WriteToUDP(buf[:n], from)
		}
	}()
	return c
}

// TestForwardsBothWaysAndBlackholesOnDemand: an echo answers through the
// proxy, not while it blackholes, and again after. Each check looks for
// the answer to its own message: under load the echo of an earlier
// message (sent again because its answer was late) can still be on its
// way when the blackhole begins, and is no proof that "lost" got through.
func TestForwardsBothWaysAndBlackholesOnDemand(t *testing.T) {
	for _, c := range []struct {
		name       string
		firstDelay time.Duration
	}{
		{"with an echo that answers at once", 0},
		{"with an echo whose first answer comes after the sender gave up on it", 300 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := echo(t, c.firstDelay)
			p, err := New(up.LocalAddr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			conn, err := net.Dial("udp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// roundTrip sends msg and reports whether its echo came
			// within wait; the late echoes of earlier messages are
			// read and passed over.
			roundTrip := func(msg string, wait time.Duration) bool {
				if _, err := conn.Write([]byte(msg)); err != nil {
					t.Fatal(err)
				}
				conn.SetReadDeadline(time.Now().Add(wait))
				buf := make([]byte, 64)
				for {
					n, err := conn.Read(buf)
					if err != nil {
						return false
					}
					if string(buf[:n]) == msg {
						return true
					}
					t.Logf("a late echo %q while waiting for %q", buf[:n], msg)
				}
			}
			// Retried: UDP on loopback may still drop under load.
			got := false
			for i := 0; i < 50 && !got; i++ {
				got = roundTrip("ping", 100*time.Millisecond)
			}
			if !got {
				t.Fatal("no echo through the proxy")
			}
			p.Blackhole(true)
			if roundTrip("lost", 200*time.Millisecond) {
				t.Fatal(`echo "lost" through a blackhole`)
			}
			if p.Dropped() == 0 {
				t.Fatal("nothing counted as dropped")
			}
			p.Blackhole(false)
			for i := 0; i < 50; i++ {
				// A reply to "lost" never comes: it was dropped before the echo.
				if roundTrip("back", 100*time.Millisecond) {
					return
				}
			}
			t.Fatal("no echo after the blackhole ended")
		})
	}
}

// TestDelayHoldsEveryDatagramForItsTimeEachWay: with Delay(d) an echo's
// round trip takes at least 2d, d out and d back (a load can only make it
// longer, so the bound holds on any machine).
func TestDelayHoldsEveryDatagramForItsTimeEachWay(t *testing.T) {
	const d = 150 * time.Millisecond
	up := echo(t, 0)
	p, err := New(up.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Delay(d)
	conn, err := net.Dial("udp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range 50 {
		// Numbered: the late echo of an earlier try is not this one's.
		msg := "slow" + strconv.Itoa(i)
		began := time.Now()
		if _, err := conn.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 64)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				break // UDP on loopback may drop under load: once more
			}
			if string(buf[:n]) != msg {
				continue
			}
			if rtt := time.Since(began); rtt < 2*d {
				t.Fatalf("echo after %v, want at least %v (%v each way)", rtt, 2*d, d)
			}
			return
		}
	}
	t.Fatal("no echo through the delaying proxy")
}
