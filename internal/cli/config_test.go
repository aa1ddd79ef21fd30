package cli

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/record"
)

// parse runs the command's flag parsing and checks without running it.
func parse(t *testing.T, args ...string) (*Config, error) {
	t.Helper()
	cfg := &Config{}
	cmd := newCommand(cfg, func() error { return nil })
	cmd.SetArgs(args)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	return cfg, cmd.ExecuteContext(context.Background())
}

func TestFlagsParseIntoConfig(t *testing.T) {
	cfg, err := parse(t, "https://relay.example/anon?jwt=x", "-b", "room/alice", "-o", "out.flv",
		"--duration", "10s", "--delay", "200ms", "--video", "hd,sd", "--video", "ld", "--audio", "none",
		"--keep-timestamps", "--tls-fingerprint", "AB:CD", "--progress", "never", "-vv")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.URL != "https://relay.example/anon?jwt=x" || cfg.Broadcast != "room/alice" || cfg.Output != "out.flv" {
		t.Errorf("url/broadcast/output: %+v", cfg)
	}
	if cfg.Format != FLV || cfg.Duration != 10*time.Second || cfg.Delay != 200*time.Millisecond {
		t.Errorf("format %q duration %v delay %v", cfg.Format, cfg.Duration, cfg.Delay)
	}
	if strings.Join(cfg.Video, ",") != "hd,sd,ld" || cfg.Audio == nil || len(cfg.Audio) != 0 {
		t.Errorf("video %q audio %#v", cfg.Video, cfg.Audio)
	}
	if !cfg.KeepTimestamps || cfg.TLSFingerprint != "AB:CD" || cfg.Progress != "never" || cfg.Verbose != 2 {
		t.Errorf("flags %+v", cfg)
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Format != TS || !cfg.toStdout() || cfg.Delay != 500*time.Millisecond || cfg.Progress != "auto" {
		t.Errorf("defaults %+v", cfg)
	}
	if cfg.Video != nil || cfg.Audio != nil {
		t.Errorf("renditions not given must be nil (all): %#v %#v", cfg.Video, cfg.Audio)
	}
}

func TestFormatComesFromFlagThenExtensionThenStdout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Format
	}{
		{nil, TS},
		{[]string{"-o", "-"}, TS},
		{[]string{"-o", "x.mkv"}, MKV},
		{[]string{"-o", "x.webm"}, WebM},
		{[]string{"-o", "x.flv"}, FLV},
		{[]string{"-o", "x.mkv", "-f", "ts"}, TS},
		{[]string{"-o", "x.bin", "-f", "flv"}, FLV},
		{[]string{"-f", "mkv"}, MKV},
	} {
		cfg, err := parse(t, tc.args...)
		if err != nil || cfg.Format != tc.want {
			t.Errorf("%v: format %q, %v; want %q", tc.args, cfg.Format, err, tc.want)
		}
	}
}

func TestUsageErrorsSayWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"-o", "x.avi"}, "-f flv|mkv|webm|ts|mp4"},
		{[]string{"-f", "avi"}, "use -f flv, mkv, webm, ts, mp4, hls or archive"},
		{[]string{"-f", "hls"}, "stdout cannot hold"},
		{[]string{"-o", "rec/x.m3u8", "--segment", "10s"}, "--hls-segment-duration"},
		{[]string{"-o", "x.mkv", "--hls-segment-duration", "2s"}, "is for -f hls"},
		{[]string{"-o", "x.mp4", "--hls-segment-files"}, "--hls-segment-files is for -f hls"},
		{[]string{"a", "b"}, "at most one URL"},
		{[]string{"relay.example/x"}, "no scheme"},
		{[]string{"ftp://relay.example/x"}, "unsupported URL scheme"},
		{[]string{"--segment", "10s"}, "template"},
		{[]string{"--segment", "10s", "-o", "out.mkv"}, "add {n} or {time}"},
		{[]string{"--record-all", "https://r.example/", "-o", "out-{n}.mkv"}, "{broadcast}"},
		// The built-in demo is recorded with --record-all too (one
		// broadcast), to a template that names it.
		{[]string{"--record-all", "-o", "demo.mkv"}, "{broadcast}"},
		{[]string{"--record-all", "--listen", ":1", "-b", "x", "-o", "{broadcast}.mkv"}, "drop -b"},
		{[]string{"--listen", ":1", "https://r.example/"}, "exclude each other"},
		{[]string{"--listen", ":1", "--list"}, "drop --list"},
		{[]string{"https://r.example/", "--demo-codecs", "vp9"}, "built-in demo"},
		{[]string{"https://r.example/", "--demo-container", "cmaf"}, "built-in demo"},
		{[]string{"--demo-container", "webm"}, "legacy, loc or cmaf"},
		{[]string{"--demo-container", "cmaf", "--demo-fast"}, "drop --demo-fast"},
		{[]string{"-b", "room/alice"}, "drop -b"},
		{[]string{"--delay", "0s"}, "--delay must be positive"},
		{[]string{"--duration", "-1s"}, "must not be negative"},
		{[]string{"--progress", "sometimes"}, "auto, always or never"},
		{[]string{"--tls-cert", "c.pem"}, "go together"},
		{[]string{"--tls-key", "k.pem"}, "go together"},
		{[]string{"--tls-cert", "c.pem", "--tls-key", "k.pem"}, "are for --listen"},
		{[]string{"-o", "rec/{nope}.ts"}, "unknown placeholder"},
		{[]string{"-o", "ftp://host/rec/one.mp4"}, "ftp:// is not an output"},
		{[]string{"-o", "file://host/rec/one.mp4"}, "file:///abs/path"},
		{[]string{"--unknown"}, "unknown flag"},
		{[]string{"--duration", "ten"}, "invalid argument"},
		{[]string{"-y", "-n", "-o", "x.mkv"}, "exclude each other"},
		{[]string{"--token-file", "t"}, "for a relay URL"},
		{[]string{"https://r.example/?jwt=abcd", "--token-file", "t"}, "already has a jwt"},
		{[]string{"helpp"}, "neither a command"},
	} {
		_, err := parse(t, tc.args...)
		if !IsUsageError(err) {
			t.Errorf("%v: error %v is not a usage error", tc.args, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.hint) {
			t.Errorf("%v: %q does not say %q", tc.args, err, tc.hint)
		}
	}
}

func TestExecuteExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--version"}, ExitOK, "moq-export "},
		{[]string{"--help"}, ExitOK, "--broadcast"},
		{[]string{"-f", "avi"}, ExitUsage, "moq-export --help"},
		{[]string{"--demo-codecs", "h266"}, ExitUsage, "pick from"},
		{[]string{"--demo-container", "cmaf", "--demo-codecs", "vp8"}, ExitUsage, "no CMAF form of the vp8 sample"},
	} {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), tc.args, Env{Stdout: &out, Stderr: &errOut})
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.out) {
			t.Errorf("%v: exit %d, output %q %q; want %d and %q", tc.args, code, out.String(), errOut.String(), tc.code, tc.out)
		}
	}
}

func TestMediaIsNeverWrittenToATerminal(t *testing.T) {
	var errOut bytes.Buffer
	code := Execute(context.Background(), nil, Env{Stdout: &bytes.Buffer{}, Stderr: &errOut, StdoutTerminal: true})
	if code != ExitUsage || !strings.Contains(errOut.String(), "ffplay") {
		t.Errorf("exit %d, %q", code, errOut.String())
	}
}

func TestRedactURLHidesTokens(t *testing.T) {
	for in, want := range map[string]string{
		"https://relay.example/anon?jwt=eyJhbGciOi.abc.def": "https://relay.example/anon?jwt=REDACTED",
		"https://relay.example/anon?foo=1&token=s3cr3t":     "https://relay.example/anon?foo=1&token=REDACTED",
		"moql://user:pass@relay.example:4443/x":             "moql://REDACTED@relay.example:4443/x",
		"https://relay.example/anon":                        "https://relay.example/anon",
		"https://relay.example/%zz?jwt=secret":              "https://relay.example/%zz…",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConsoleScrubsSecretsFromEveryWrite(t *testing.T) {
	var buf bytes.Buffer
	c := newConsole(&buf, false, redactorFor([]string{"https://relay.example/a?jwt=tok%2Fen123"}))
	log := newLogger(c, logText, slog.LevelInfo)
	log.Info("dialing", "url", "https://relay.example/a?jwt=tok%2Fen123", "raw", "tok/en123")
	c.Write([]byte("error: jwt tok/en123 refused\n"))
	if s := buf.String(); strings.Contains(s, "en123") || !strings.Contains(s, "REDACTED") {
		t.Errorf("secret reached stderr: %q", s)
	}
}

// TestTokensInOtherParametersAndEncodingsAreRedacted: a credential may sit
// in a parameter not called jwt (api_key, X-Amz-Signature, sessionToken)
// and reach stderr in the URL's own percent-encoding.
func TestTokensInOtherParametersAndEncodingsAreRedacted(t *testing.T) {
	for in, want := range map[string]string{
		"https://relay.example/anon?api_key=k3y5ecret":          "https://relay.example/anon?api_key=REDACTED",
		"https://relay.example/anon?X-Amz-Signature=abcdef0123": "https://relay.example/anon?X-Amz-Signature=REDACTED",
		"https://relay.example/anon?room=1&sessionToken=s3ss":   "https://relay.example/anon?room=1&sessionToken=REDACTED",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
	args := []string{"https://relay.example/a?jwt=tok%2Den123&x-api-key=K3YK3Y", "-b", "room?access-token=0THER5ECRET"}
	var buf bytes.Buffer
	c := newConsole(&buf, false, redactorFor(args))
	c.Write([]byte("GET https://relay.example/a?jwt=tok%2Den123&x-api-key=K3YK3Y: refused (tok-en123)\n"))
	c.Write([]byte("broadcast room?access-token=0THER5ECRET\n"))
	if s := buf.String(); strings.Contains(s, "en123") || strings.Contains(s, "K3YK3Y") || strings.Contains(s, "0THER5ECRET") {
		t.Errorf("secret reached stderr: %q", s)
	}
}

// TestTokenGoesIntoTheDialledURL: --token-file and MOQ_TOKEN add jwt= to
// the URL dialled; a token in the URL wins over MOQ_TOKEN.
func TestTokenGoesIntoTheDialledURL(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "t")
	if err := os.WriteFile(file, []byte("  a/b+c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := Env{Getenv: func(k string) string {
		if k == "MOQ_TOKEN" {
			return "ENVTOKEN"
		}
		return ""
	}}
	for _, tc := range []struct {
		url, file string
		env       Env
		want      string
	}{
		{"https://r.example/anon", file, Env{}, "https://r.example/anon?jwt=a%2Fb%2Bc"},
		{"https://r.example/anon?x=1", file, env, "https://r.example/anon?x=1&jwt=a%2Fb%2Bc"},
		{"https://r.example/anon", "", env, "https://r.example/anon?jwt=ENVTOKEN"},
		{"https://r.example/anon?jwt=URLTOKEN", "", env, "https://r.example/anon?jwt=URLTOKEN"},
		{"https://r.example/anon", "", Env{}, "https://r.example/anon"},
	} {
		cfg := &Config{URL: tc.url, TokenFile: tc.file}
		if err := cfg.resolveToken(tc.env); err != nil {
			t.Fatal(err)
		}
		if got := cfg.dialURL(); got != tc.want {
			t.Errorf("%s with --token-file %q: dials %s, want %s", tc.url, tc.file, got, tc.want)
		}
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	for _, f := range []string{empty, filepath.Join(dir, "nosuch")} {
		cfg := &Config{URL: "https://r.example/", TokenFile: f}
		if err := cfg.resolveToken(Env{}); !IsUsageError(err) {
			t.Errorf("--token-file %s: %v, want a usage error", f, err)
		}
	}
}

func TestReconnectingIsGivenUpAfterAtMostTheDuration(t *testing.T) {
	for _, tc := range []struct {
		reconnectFor, duration, want time.Duration
	}{
		{5 * time.Minute, 0, 5 * time.Minute},
		{5 * time.Minute, 10 * time.Second, 10 * time.Second},
		{0, 10 * time.Second, 10 * time.Second},
		{0, 0, 0},
		{time.Second, 10 * time.Second, time.Second},
	} {
		if got := reconnectFor(&Config{ReconnectFor: tc.reconnectFor, Duration: tc.duration}); got != tc.want {
			t.Errorf("--reconnect-for %v --duration %v: gives up after %v, want %v", tc.reconnectFor, tc.duration, got, tc.want)
		}
	}
}

// TestRecordAllLimitsByMode: --max-broadcasts bounds what publishers that
// connect to --listen can start (default 32); dialing a relay, --record-all
// records every broadcast unless it is set. --max-delay 0 means the delay
// never grows.
func TestRecordAllLimitsByMode(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		maxBroadcast int
	}{
		{[]string{"--record-all", "--listen", "127.0.0.1:0", "-o", "{broadcast}.mkv"}, defaultMaxBroadcasts},
		{[]string{"--record-all", "--listen", "127.0.0.1:0", "--max-broadcasts", "5", "-o", "{broadcast}.mkv"}, 5},
		{[]string{"--record-all", "https://r.example/", "-o", "{broadcast}.mkv"}, 0},
		{[]string{"--record-all", "https://r.example/", "--max-broadcasts", "7", "-o", "{broadcast}.mkv"}, 7},
	} {
		cfg, err := parse(t, tc.args...)
		if err != nil || cfg.MaxBroadcasts != tc.maxBroadcast {
			t.Errorf("%v: max broadcasts %d, %v; want %d", tc.args, cfg.MaxBroadcasts, err, tc.maxBroadcast)
		}
	}
	for _, tc := range []struct {
		flag string
		want time.Duration
	}{{"", record.DefaultMaxDelay}, {"2s", 2 * time.Second}, {"0", -1}} {
		args := []string{"-o", "x.mkv"}
		if tc.flag != "" {
			args = append(args, "--max-delay", tc.flag)
		}
		cfg, err := parse(t, args...)
		if err != nil || cliMaxDelay(cfg.MaxDelay) != tc.want {
			t.Errorf("--max-delay %q: %v, %v; want %v", tc.flag, cliMaxDelay(cfg.MaxDelay), err, tc.want)
		}
	}
}
