package binary

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/subscribe"
	"github.com/moq-export/moq-export/token"
)

// waitLine reads the listener's stderr until a line contains every want.
func (l *listener) waitLine(t *testing.T, want ...string) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				t.Fatalf("moq-export exited before logging %q:\n%s", want, strings.Join(l.log, "\n"))
			}
			l.log = append(l.log, line)
			all := true
			for _, w := range want {
				all = all && strings.Contains(line, w)
			}
			if all {
				return line
			}
		case <-deadline:
			t.Fatalf("no line with %q:\n%s", want, strings.Join(l.log, "\n"))
		}
	}
}

// writeKey writes the verifying half of key (the secret for HMAC) to a
// file and returns its path.
func writeKey(t *testing.T, dir string, key *token.Key) string {
	t.Helper()
	js, err := key.PublicJSON()
	if err != nil {
		js, err = key.MarshalJSON()
	}
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "auth.jwk")
	if err := os.WriteFile(p, js, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestListenAuthKeyAdmitsOnlyWhatTokensAllow: with --auth-key, a publisher
// whose token allows "alice" gets alice recorded (and playable) but not
// the "mallory" it also announces; publishers without a token or with
// one of another key are refused with code 6; no token reaches the log.
func TestListenAuthKeyAdmitsOnlyWhatTokensAllow(t *testing.T) {
	needTools(t, "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	key, err := token.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := token.Generate("ES256")
	l := startListener(t, dir, "-v", "--auth-key", writeKey(t, dir, key), "--record-all", "-o", "rec/{broadcast}-{n}.ts", "--duration", "1.5s")
	if log := strings.Join(l.log, "\n"); !strings.Contains(log, "publishers need a token") || !strings.Contains(log, "algorithm=ES256") {
		t.Errorf("no line on what publishers need:\n%s", log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	good, _ := key.Sign(token.Claims{Put: token.Paths{"alice"}})
	forged, _ := other.Sign(token.Claims{Put: token.Paths{""}})
	dial := func(query string) (*subscribe.Session, error) {
		opts := subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: l.pin, Logger: slog.New(slog.DiscardHandler)}
		opts.Reconnect.Disabled = true
		return subscribe.Dial(ctx, "moql://"+l.addr+"/"+query, opts)
	}
	for _, q := range []string{"", "?jwt=" + forged} {
		sess, err := dial(q)
		if err == nil {
			<-sess.Done()
			err = sess.Err()
			sess.Close()
		}
		if ce, ok := errors.AsType[*subscribe.CloseError](err); !ok || ce.Code != subscribe.CodeUnauthorized {
			t.Errorf("publisher %q: %v, want a close with code 6", strings.Split(q, ".")[0], err)
		}
		l.waitLine(t, "refused a session", "remote=127.0.0.1:")
	}
	sess, err := dial("?jwt=" + good)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	publishDemo(t, ctx, sess, "mallory", demo.Options{})
	publishDemo(t, ctx, sess, "alice", demo.Options{})
	l.waitLine(t, "refused a broadcast", "broadcast=mallory")
	l.waitLine(t, "output finished", "alice-0.ts")
	l.cmd.Process.Signal(os.Interrupt)
	if err := l.wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v\n%s", err, strings.Join(l.log, "\n"))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "rec", "*"))
	if len(files) != 1 || filepath.Base(files[0]) != "alice-0.ts" {
		t.Fatalf("files %v, want only alice-0.ts", files)
	}
	decode(t, files[0])
	log := strings.Join(l.log, "\n")
	for _, tok := range []string{good, forged} {
		if strings.Contains(log, tok) || strings.Contains(log, strings.Split(tok, ".")[2]) {
			t.Fatalf("a token is in the log:\n%s", log)
		}
	}
	if strings.Contains(log, "anyone who reaches it can publish") {
		t.Error("warned that anyone can publish although --auth-key was given")
	}
}

// TestListenRefusesABadAuthKey: a key file that is not a moq-token JWK
// stops the run before listening, saying so.
func TestListenRefusesABadAuthKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.jwk")
	os.WriteFile(p, []byte(`{"kty":"oct","alg":"HS256","k":"c2hvcnQ"}`), 0o600)
	cmd, errOut := start(t, dir, "--listen", "127.0.0.1:0", "--auth-key", p, "-o", "x.mkv")
	if code := exitCode(t, cmd, 20*time.Second); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(errOut.String(), "--auth-key") || !strings.Contains(errOut.String(), "at least 32 bytes") {
		t.Errorf("stderr %q", errOut.String())
	}
}
