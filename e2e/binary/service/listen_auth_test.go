package service

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
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/subscribe"
	"github.com/moq-export/moq-export/token"
)

// TestListenAuthKeyAdmitsOnlyWhatTokensAllow: with --auth-key, a publisher
// whose token allows "alice" gets alice recorded (and playable) but not
// the "mallory" it also announces; publishers without a token or with
// one of another key are refused with code 6; no token reaches the log.
func TestListenAuthKeyAdmitsOnlyWhatTokensAllow(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	key, err := token.Generate("ES256")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := token.Generate("ES256")
	l := cmdtest.StartListener(t, dir, "-v", "--auth-key", cmdtest.WriteKey(t, dir, key), "--record-all", "-o", "rec/{broadcast}-{n}.ts", "--duration", "1.5s")
	if log := strings.Join(l.Log, "\n"); !strings.Contains(log, "publishers need a token") || !strings.Contains(log, "algorithm=ES256") {
		t.Errorf("no line on what publishers need:\n%s", log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	good, _ := key.Sign(token.Claims{Put: token.Paths{"alice"}})
	forged, _ := other.Sign(token.Claims{Put: token.Paths{""}})
	dial := func(query string) (*subscribe.Session, error) {
		opts := subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: l.Pin, Logger: slog.New(slog.DiscardHandler)}
		opts.Reconnect.Disabled = true
		return subscribe.Dial(ctx, "moql://"+l.Addr+"/"+query, opts)
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
		l.WaitLine(t, "refused a session", "remote=127.0.0.1:")
	}
	sess, err := dial("?jwt=" + good)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	publishDemo(t, ctx, sess, "mallory", demo.Options{})
	publishDemo(t, ctx, sess, "alice", demo.Options{})
	l.WaitLine(t, "refused a broadcast", "broadcast=mallory")
	l.WaitLine(t, "output finished", "alice-0.ts")
	l.Cmd.Process.Signal(os.Interrupt)
	if err := l.Wait(t, 20*time.Second); err != nil {
		t.Errorf("exit: %v\n%s", err, strings.Join(l.Log, "\n"))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "rec", "*"))
	if len(files) != 1 || filepath.Base(files[0]) != "alice-0.ts" {
		t.Fatalf("files %v, want only alice-0.ts", files)
	}
	cmdtest.Decode(t, files[0])
	log := strings.Join(l.Log, "\n")
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
	cmd, errOut := cmdtest.Start(t, dir, "--listen", "127.0.0.1:0", "--auth-key", p, "-o", "x.mkv")
	if code := cmdtest.ExitCode(t, cmd, 20*time.Second); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(errOut.String(), "--auth-key") || !strings.Contains(errOut.String(), "at least 32 bytes") {
		t.Errorf("stderr %q", errOut.String())
	}
}
