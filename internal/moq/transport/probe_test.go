package transport

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

// TestProbeIsAnsweredOnlyByAListeningQUICServer: a quic-go server answers
// the probe (with Version Negotiation, no handshake: it accepts no
// connection); a closed port, a socket that swallows everything (a
// blackhole) and one that answers with anything else do not.
func TestProbeIsAnsweredOnlyByAListeningQUICServer(t *testing.T) {
	t.Parallel()
	cert, _, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := quic.ListenAddr("127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"x"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if _, err := ln.Accept(context.Background()); err == nil {
			accepted <- struct{}{}
		}
	}()

	// A socket that reads and never answers, and one that echoes.
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		b := make([]byte, 2048)
		for {
			if _, _, err := silent.ReadFromUDP(b); err != nil {
				return
			}
		}
	}()
	echo, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		b := make([]byte, 2048)
		for {
			n, from, err := echo.ReadFromUDP(b)
			if err != nil {
				return
			}
			echo.WriteToUDP(b[:n], from)
		}
	}()
	closed, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.LocalAddr().String()
	closed.Close()

	for _, tc := range []struct {
		name string
		addr string
		want bool
	}{
		{"a QUIC server", ln.Addr().String(), true},
		{"a closed port", closedAddr, false},
		{"a blackhole", silent.LocalAddr().String(), false},
		{"an echo", echo.LocalAddr().String(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewProber(tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			const wait = 300 * time.Millisecond
			began := time.Now()
			got := p.Probe(context.Background(), wait)
			took := time.Since(began)
			if got != tc.want {
				t.Fatalf("answered %v, want %v", got, tc.want)
			}
			if !got && took < wait-10*time.Millisecond {
				t.Errorf("gave up after %v, want the whole %v (a probe is one per interval)", took, wait)
			}
			// A second probe from the same socket is answered alike.
			if again := p.Probe(context.Background(), wait); again != tc.want {
				t.Fatalf("second probe answered %v, want %v", again, tc.want)
			}
		})
	}
	select {
	case <-accepted:
		t.Fatal("the server accepted a connection from a probe")
	case <-time.After(50 * time.Millisecond):
	}
}

// TestProbeEndsWithItsContext: a cancelled probe returns at once.
func TestProbeEndsWithItsContext(t *testing.T) {
	t.Parallel()
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	p, err := NewProber(silent.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	began := time.Now()
	if p.Probe(ctx, time.Minute) {
		t.Fatal("answered")
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("took %v after its context ended", took)
	}
}

func FuzzIsVersionNegotiation(f *testing.F) {
	_, dcid, scid := probePacket()
	vn := append([]byte{0x80, 0, 0, 0, 0, 8}, scid...)
	vn = append(vn, 8)
	vn = append(vn, dcid...)
	vn = append(vn, 0, 0, 0, 1)
	f.Add(vn)
	f.Add([]byte{0x80, 0, 0, 0, 0, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		isVersionNegotiation(b, dcid, scid)
	})
}
