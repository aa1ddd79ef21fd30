package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/mediatest"
)

func TestArchiveFlagsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"--retention", "1m", "-o", "x.mkv"}, "goes with -f archive"},
		{[]string{"--from", "1s", "-o", "x.mkv"}, "give its directory"},
		{[]string{"-f", "archive"}, "give -o DIR"},
		{[]string{"-f", "archive", "-o", "d", "--segment", "10s"}, "cuts its own records"},
		{[]string{"-f", "archive", "-o", "d", "--demo-fast"}, "drop --demo-fast"},
		{[]string{dir, "--from", "soon", "-o", "x.mkv"}, "neither a media time"},
		{[]string{dir, "--from", "3s", "--to", "2s", "-o", "x.mkv"}, "is not after"},
		{[]string{"--replay-to", "moql://127.0.0.1:1/"}, "publishes an archive"},
		{[]string{dir, "--replay-to", "moql://127.0.0.1:1/", "-o", "x.mkv"}, "records nothing"},
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

// TestTheCommandArchivesListsAndCutsTheDemo: -f archive -o DIR, then
// DIR --list, then a range of DIR into MP4, which ffmpeg decodes clean.
func TestTheCommandArchivesListsAndCutsTheDemo(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	arch := filepath.Join(dir, "arch")
	run := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Execute(context.Background(), args, Env{Stdout: &stdout, Stderr: &stderr}); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		return stdout.String()
	}
	run("-f", "archive", "-o", arch, "--demo-loops", "1", "--progress", "never")
	list := run(arch, "--list")
	for _, want := range []string{"demo (archive v2)", "h264", "aac", "0s-"} {
		if !strings.Contains(list, want) {
			t.Errorf("--list says %q, want %q in it", list, want)
		}
	}
	clip := filepath.Join(dir, "clip.mp4")
	run("file://"+arch, "-b", "demo", "--from", "1s", "--to", "3s", "-o", clip, "--progress", "never")
	mediatest.DecodeClean(t, clip)
	d, err := mediatest.Probe(t, clip).Format.Seconds()
	if err != nil || d < 1.9 || d > 2.1 {
		t.Errorf("the clip lasts %v s (%v), want the 2 s from 1 s to 3 s", d, err)
	}
}
