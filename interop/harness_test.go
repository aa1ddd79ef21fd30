package interop

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
)

// setupHint is what a skipped or failed test tells the reader to run.
const setupHint = "run scripts/interop-setup.sh (npm ci + esbuild bundle in interop/)"

// reference locates the Deno binary and the bundled programs, or skips the
// test (fails it when MOQ_INTEROP_REQUIRED=1).
type reference struct {
	deno string
	dist string
}

func needReference(t *testing.T) *reference {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + "; " + setupHint
		if os.Getenv("MOQ_INTEROP_REQUIRED") == "1" {
			t.Fatal("MOQ_INTEROP_REQUIRED=1: " + msg)
		}
		t.Skip("interop with @moq/net skipped: " + msg)
	}
	deno := os.Getenv("MOQ_INTEROP_DENO")
	if deno == "" {
		for _, c := range []string{
			filepath.Join(dir, "node_modules", ".bin", "deno"),
			filepath.Join(dir, "node_modules", "@deno", "linux-x64-glibc", "deno"),
			filepath.Join(dir, "node_modules", "@deno", "linux-arm64-glibc", "deno"),
			filepath.Join(dir, "node_modules", "@deno", "darwin-arm64", "deno"),
			filepath.Join(dir, "node_modules", "@deno", "darwin-x64", "deno"),
		} {
			if fi, err := os.Stat(c); err == nil && !fi.IsDir() && fi.Size() > 1<<20 {
				deno = c
				break
			}
		}
	}
	if deno == "" {
		missing("no deno binary under interop/node_modules")
	}
	dist := filepath.Join(dir, "dist")
	if stale := staleBundle(dir); stale != "" {
		// Sources edited since the last scripts/interop-setup.sh: rebundle
		// (esbuild came with the same npm ci as deno), once per test binary.
		rebuildOnce.Do(func() {
			out, err := exec.Command(filepath.Join(dir, "build.sh")).CombinedOutput()
			if err != nil {
				rebuildErr = fmt.Errorf("build.sh (%s): %v: %s", stale, err, out)
			}
		})
		if rebuildErr != nil {
			missing("%v", rebuildErr)
		}
	}
	return &reference{deno: deno, dist: dist}
}

var (
	rebuildOnce sync.Once
	rebuildErr  error
)

// staleBundle names the reason dist/ must be rebuilt ("" when current).
func staleBundle(dir string) string {
	srcs, _ := filepath.Glob(filepath.Join(dir, "src", "*.ts"))
	browser, _ := filepath.Glob(filepath.Join(dir, "browser", "*.ts"))
	srcs = append(srcs, browser...)
	for _, prog := range []string{"publish.js", "subscribe.js", "layouts.js", "token.js", filepath.Join("browser", "publish.js"), filepath.Join("browser", "ietf-publish.js")} {
		bundle, err := os.Stat(filepath.Join(dir, "dist", prog))
		if err != nil {
			return "no dist/" + prog
		}
		for _, s := range srcs {
			if fi, err := os.Stat(s); err == nil && fi.ModTime().After(bundle.ModTime()) {
				return "dist/" + prog + " is older than src/" + filepath.Base(s)
			}
		}
	}
	return ""
}

// event is one JSON line a reference program printed.
type event struct {
	Event string `json:"event"`
	raw   []byte
	// Fields used by the tests; the rest stays in raw.
	Port     int    `json:"port"`
	JSON     string `json:"json"`
	Message  string `json:"message"`
	Track    string `json:"track"`
	Sequence uint64 `json:"sequence"`
	Frame    int    `json:"frame"`
	Group    uint64 `json:"group"`
	Index    int    `json:"index"`
	TS       int64  `json:"ts"`
	Wire     int64  `json:"wire"`
	Data     []byte `json:"data"`
	Frames   int    `json:"frames"`
	Late     int64  `json:"late"` // ms behind the publisher's schedule
}

// refProcess is a running reference program.
type refProcess struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	events chan event
	stderr *lockedBuffer
	// trace is its stdout, each event with the wall time it arrived:
	// logged with stderr when the test fails. Frames are counted, not
	// kept; of each track's groups the first three, those sent 100 ms or
	// more behind the schedule and the last are kept.
	trace  *lockedBuffer
	frames int
	groups map[string]*groupTrace
	exited chan struct{}
	err    error // valid after exited is closed
	// crashTold: the test was failed for the program's crash already.
	crashTold bool
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs dist/<prog>.js under Deno with the flags. The process is killed
// when ctx ends and in t.Cleanup; its stderr is logged when the test fails.
func (r *reference) start(ctx context.Context, t *testing.T, prog string, flags ...string) *refProcess {
	t.Helper()
	args := append([]string{
		"run", "--quiet", "--no-config", "--no-lock", "--no-remote", "--no-npm",
		"--unstable-net", "--allow-net", "--allow-read",
		filepath.Join(r.dist, prog+".js"),
	}, flags...)
	cmd := proctest.CommandContext(ctx, r.deno, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "DENO_NO_UPDATE_CHECK=1", "DENO_DIR="+t.TempDir())
	cmd.WaitDelay = 2 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &refProcess{
		t: t, name: prog, cmd: cmd,
		events: make(chan event, 4096),
		stderr: &lockedBuffer{},
		trace:  &lockedBuffer{},
		groups: map[string]*groupTrace{},
		exited: make(chan struct{}),
	}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", prog, err)
	}
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		defer close(p.events)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var ev event
			line := append([]byte(nil), sc.Bytes()...)
			if err := json.Unmarshal(line, &ev); err != nil {
				ev = event{Event: "garbage", Message: string(line)}
			}
			ev.raw = line
			p.traceEvent(ev) // read in Cleanup after lines is closed
			p.events <- ev
		}
	}()
	go func() {
		<-lines
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
			// A crash while the test was not reading its events.
			if at := p.crash(); at != "" && !p.crashTold {
				t.Errorf("%s: the reference crashed (Deno %s), which is no failure of moq-export's and no pass: run the case again", prog, at)
			}
		default:
		}
		if cmd.Process != nil {
			_ = cmd.Process.Kill() // no-op error once it exited
		}
		<-p.exited
		if t.Failed() {
			t.Logf("%s stderr:\n%s", prog, p.stderr.String())
			t.Logf("%s events:\n%s", prog, p.traceSummary())
		}
	})
	return p
}

// groupTrace counts a track's "group" events and keeps its last.
type groupTrace struct {
	n    int
	last string
}

// traceEvent adds ev, just read, to the trace.
func (p *refProcess) traceEvent(ev event) {
	line := time.Now().Format("15:04:05.000") + " " + string(ev.raw)
	switch ev.Event {
	case "frame":
		p.frames++
		return
	case "group":
		g := p.groups[ev.Track]
		if g == nil {
			g = &groupTrace{}
			p.groups[ev.Track] = g
		}
		g.n++
		g.last = line
		if g.n > 3 && ev.Late < 100 {
			return
		}
	}
	fmt.Fprintln(p.trace, line)
}

// traceSummary returns the trace, each track's last group event and the
// counts.
func (p *refProcess) traceSummary() string {
	var b strings.Builder
	b.WriteString(p.trace.String())
	for _, track := range slices.Sorted(maps.Keys(p.groups)) {
		g := p.groups[track]
		fmt.Fprintf(&b, "(%d group events of %s, the last: %s)\n", g.n, track, g.last)
	}
	if p.frames > 0 {
		fmt.Fprintf(&b, "(%d frame events)\n", p.frames)
	}
	return b.String()
}

// crash returns where Deno panicked and why ("panicked at FILE:LINE:COL:
// MESSAGE") when the program's stderr says it did, or "".
func (p *refProcess) crash() string {
	return denoPanic(p.stderr.String())
}

func denoPanic(stderr string) string {
	if !strings.Contains(stderr, "Deno has panicked") {
		return ""
	}
	lines := strings.Split(stderr, "\n")
	for i, line := range lines {
		if _, at, ok := strings.Cut(line, " panicked at "); ok {
			if i+1 < len(lines) {
				at += " " + strings.TrimSpace(lines[i+1])
			}
			return "panicked at " + at
		}
	}
	return "panicked"
}

// next returns the next event, failing the test on timeout, on an "error"
// event, or when the program exits first.
func (p *refProcess) next(ctx context.Context) event {
	p.t.Helper()
	select {
	case ev, ok := <-p.events:
		if !ok {
			<-p.exited
			if at := p.crash(); at != "" {
				p.crashTold = true
				p.t.Fatalf("%s: the reference crashed (Deno %s), which is no failure of moq-export's and no pass: run the case again", p.name, at)
			}
			p.t.Fatalf("%s exited (%v) before the next event", p.name, p.err)
		}
		if ev.Event == "error" || ev.Event == "garbage" {
			p.t.Fatalf("%s: %s: %s", p.name, ev.Event, ev.Message)
		}
		return ev
	case <-ctx.Done():
		p.t.Fatalf("%s: no event before the deadline: %v", p.name, ctx.Err())
	}
	return event{}
}

// expect reads events until one of the given kind arrives, passing the
// skipped ones to seen (may be nil).
func (p *refProcess) expect(ctx context.Context, kind string, seen func(event)) event {
	p.t.Helper()
	for {
		ev := p.next(ctx)
		if ev.Event == kind {
			return ev
		}
		if seen != nil {
			seen(ev)
		}
	}
}

// wait waits for the program to exit by itself and fails on a non-zero exit.
func (p *refProcess) wait(ctx context.Context) {
	p.t.Helper()
	select {
	case <-p.exited:
		if p.err != nil {
			p.t.Fatalf("%s: %v", p.name, p.err)
		}
	case <-ctx.Done():
		p.t.Fatalf("%s still running at the deadline", p.name)
	}
}

// --- certificates ---

// testCert is a self-signed ECDSA leaf for localhost/127.0.0.1. It is not a
// CA: rustls (Deno) refuses a CA certificate used as the end entity.
type testCert struct {
	certFile, keyFile string
	der               []byte
	key               *ecdsa.PrivateKey
	fingerprint       string // hex SHA-256 of the DER leaf
}

func newTestCert(t *testing.T) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := &testCert{
		certFile: filepath.Join(dir, "cert.pem"),
		keyFile:  filepath.Join(dir, "key.pem"),
		der:      der,
		key:      key,
	}
	sum := sha256.Sum256(der)
	c.fingerprint = hex.EncodeToString(sum[:])
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(c.certFile, "CERTIFICATE", der)
	write(c.keyFile, "EC PRIVATE KEY", keyDER)
	return c
}

// --- the published broadcast ---

type manifestFrame struct {
	TS   int64  `json:"ts"`
	Key  bool   `json:"key"`
	At   int64  `json:"at"`
	Data []byte `json:"data"`
}

type manifestTrack struct {
	Name   string          `json:"name"`
	Kind   string          `json:"kind"`
	Config map[string]any  `json:"config"`
	Frames []manifestFrame `json:"frames"`
}

type manifest struct {
	Broadcast string          `json:"broadcast"`
	Tracks    []manifestTrack `json:"tracks"`
}

// sampleBroadcast builds the broadcast the reference publishes: the h264
// sample as track "video" (one group per GOP, as encoded) and the aac sample
// as track "audio" with a new group every audioGroup frames (1 = one group per
// frame, as the browser and Rust publishers do). Send times follow decode
// order for video and the timestamp for audio.
func sampleBroadcast(name string, audioGroup int) *manifest {
	v := samples.MustLoadSample("h264")
	a := samples.MustLoadSample("aac")
	video := manifestTrack{Name: "video", Kind: "video", Config: map[string]any{
		"codec":       v.Codec,
		"description": hex.EncodeToString(v.Description),
		"codedWidth":  v.Width,
		"codedHeight": v.Height,
		"framerate":   v.Framerate,
		"jitter":      int(1000 / v.Framerate * 3), // up to 2 B-frames in a row
	}}
	for i, f := range v.Frames {
		video.Frames = append(video.Frames, manifestFrame{
			TS: f.Timestamp, Key: f.Keyframe, At: int64(float64(i) * 1e6 / v.Framerate), Data: f.Payload,
		})
	}
	audio := manifestTrack{Name: "audio", Kind: "audio", Config: map[string]any{
		"codec":            a.Codec,
		"description":      hex.EncodeToString(a.Description),
		"sampleRate":       a.SampleRate,
		"numberOfChannels": a.Channels,
	}}
	for i, f := range a.Frames {
		audio.Frames = append(audio.Frames, manifestFrame{
			TS: f.Timestamp, Key: i%audioGroup == 0, At: f.Timestamp, Data: f.Payload,
		})
	}
	return &manifest{Broadcast: name, Tracks: []manifestTrack{video, audio}}
}

func (m *manifest) write(t *testing.T) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "manifest.json")
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

func (m *manifest) track(name string) *manifestTrack {
	for i := range m.Tracks {
		if m.Tracks[i].Name == name {
			return &m.Tracks[i]
		}
	}
	return nil
}

// expectedFrame is one frame as a subscriber must see it.
type expectedFrame struct {
	Group    uint64
	Index    int // position in the group
	TS       int64
	Keyframe bool
	Payload  []byte
}

// expected maps the manifest's frames onto the group sequences the reference
// publisher reported ("group" events: track, sequence, first frame index).
func (m *manifest) expected(t *testing.T, groups []event) map[string][]expectedFrame {
	t.Helper()
	out := map[string][]expectedFrame{}
	for _, tr := range m.Tracks {
		starts := map[int]uint64{}
		for _, g := range groups {
			if g.Track == tr.Name {
				starts[g.Frame] = g.Sequence
			}
		}
		var seq uint64
		idx := 0
		for i, f := range tr.Frames {
			if f.Key {
				s, ok := starts[i]
				if !ok {
					t.Fatalf("publisher reported no group for %s frame %d", tr.Name, i)
				}
				seq, idx = s, 0
			}
			out[tr.Name] = append(out[tr.Name], expectedFrame{
				Group: seq, Index: idx, TS: f.TS, Keyframe: idx == 0, Payload: f.Data,
			})
			idx++
		}
	}
	return out
}

// compareFrames checks got against want frame by frame (bytes, timestamp,
// group, position and keyframe flag) and reports every difference, up to a
// limit, under the track's name.
func compareFrames(t *testing.T, track string, want, got []expectedFrame) {
	t.Helper()
	bad := 0
	report := func(format string, args ...any) {
		t.Helper()
		bad++
		if bad <= 10 {
			t.Errorf("%s: "+format, append([]any{track}, args...)...)
		}
	}
	if len(got) != len(want) {
		report("received %d frames, published %d", len(got), len(want))
	}
	for i := 0; i < len(want) && i < len(got); i++ {
		w, g := want[i], got[i]
		switch {
		case g.Group != w.Group || g.Index != w.Index:
			report("frame %d: group %d index %d, want group %d index %d", i, g.Group, g.Index, w.Group, w.Index)
		case g.TS != w.TS:
			report("frame %d: timestamp %d us, want %d us", i, g.TS, w.TS)
		case g.Keyframe != w.Keyframe:
			report("frame %d: keyframe %v, want %v", i, g.Keyframe, w.Keyframe)
		case !bytes.Equal(g.Payload, w.Payload):
			report("frame %d: payload differs (%d bytes, want %d)", i, len(g.Payload), len(w.Payload))
		}
	}
	if bad > 10 {
		t.Errorf("%s: %d more differences", track, bad-10)
	}
}

// sortFrames puts frames received out of group order (groups are separate
// QUIC streams) back into publish order: by group, then position.
func sortFrames(frames []expectedFrame) {
	slices.SortFunc(frames, func(a, b expectedFrame) int {
		if a.Group != b.Group {
			if a.Group < b.Group {
				return -1
			}
			return 1
		}
		return a.Index - b.Index
	})
}

// freePort returns a UDP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}
