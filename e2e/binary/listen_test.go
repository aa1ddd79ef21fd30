package binary

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// listener is the binary running in --listen mode.
type listener struct {
	cmd   *exec.Cmd
	lines chan string // stderr, line by line; closed when it ends
	log   []string    // stderr read so far
	addr  string      // host:port it listens on
	pin   string      // fingerprint of its certificate
	self  bool        // it said its certificate is self-signed
}

var listeningLine = regexp.MustCompile(`listening on moql://(\S+) and https://\S+ \((self-signed certificate|certificate \S+), SHA-256 fingerprint ([0-9a-f]{64})`)

// startListener starts the binary with --listen 127.0.0.1:0 and args in dir
// and waits for the line that says where it listens.
func startListener(t *testing.T, dir string, args ...string) *listener {
	t.Helper()
	l := &listener{cmd: proctest.Command(binary, append([]string{"--listen", "127.0.0.1:0"}, args...)...), lines: make(chan string, 100)}
	l.cmd.Dir = dir
	stderr, err := l.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.cmd.Process.Kill() })
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
		close(l.lines)
	}()
	for l.addr == "" {
		select {
		case line, ok := <-l.lines:
			if !ok {
				t.Fatalf("moq-export exited:\n%s", strings.Join(l.log, "\n"))
			}
			l.log = append(l.log, line)
			if m := listeningLine.FindStringSubmatch(line); m != nil {
				l.addr, l.self, l.pin = m[1], m[2] == "self-signed certificate", m[3]
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no listening line:\n%s", strings.Join(l.log, "\n"))
		}
	}
	return l
}

// wait collects the rest of stderr and waits up to timeout for the process
// to end on its own; it returns the exit error.
func (l *listener) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for line := range l.lines {
			l.log = append(l.log, line)
		}
		done <- l.cmd.Wait()
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		l.cmd.Process.Kill()
		<-done
		t.Fatalf("moq-export still running after %v:\n%s", timeout, strings.Join(l.log, "\n"))
		return nil
	}
}

// publisher connects to the listener as a publisher, pinning pin.
func publisher(t *testing.T, ctx context.Context, addr, pin string) *subscribe.Session {
	t.Helper()
	sess, err := subscribe.Dial(ctx, "moql://"+addr+"/", subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: pin,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// publishDemo publishes the demo media as broadcast name on sess.
func publishDemo(t *testing.T, ctx context.Context, sess *subscribe.Session, name string, opts demo.Options) *model.Broadcast {
	t.Helper()
	bc := model.NewBroadcast(name)
	opts.Realtime = true
	go demo.Publish(ctx, bc, opts)
	if err := sess.Publish(bc); err != nil {
		t.Fatal(err)
	}
	return bc
}

// TestListenRecordsEveryAnnouncedBroadcast connects a publisher to
// --listen --record-all and announces two broadcasts, one with a hostile
// name: each is recorded to its own file inside the output directory.
func TestListenRecordsEveryAnnouncedBroadcast(t *testing.T) {
	needTools(t, "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	l := startListener(t, dir, "--record-all", "-o", "rec/{broadcast}-{n}.ts", "--duration", "1.5s")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess := publisher(t, ctx, l.addr, l.pin)
	for _, name := range []string{"alice", "../../escape"} {
		publishDemo(t, ctx, sess, name, demo.Options{})
	}
	want := []string{filepath.Join(dir, "rec", "alice-0.ts"), filepath.Join(dir, "rec", "_._.._escape-0.ts")}
	deadline := time.Now().Add(15 * time.Second)
	for {
		// A recording is done when its 1.5 s are in: the file stops growing.
		sizes := 0
		for _, p := range want {
			if st, err := os.Stat(p); err == nil && st.Size() > 50000 {
				sizes++
			}
		}
		if sizes == len(want) {
			break
		}
		if time.Now().After(deadline) {
			files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
			t.Fatalf("files %v, want %v", files, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	l.cmd.Process.Signal(os.Interrupt)
	if err := l.wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v\n%s", err, strings.Join(l.log, "\n"))
	}
	var all []string
	filepath.WalkDir(filepath.Dir(dir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, "escape") {
			all = append(all, p)
		}
		return nil
	})
	if len(all) != 1 || all[0] != want[1] {
		t.Errorf("files named after the hostile broadcast: %v, want only %s", all, want[1])
	}
	for _, p := range want {
		decode(t, p)
	}
}

// TestListenWithoutRecordAllRecordsTheFirstBroadcastUntilItEnds: without
// --record-all, --listen records the one broadcast a publisher announces
// to -o and exits 0 on its own when that broadcast ends.
func TestListenWithoutRecordAllRecordsTheFirstBroadcastUntilItEnds(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	l := startListener(t, dir, "-o", "first.mkv")
	if !l.self || l.pin == "" {
		t.Errorf("listening line without the self-signed certificate's fingerprint:\n%s", strings.Join(l.log, "\n"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess := publisher(t, ctx, l.addr, l.pin)
	start := time.Now()
	bc := publishDemo(t, ctx, sess, "alice", demo.Options{Loops: 1})
	if err := l.wait(t, 20*time.Second); err != nil {
		t.Fatalf("exit: %v\n%s", err, strings.Join(l.log, "\n"))
	}
	select {
	case <-bc.Done():
	default:
		t.Errorf("moq-export exited after %v, before the broadcast ended", time.Since(start))
	}
	path := filepath.Join(dir, "first.mkv")
	p := probe(t, path)
	// The whole 4 s loop, give or take where the live join fell.
	expectFrames(t, p, "h264", 4)
	// Audio joins live at its newest frame, after the 300 ms the command
	// waits for more announcements when no -b names the broadcast.
	if n, all := p.frames(t, "aac"), len(samples.MustLoadSample("aac").Frames); n < all-47 || n > all {
		t.Errorf("aac: %d frames, want the %d of the broadcast less at most 1s", n, all)
	}
	if d := p.duration(t); d < 3800*time.Millisecond || d > 4200*time.Millisecond {
		t.Errorf("duration %v, want the 4s the broadcast lasted", d)
	}
	decode(t, path)
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 1 {
		t.Errorf("files %v, want only first.mkv", files)
	}
}

// msfCatalog returns an MSF catalog (draft-01) of the named demo samples,
// their descriptions as base64 initData as MSF has them.
func msfCatalog(t *testing.T, names ...string) []byte {
	t.Helper()
	var tracks []map[string]any
	for _, name := range names {
		s := samples.MustLoadSample(name)
		tr := map[string]any{"name": name, "packaging": "legacy", "role": s.Kind, "codec": s.Codec,
			"initData": base64.StdEncoding.EncodeToString(s.Description)}
		if s.Kind == "video" {
			tr["width"], tr["height"], tr["framerate"] = s.Width, s.Height, s.Framerate
			tr["jitter"] = 3 * 1000 / s.Framerate // B-frames, as the demo's hang catalog says
		} else {
			tr["samplerate"], tr["channelConfig"] = s.SampleRate, strconv.Itoa(s.Channels)
		}
		tracks = append(tracks, tr)
	}
	b, err := json.Marshal(map[string]any{"version": "draft-01", "tracks": tracks})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestListenRecordsTheMSFBroadcastNamedByB: a publisher announces two
// broadcasts; -b picks x.msf, whose renditions are read from its MSF
// "catalog" track (its hang catalog.json lists one more, which must not
// be recorded).
func TestListenRecordsTheMSFBroadcastNamedByB(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	l := startListener(t, dir, "-b", "x.msf", "-o", "msf.mkv", "--duration", "2s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess := publisher(t, ctx, l.addr, l.pin)
	publishDemo(t, ctx, sess, "alice", demo.Options{})

	bc := model.NewBroadcast("x.msf")
	g, err := bc.CreateTrack(catalog.MSFTrackName).AppendGroup()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.WriteFrame(model.Frame{Payload: msfCatalog(t, "h264", "opus")}); err != nil {
		t.Fatal(err)
	}
	g.Close(nil)
	go demo.Publish(ctx, bc, demo.Options{Renditions: []string{"h264", "aac", "opus"}, Realtime: true})
	if err := sess.Publish(bc); err != nil {
		t.Fatal(err)
	}

	if err := l.wait(t, 20*time.Second); err != nil {
		t.Fatalf("exit: %v\n%s", err, strings.Join(l.log, "\n"))
	}
	path := filepath.Join(dir, "msf.mkv")
	p := probe(t, path)
	var codecs []string
	for _, s := range p.Streams {
		codecs = append(codecs, s.CodecName)
	}
	if strings.Join(codecs, ",") != "h264,opus" {
		t.Errorf("streams %v, want h264,opus: the renditions of the MSF catalog", codecs)
	}
	expectFrames(t, p, "h264", 2)
	// Audio joins live at its newest frame: up to half a second may be
	// missing at the start.
	if n := p.frames(t, "opus"); n < 75 || n > 101 {
		t.Errorf("opus: %d frames, want 75 to 100 for 2s", n)
	}
	decode(t, path)
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 1 {
		t.Errorf("files %v, want only msf.mkv (alice is not recorded)", files)
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key as
// PEM files in dir and returns their paths and the certificate's pin.
func writeCert(t *testing.T, dir, name string) (certFile, keyFile, pin string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: "moq-export test " + name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 24 * time.Hour), // WebTransport pins at most 14 days
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+"-cert.pem"), filepath.Join(dir, name+"-key.pem")
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{certFile, "CERTIFICATE", der}, {keyFile, "PRIVATE KEY", pkcs8}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sum := sha256.Sum256(der)
	return certFile, keyFile, hex.EncodeToString(sum[:])
}

// TestListenServesTheGivenCertificate: with --tls-cert/--tls-key the
// listener presents that certificate: a publisher pinning another one is
// refused, one pinning it is recorded.
func TestListenServesTheGivenCertificate(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	cert, key, pin := writeCert(t, dir, "server")
	_, _, otherPin := writeCert(t, dir, "other")
	l := startListener(t, dir, "--tls-cert", cert, "--tls-key", key, "-o", "tls.ts", "--duration", "1s")
	if l.self || l.pin != pin {
		t.Errorf("with --tls-cert the listener should name the certificate and its fingerprint %s:\n%s", pin, strings.Join(l.log, "\n"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wrong, err := subscribe.Dial(ctx, "moql://"+l.addr+"/", subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: otherPin,
		Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		wrong.Close()
		t.Fatal("a publisher pinning another certificate connected")
	}
	sess := publisher(t, ctx, l.addr, pin)
	publishDemo(t, ctx, sess, "alice", demo.Options{})
	if err := l.wait(t, 20*time.Second); err != nil {
		t.Fatalf("exit: %v\n%s", err, strings.Join(l.log, "\n"))
	}
	path := filepath.Join(dir, "tls.ts")
	p := probe(t, path)
	expectFrames(t, p, "h264", 1)
	decode(t, path)
}

// TestListenRefusesBadCertificateFiles: a key that does not match the
// certificate, a file that cannot be read or is not PEM is a runtime error
// (exit 1) that names the flags, and nothing is written.
func TestListenRefusesBadCertificateFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, _, _ := writeCert(t, dir, "a")
	_, otherKey, _ := writeCert(t, dir, "b")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cert, key, says string
	}{
		{"mismatched key", cert, otherKey, "private key does not match public key"},
		{"missing file", filepath.Join(dir, "none.pem"), otherKey, "no such file"},
		{"not PEM", garbage, otherKey, "failed to find any PEM data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			r := run(t, out, "--listen", "127.0.0.1:0", "--tls-cert", tc.cert, "--tls-key", tc.key, "-o", "x.ts")
			if r.code != 1 {
				t.Errorf("exit %d, want 1 (%s)", r.code, r.stderr)
			}
			for _, want := range []string{"moq-export: ", "--tls-cert/--tls-key", tc.says, "give PEM files of a certificate and its key"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr %q does not say %q", r.stderr, want)
				}
			}
			if strings.Contains(r.stderr, "listening on") {
				t.Errorf("it listened anyway: %q", r.stderr)
			}
			if files, _ := filepath.Glob(filepath.Join(out, "*")); len(files) != 0 {
				t.Errorf("files left behind: %v", files)
			}
		})
	}
}

// TestListenWarnsWhenOthersCanPublish: --listen on every interface says
// that anyone who reaches it can publish; on loopback it stays quiet.
func TestListenWarnsWhenOthersCanPublish(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		addr string
		warn bool
	}{{"0.0.0.0:0", true}, {"127.0.0.1:0", false}} {
		cmd, errOut := start(t, t.TempDir(), "--listen", tt.addr, "-o", "x.mkv")
		errOut.waitFor(t, "listening on")
		cmd.Process.Signal(os.Interrupt)
		exitCode(t, cmd, 20*time.Second)
		if got := strings.Contains(errOut.String(), "anyone who reaches it can publish"); got != tt.warn {
			t.Errorf("--listen %s: warning %v, want %v; stderr %q", tt.addr, got, tt.warn, errOut.String())
		}
	}
}

// TestSIGTERMDrainsListenPublishersWithGoAway: a supervisor stopping a
// --listen recorder (SIGTERM) sends every connected publisher GOAWAY, so
// that it moves to wherever it reconnects instead of meeting a dead
// connection, finishes the file, and exits 0 within the shutdown bound.
func TestSIGTERMDrainsListenPublishersWithGoAway(t *testing.T) {
	needTools(t, "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	l := startListener(t, dir, "-v", "--record-all", "-o", "rec/{broadcast}.mkv")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var pubLog lockedBuffer
	opts := subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: l.pin, Logger: slog.New(slog.NewTextHandler(&pubLog, nil))}
	opts.Reconnect.Disabled = true // the recorder is gone for good
	sess, err := subscribe.Dial(ctx, "moql://"+l.addr+"/", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	publishDemo(t, ctx, sess, "alice", demo.Options{})
	l.waitLine(t, "writing", "alice.mkv")
	time.Sleep(time.Second) // some media in the file
	l.cmd.Process.Signal(syscall.SIGTERM)
	if err := l.wait(t, 25*time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, strings.Join(l.log, "\n"))
	}
	log := strings.Join(l.log, "\n")
	if !strings.Contains(log, "asked the publishers to reconnect (GOAWAY)") || !strings.Contains(log, "sessions=1") {
		t.Errorf("the recorder did not say it sent GOAWAY to its one publisher:\n%s", log)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(pubLog.String(), "peer sent GOAWAY") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(pubLog.String(), "peer sent GOAWAY") {
		t.Errorf("the publisher saw no GOAWAY:\n%s", pubLog.String())
	}
	decode(t, filepath.Join(dir, "rec", "alice.mkv"))
}
