package service

import (
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
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

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
	cmdtest.NeedTools(t, "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	l := cmdtest.StartListener(t, dir, "--record-all", "-o", "rec/{broadcast}-{n}.ts", "--duration", "1.5s")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess := publisher(t, ctx, l.Addr, l.Pin)
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
	l.Cmd.Process.Signal(os.Interrupt)
	if err := l.Wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v\n%s", err, strings.Join(l.Log, "\n"))
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
		cmdtest.Decode(t, p)
	}
}

// TestListenWithoutRecordAllRecordsTheFirstBroadcastUntilItEnds: without
// --record-all, --listen records the one broadcast a publisher announces
// to -o and exits 0 on its own when that broadcast ends.
func TestListenWithoutRecordAllRecordsTheFirstBroadcastUntilItEnds(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	l := cmdtest.StartListener(t, dir, "-o", "first.mkv")
	if !l.Self || l.Pin == "" {
		t.Errorf("listening line without the self-signed certificate's fingerprint:\n%s", strings.Join(l.Log, "\n"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess := publisher(t, ctx, l.Addr, l.Pin)
	start := time.Now()
	bc := publishDemo(t, ctx, sess, "alice", demo.Options{Loops: 1})
	if err := l.Wait(t, 20*time.Second); err != nil {
		t.Fatalf("exit: %v\n%s", err, strings.Join(l.Log, "\n"))
	}
	select {
	case <-bc.Done():
	default:
		t.Errorf("moq-export exited after %v, before the broadcast ended", time.Since(start))
	}
	path := filepath.Join(dir, "first.mkv")
	p := cmdtest.Probe(t, path)
	// The whole 4 s loop, give or take where the live join fell.
	cmdtest.ExpectFrames(t, p, "h264", 4)
	// Audio joins live at its newest frame, after the 300 ms the command
	// waits for more announcements when no -b names the broadcast.
	if n, all := p.Frames(t, "aac"), len(samples.MustLoadSample("aac").Frames); n < all-47 || n > all {
		t.Errorf("aac: %d frames, want the %d of the broadcast less at most 1s", n, all)
	}
	if d := p.Duration(t); d < 3800*time.Millisecond || d > 4200*time.Millisecond {
		t.Errorf("duration %v, want the 4s the broadcast lasted", d)
	}
	cmdtest.Decode(t, path)
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
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	l := cmdtest.StartListener(t, dir, "-b", "x.msf", "-o", "msf.mkv", "--duration", "2s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess := publisher(t, ctx, l.Addr, l.Pin)
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

	if err := l.Wait(t, 20*time.Second); err != nil {
		t.Fatalf("exit: %v\n%s", err, strings.Join(l.Log, "\n"))
	}
	path := filepath.Join(dir, "msf.mkv")
	p := cmdtest.Probe(t, path)
	var codecs []string
	for _, s := range p.Streams {
		codecs = append(codecs, s.CodecName)
	}
	if strings.Join(codecs, ",") != "h264,opus" {
		t.Errorf("streams %v, want h264,opus: the renditions of the MSF catalog", codecs)
	}
	cmdtest.ExpectFrames(t, p, "h264", 2)
	// Audio joins live at its newest frame: up to half a second may be
	// missing at the start.
	if n := p.Frames(t, "opus"); n < 75 || n > 101 {
		t.Errorf("opus: %d frames, want 75 to 100 for 2s", n)
	}
	cmdtest.Decode(t, path)
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
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	cert, key, pin := writeCert(t, dir, "server")
	_, _, otherPin := writeCert(t, dir, "other")
	l := cmdtest.StartListener(t, dir, "--tls-cert", cert, "--tls-key", key, "-o", "tls.ts", "--duration", "1s")
	if l.Self || l.Pin != pin {
		t.Errorf("with --tls-cert the listener should name the certificate and its fingerprint %s:\n%s", pin, strings.Join(l.Log, "\n"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wrong, err := subscribe.Dial(ctx, "moql://"+l.Addr+"/", subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: otherPin,
		Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		wrong.Close()
		t.Fatal("a publisher pinning another certificate connected")
	}
	sess := publisher(t, ctx, l.Addr, pin)
	publishDemo(t, ctx, sess, "alice", demo.Options{})
	if err := l.Wait(t, 20*time.Second); err != nil {
		t.Fatalf("exit: %v\n%s", err, strings.Join(l.Log, "\n"))
	}
	path := filepath.Join(dir, "tls.ts")
	p := cmdtest.Probe(t, path)
	cmdtest.ExpectFrames(t, p, "h264", 1)
	cmdtest.Decode(t, path)
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
			r := cmdtest.Run(t, out, "--listen", "127.0.0.1:0", "--tls-cert", tc.cert, "--tls-key", tc.key, "-o", "x.ts")
			if r.Code != 1 {
				t.Errorf("exit %d, want 1 (%s)", r.Code, r.Stderr)
			}
			for _, want := range []string{"moq-export: ", "--tls-cert/--tls-key", tc.says, "give PEM files of a certificate and its key"} {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("stderr %q does not say %q", r.Stderr, want)
				}
			}
			if strings.Contains(r.Stderr, "listening on") {
				t.Errorf("it listened anyway: %q", r.Stderr)
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
		cmd, errOut := cmdtest.Start(t, t.TempDir(), "--listen", tt.addr, "-o", "x.mkv")
		errOut.WaitFor(t, "listening on")
		cmd.Process.Signal(os.Interrupt)
		cmdtest.ExitCode(t, cmd, 20*time.Second)
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
	cmdtest.NeedTools(t, "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	l := cmdtest.StartListener(t, dir, "-v", "--record-all", "-o", "rec/{broadcast}.mkv")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var pubLog cmdtest.LockedBuffer
	opts := subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: l.Pin, Logger: slog.New(slog.NewTextHandler(&pubLog, nil))}
	opts.Reconnect.Disabled = true // the recorder is gone for good
	sess, err := subscribe.Dial(ctx, "moql://"+l.Addr+"/", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	publishDemo(t, ctx, sess, "alice", demo.Options{})
	l.WaitLine(t, "writing", "alice.mkv")
	time.Sleep(time.Second) // some media in the file
	l.Cmd.Process.Signal(syscall.SIGTERM)
	if err := l.Wait(t, 25*time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, strings.Join(l.Log, "\n"))
	}
	log := strings.Join(l.Log, "\n")
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
	cmdtest.Decode(t, filepath.Join(dir, "rec", "alice.mkv"))
}
