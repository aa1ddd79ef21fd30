package interop

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

// TestTheReferencePublisherRefusesASecondHandshakeAndLivesOn: moq-export
// dials its peer a second time when a probe hears the peer again while a
// dial is in flight (session.Links.dialWatched), so a restarted publisher
// may see two handshakes from one recorder at once. The test publisher
// serves one session; it used to stop its listener once it had taken one,
// and Deno 2.9 (quinn-proto 0.11.16, endpoint.rs:217) then panicked at the
// next datagram of the other handshake, still pending: a restarted
// reference publisher crashed so in 1 of 160 restarts under -race. Now it
// refuses the other handshake and goes on serving.
func TestTheReferencePublisherRefusesASecondHandshakeAndLivesOn(t *testing.T) {
	ref := needReference(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cert := newTestCert(t)
	pub := ref.start(ctx, t, "publish", "--manifest", sampleBroadcast("interop/two.hang", 1).write(t),
		"--listen", "127.0.0.1:0", "--cert", cert.certFile, "--key", cert.keyFile)
	addr := fmt.Sprintf("127.0.0.1:%d", pub.expect(ctx, "listening", nil).Port)
	type dialed struct {
		c   *quic.Conn
		err error
	}
	results := make(chan dialed, 2)
	for range 2 {
		go func() {
			// Longer than a handshake takes on a loaded machine, shorter
			// than the test: a handshake neither served nor refused.
			dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			c, err := quic.DialAddr(dctx, addr,
				&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"moq-lite-05"}}, nil)
			results <- dialed{c, err}
		}()
	}
	var served int
	var refused error
	for range 2 {
		select {
		case <-pub.exited:
			t.Fatalf("the publisher exited during the two handshakes (%v):\n%s", pub.err, pub.stderr.String())
		case r := <-results:
			if r.err != nil {
				refused = r.err
				continue
			}
			served++
			defer r.c.CloseWithError(0, "")
		}
	}
	var te *quic.TransportError
	if served != 1 || !errors.As(refused, &te) || te.ErrorCode != quic.ConnectionRefused {
		t.Fatalf("%d handshakes served, the other ended with %v; want one served and the other refused", served, refused)
	}
	// The refused handshake's last datagrams reach the publisher after it
	// took the first one: it must still run.
	select {
	case <-pub.exited:
		t.Fatalf("the publisher exited after the two handshakes (%v):\n%s", pub.err, pub.stderr.String())
	case <-time.After(2 * time.Second):
	}
}

// TestADenoPanicIsToldFromAnExitOfTheProgramsOwn: the harness reports a
// reference program that panicked as the reference's crash (where and
// why), and a program that failed or was killed as before.
func TestADenoPanicIsToldFromAnExitOfTheProgramsOwn(t *testing.T) {
	for _, c := range []struct {
		name, stderr, want string
	}{
		{"a panic in Deno's QUIC stack", "[deno] accepted moq-lite-05 moq-lite-05\n\n" +
			"============================================================\n" +
			"Deno has panicked. This is a bug in Deno. Please report this\n" +
			"thread 'main' (32135) panicked at /x/quinn-proto-0.11.16/src/endpoint.rs:217:63:\n" +
			"called `Option::unwrap()` on a `None` value\nstack backtrace:\n",
			"panicked at /x/quinn-proto-0.11.16/src/endpoint.rs:217:63: called `Option::unwrap()` on a `None` value"},
		{"a panic whose thread line is cut off", "Deno has panicked. This is a bug in Deno.\n", "panicked"},
		{"the program's own fatal error", "[deno] fatal Error: no subscriber for video, audio\n", ""},
		{"nothing at all", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := denoPanic(c.stderr); got != c.want {
				t.Errorf("denoPanic = %q, want %q", got, c.want)
			}
		})
	}
}
