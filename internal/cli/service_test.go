package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServiceFlagsAreCheckedBeforeAnythingRuns: the service flags refuse
// what cannot work, saying what to do (exit 2).
func TestServiceFlagsAreCheckedBeforeAnythingRuns(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--http", "0.0.0.0:0"}, "--http-token-file"},
		{[]string{"--http", "127.0.0.1:0", "--http-token-file", empty}, "is empty"},
		{[]string{"--http-token-file", empty, "-o", "x.mkv"}, "is for --http"},
		{[]string{"https://relay.example/x", "--shard", "1/3", "-o", "{broadcast}.mkv"}, "add --record-all"},
		{[]string{"https://relay.example/x", "--record-all", "--shard", "3/3", "-o", "{broadcast}.mkv"}, "0 <= I < N"},
		{[]string{"--webhook", "ftp://x", "-o", "x.mkv"}, "http:// or https://"},
		{[]string{"--retention-age", "7d"}, "-o directory"},
		{[]string{"--retention-age", "seven days", "-o", "x.mkv"}, "not an age"},
	} {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), tc.args, Env{Stdout: &out, Stderr: &errOut})
		if code != ExitUsage || !strings.Contains(errOut.String(), tc.says) {
			t.Errorf("%v: exit %d, stderr %q; want 2 saying %q", tc.args, code, errOut.String(), tc.says)
		}
	}
}

// TestAConfigFileSetsFlagsTheCommandLineOverrides: every key of the YAML
// file is a flag (lists for the repeatable ones, url for the URL); what
// the command line sets wins; an unknown key is a usage error.
func TestAConfigFileSetsFlagsTheCommandLineOverrides(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "moq-export.yaml")
	os.WriteFile(path, []byte(`
url: https://relay.example/anon
record-all: true
output: rec/{broadcast}-{n}.mkv
segment: 10m
format: mkv
webhook: [https://a.example/hook, https://b.example/hook]
retention-age: 7d
retention-size: 20G
shard: 1/3
max-broadcasts: 100
verbose: 1
`), 0o644)
	cfg, err := parse(t, "--config", path, "-f", "webm")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.URL != "https://relay.example/anon" || !cfg.RecordAll || cfg.Output != "rec/{broadcast}-{n}.mkv" || cfg.Segment != 10*time.Minute ||
		cfg.Format != "webm" || len(cfg.Webhooks) != 2 || cfg.Webhooks[1] != "https://b.example/hook" ||
		time.Duration(cfg.RetentionAge) != 7*24*time.Hour || cfg.RetentionSize != 20<<30 || cfg.shard.I != 1 || cfg.shard.N != 3 ||
		cfg.MaxBroadcasts != 100 || cfg.Verbose != 1 {
		t.Errorf("config: %+v", cfg)
	}
	cfg, err = parse(t, "--config", path, "https://other.example/x", "--segment", "1m")
	if err != nil || cfg.URL != "https://other.example/x" || cfg.Segment != time.Minute {
		t.Errorf("the command line did not win: %v %+v", err, cfg)
	}
	os.WriteFile(path, []byte("colour: red\n"), 0o644)
	if _, err := parse(t, "--config", path); err == nil || !IsUsageError(err) || !strings.Contains(err.Error(), `"colour" is not a flag`) {
		t.Errorf("unknown key: %v", err)
	}
}
