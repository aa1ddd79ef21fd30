package cmdtest

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// The fault tests that kill the publisher need it in a process of its own:
// the test binary, re-executed with PublisherEnv set, serves the demo
// broadcast "live" on raw QUIC like a publisher that relays and recorders
// dial.
const PublisherEnv = "MOQ_EXPORT_TEST_PUBLISHER"

// PublisherMain is that process: it listens on $MOQ_EXPORT_TEST_PUBLISHER
// (host:port) with the certificate in $MOQ_EXPORT_TEST_CERT and
// $MOQ_EXPORT_TEST_KEY, prints "listening HOST:PORT" and publishes until
// killed. Its timestamps run on the clock that started at
// $MOQ_EXPORT_TEST_EPOCH (Unix nanoseconds), as a live encoder's wall
// clock does: a restarted publisher goes on from the real time, so what a
// recording lost shows in its packet timestamps.
//
// The soak sets more: $MOQ_EXPORT_TEST_BROADCASTS names the broadcasts as
// NAME=CONTAINER pairs (legacy, loc, cmaf), $MOQ_EXPORT_TEST_VERSIONS the
// protocol versions accepted, $MOQ_EXPORT_TEST_KEEP how many groups each
// track keeps for FETCH, $MOQ_EXPORT_TEST_NOFETCH (any value) refuses every
// FETCH, as the reference publisher does. $MOQ_EXPORT_TEST_HOLD holds the media back until
// every track of every broadcast has a subscriber, as tools/fleetpub does,
// and prints "subscribed BROADCAST/TRACK" on stderr as each track gets its
// first: a recorder that does not subscribe a track gets no media at all.
func PublisherMain() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "publisher:", err)
		return 1
	}
	cert, err := tls.LoadX509KeyPair(os.Getenv("MOQ_EXPORT_TEST_CERT"), os.Getenv("MOQ_EXPORT_TEST_KEY"))
	if err != nil {
		return fail(err)
	}
	epoch, err := strconv.ParseInt(os.Getenv("MOQ_EXPORT_TEST_EPOCH"), 10, 64)
	if err != nil {
		return fail(err)
	}
	keep, _ := strconv.Atoi(os.Getenv("MOQ_EXPORT_TEST_KEEP"))
	offset := time.Since(time.Unix(0, epoch))
	var hold chan struct{}
	if os.Getenv("MOQ_EXPORT_TEST_HOLD") != "" {
		hold = make(chan struct{})
	}
	var bs []*model.Broadcast
	for _, spec := range strings.Split(cmp.Or(os.Getenv("MOQ_EXPORT_TEST_BROADCASTS"), "live=legacy"), ",") {
		name, container, _ := strings.Cut(spec, "=")
		b := model.NewBroadcast(name)
		go demo.Publish(context.Background(), b, demo.Options{Realtime: true, Offset: offset, KeepGroups: keep,
			Container: catalog.ContainerKind(container), Hold: hold})
		bs = append(bs, b)
	}
	if hold != nil {
		go HoldUntilSubscribed(bs, hold, os.Stderr)
	}
	var versions []string
	if v := os.Getenv("MOQ_EXPORT_TEST_VERSIONS"); v != "" {
		versions = strings.Split(v, ",")
	}
	srv, err := subscribe.Listen(os.Getenv(PublisherEnv), subscribe.ServerOptions{
		Certificates: []tls.Certificate{cert}, Publish: bs, Versions: versions,
		NoFetch: os.Getenv("MOQ_EXPORT_TEST_NOFETCH") != "",
		// Its log goes to the test's (printed when a test fails): what
		// the publisher was asked for and when.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		return fail(err)
	}
	fmt.Printf("listening %s\n", srv.Addr())
	for {
		if _, err := srv.Accept(context.Background()); err != nil {
			return fail(err)
		}
	}
}

// HoldUntilSubscribed closes hold once every track of every broadcast in bs
// has a subscriber (the catalog track and the media tracks the demo creates
// right after it), printing each track to w as it gets its first.
func HoldUntilSubscribed(bs []*model.Broadcast, hold chan struct{}, w io.Writer) {
	defer close(hold)
	seen := map[string]bool{}
	for {
		all := true
		for _, b := range bs {
			names := b.TrackNames()
			all = all && len(names) > 1
			for _, name := range names {
				t, err := b.Track(name)
				if err != nil || t.Consumers() == 0 {
					all = false
					continue
				}
				if id := b.Name() + "/" + name; !seen[id] {
					seen[id] = true
					fmt.Fprintln(w, "subscribed", id)
				}
			}
		}
		if all {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// PublisherCert writes a self-signed certificate and its key as PEM files
// into dir for publisher processes, and returns their pin.
func PublisherCert(t *testing.T, dir string) (certFile, keyFile, pin string) {
	t.Helper()
	cert, pin, err := subscribe.SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pin
}

// PublisherProcess is a running publisher process.
type PublisherProcess struct {
	Cmd  *exec.Cmd
	Addr string
	log  LockedBuffer
}

// StartPublisher starts a publisher process on addr (":0" ports pick a
// free one) and waits until it listens.
func StartPublisher(t *testing.T, ctx context.Context, addr, certFile, keyFile string, epoch time.Time, env ...string) *PublisherProcess {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &PublisherProcess{Cmd: proctest.CommandContext(ctx, self)}
	p.Cmd.Env = append(os.Environ(), PublisherEnv+"="+addr, "MOQ_EXPORT_TEST_CERT="+certFile, "MOQ_EXPORT_TEST_KEY="+keyFile,
		"MOQ_EXPORT_TEST_EPOCH="+strconv.FormatInt(epoch.UnixNano(), 10))
	p.Cmd.Env = append(p.Cmd.Env, env...)
	p.Cmd.Stderr = &p.log
	stdout, err := p.Cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Cmd.Process.Kill(); p.Cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if !strings.HasPrefix(line, "listening ") {
		t.Fatalf("publisher: %q, %v\n%s", line, err, p.log.String())
	}
	go io.Copy(io.Discard, stdout)
	p.Addr = strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	return p
}

// BinaryEnv hands the command this test binary built to a child test
// Binary (proctest.KillMidRun), which then builds none.
const BinaryEnv = "MOQ_EXPORT_TEST_BINARY"

// UsePrebuilt reports whether the command was built by the test binary
// that started this one, and if so takes it.
func UsePrebuilt() bool {
	b := os.Getenv(BinaryEnv)
	if b != "" {
		Binary = b
	}
	return b != ""
}

// SoakBroadcasts are the broadcasts each publisher serves.
const SoakBroadcasts = "legacy=legacy,loc=loc,cmaf=cmaf"
