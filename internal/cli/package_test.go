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

// TestRecordAllRefusesPackagesThatWouldShareADirectory: --record-all
// into HLS/DASH packages whose directory does not name the broadcast
// (-o 'rec/{broadcast}.m3u8') would put every broadcast's package in rec/,
// where their files (v0.mp4, a0.mp4, v0.m3u8, ...) overwrite each other's:
// the command refuses it before recording anything (exit 2), naming the
// -o that gives each package its directory. One broadcast (-b) into such
// a name, and --record-all with {broadcast} in the directory, are taken.
func TestRecordAllRefusesPackagesThatWouldShareADirectory(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	refused := []struct {
		name    string
		args    []string
		suggest string
	}{
		{"a relay's broadcasts, the broadcast naming the playlist only",
			[]string{"--record-all", "https://r.example/", "-o", rec + "/{broadcast}.m3u8"}, rec + "/{broadcast}/index.m3u8"},
		{"the broadcast naming the MPD only",
			[]string{"--record-all", "https://r.example/", "-o", rec + "/{broadcast}.mpd"}, rec + "/{broadcast}/index.mpd"},
		{"-f hls, the broadcast and the time naming the playlist",
			[]string{"--record-all", "https://r.example/", "-f", "hls", "-o", rec + "/{broadcast}-{time}.m3u8"}, rec + "/{broadcast}-{time}/index.m3u8"},
		{"the publishers of --listen",
			[]string{"--listen", "127.0.0.1:0", "--record-all", "-o", rec + "/{broadcast}.m3u8"}, rec + "/{broadcast}/index.m3u8"},
		{"an object store's keys",
			[]string{"--record-all", "https://r.example/", "-o", "s3://bucket/rec/{broadcast}.m3u8"}, "s3://bucket/rec/{broadcast}/index.m3u8"},
	}
	for _, tc := range refused {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			// Bounded: a command that took the -o would go on to dial
			// the relay (or listen) and record.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			code := Execute(ctx, tc.args, Env{Stdout: &out, Stderr: &errOut})
			msg := out.String() + errOut.String()
			if code != ExitUsage || !strings.Contains(msg, "one directory") || !strings.Contains(msg, "'"+tc.suggest+"'") {
				t.Errorf("exit %d, %q; want %d, saying the packages would share a directory and suggesting '%s'", code, msg, ExitUsage, tc.suggest)
			}
			if _, err := os.Stat(rec); err == nil {
				t.Errorf("%s was created before the refusal", rec)
			}
		})
	}
	taken := []struct {
		name string
		args []string
	}{
		{"the broadcast naming the directory", []string{"--record-all", "https://r.example/", "-o", rec + "/{broadcast}/index.m3u8"}},
		{"-f hls, the broadcast being the directory", []string{"--record-all", "https://r.example/", "-f", "hls", "-o", rec + "/{broadcast}"}},
		{"one broadcast, the broadcast naming the playlist", []string{"https://r.example/", "-b", "room/alice", "-o", rec + "/{broadcast}.m3u8"}},
	}
	for _, tc := range taken {
		t.Run("taken: "+tc.name, func(t *testing.T) {
			if _, err := parse(t, tc.args...); err != nil {
				t.Errorf("%v: %v", tc.args, err)
			}
		})
	}
}
