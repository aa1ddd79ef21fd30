package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/internal/testutil/s3test"
)

// s3Env sets what the AWS tools read for server s: credentials, region,
// and AWS_ENDPOINT_URL (so path-style addressing), and nothing from ~/.aws.
func s3Env(t *testing.T, s *s3test.Server) {
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("AWS_PROFILE", "")
}

// TestTheDemoRecordedToS3IsAFinishedObjectWithItsURLInTheSummary is the
// README's one-line example: -o s3://bucket/key, credentials and endpoint
// from the environment.
func TestTheDemoRecordedToS3IsAFinishedObjectWithItsURLInTheSummary(t *testing.T) {
	s := s3test.Start(t)
	s.Bucket(t, "rec")
	s3Env(t, s)
	spool := t.TempDir()
	sum := filepath.Join(t.TempDir(), "sum.json")
	var stderr bytes.Buffer
	code := Execute(context.Background(), []string{"--duration", "2s", "-o", "s3://rec/demo/{broadcast}.mp4", "--spool", spool, "--summary", sum, "--progress", "always"},
		Env{Stdout: &bytes.Buffer{}, Stderr: &stderr})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got Summary
	b, _ := os.ReadFile(sum)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	obj := s.Object(t, "rec", "demo/demo.mp4")
	if len(got.Files) != 1 || got.Files[0].URL != "s3://rec/demo/demo.mp4" || got.Files[0].Size != int64(len(obj)) || got.Files[0].Media < 1.9 {
		t.Fatalf("summary files %+v; object of %d bytes", got.Files, len(obj))
	}
	if u := got.Upload; u == nil || u.Objects != 1 || u.BytesUploaded != int64(len(obj)) || u.SpoolBytes != 0 {
		t.Errorf("summary upload %+v", got.Upload)
	}
	if last := lastLine(stderr.String()); !strings.Contains(stderr.String(), "uploaded ") {
		t.Errorf("no upload accounting in the progress line: %q", last)
	}
	p := filepath.Join(t.TempDir(), "demo.mp4")
	os.WriteFile(p, obj, 0o644)
	mediatest.DecodeClean(t, p)
}

// TestAMissingBucketOrRefusedCredentialsExit1BeforeRecording: the bucket
// is checked when the run starts: a clear error, exit 1, no object, and
// nothing in the spool.
func TestAMissingBucketOrRefusedCredentialsExit1BeforeRecording(t *testing.T) {
	s := s3test.Start(t)
	s.Bucket(t, "rec")
	s.User(t, "alice", "alicesecret")
	s3Env(t, s)
	for _, tc := range []struct {
		name, url, access, secret, says string
	}{
		{"missing bucket", "s3://nope/x.mp4", s3test.AccessKey, s3test.SecretKey, "the bucket does not exist"},
		{"refused credentials", "s3://rec/x.mp4", s3test.AccessKey, "wrong", "the store refused the credentials"},
		// Valid credentials of an account the bucket does not allow.
		{"access denied", "s3://rec/x.mp4", "alice", "alicesecret", "the store refused the credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_ACCESS_KEY_ID", tc.access)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tc.secret)
			spool := t.TempDir()
			var stderr bytes.Buffer
			code := Execute(context.Background(), []string{"--duration", "1s", "-o", tc.url, "--spool", spool}, Env{Stdout: &bytes.Buffer{}, Stderr: &stderr})
			if code != ExitRuntime || !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("exit %d, %q; want %d saying %q", code, stderr.String(), ExitRuntime, tc.says)
			}
			if strings.Contains(stderr.String(), "recorded") || strings.Contains(stderr.String(), "writing") {
				t.Errorf("it recorded: %q", stderr.String())
			}
			if left, _ := os.ReadDir(spool); len(left) != 0 {
				t.Errorf("the spool got %d files", len(left))
			}
			if left, _ := os.ReadDir(filepath.Join(s.Dir, "rec")); len(left) != 0 {
				t.Errorf("the bucket got %d objects", len(left))
			}
		})
	}
}

// TestTheCommandArchivesIntoABucketAndCutsFromIt: -f archive -o
// s3://BUCKET/PREFIX, then s3://BUCKET/PREFIX as the source of a cut.
func TestTheCommandArchivesIntoABucketAndCutsFromIt(t *testing.T) {
	s := s3test.Start(t)
	s.Bucket(t, "rec")
	s3Env(t, s)
	run := func(args ...string) {
		t.Helper()
		var stderr bytes.Buffer
		if code := Execute(context.Background(), args, Env{Stdout: &bytes.Buffer{}, Stderr: &stderr}); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
	}
	run("-f", "archive", "-o", "s3://rec/arch", "--demo-loops", "1", "--progress", "never")
	if b := s.Object(t, "rec", "arch/demo/catalog%2Ejson/.info"); !strings.Contains(string(b), `"version":2`) {
		t.Fatalf("the catalog's .info in the bucket: %s", b)
	}
	clip := filepath.Join(t.TempDir(), "clip.mkv")
	run("s3://rec/arch", "-b", "demo", "--from", "1s", "--to", "3s", "-o", clip, "--progress", "never")
	mediatest.DecodeClean(t, clip)
	if d, err := mediatest.Probe(t, clip).Format.Seconds(); err != nil || d < 1.9 || d > 2.1 {
		t.Errorf("the clip from the bucket lasts %v s (%v), want 2 s", d, err)
	}
}

// TestRetentionSweepsTheObjectsUnderTheKeysPrefix: --retention-age with
// an s3:// -o deletes the recordings under the key's prefix older than
// the age (the run's own object and newer ones stay, as do objects
// outside the prefix and files that are not recordings), replacing the
// refusal the flag got before.
func TestRetentionSweepsTheObjectsUnderTheKeysPrefix(t *testing.T) {
	s := s3test.Start(t)
	dir := s.Bucket(t, "rec")
	s3Env(t, s)
	old := time.Now().Add(-72 * time.Hour)
	for _, k := range []string{"ret/old-1.mkv", "ret/sub/old-2.mp4", "ret/notes.txt", "other/old-3.mkv", "ret/new.mkv"} {
		p := filepath.Join(dir, filepath.FromSlash(k))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(k, "new") {
			os.Chtimes(p, old, old)
		}
	}
	var stderr syncBuffer // the sweep may log after Execute returns
	code := Execute(context.Background(), []string{"--duration", "2s", "-o", "s3://rec/ret/{broadcast}-{n}.mkv", "--spool", t.TempDir(), "--retention-age", "2d", "-v"},
		Env{Stdout: &bytes.Buffer{}, Stderr: &stderr})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	// The sweep runs beside the recording, from when the store is open;
	// it logs each deletion once made.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if l := stderr.String(); strings.Contains(l, "s3://rec/ret/old-1.mkv") && strings.Contains(l, "s3://rec/ret/sub/old-2.mp4") {
			break
		}
	}
	for k, want := range map[string]bool{"ret/old-1.mkv": false, "ret/sub/old-2.mp4": false, "ret/notes.txt": true, "other/old-3.mkv": true, "ret/new.mkv": true, "ret/demo-0.mkv": true} {
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(k)))
		if got := err == nil; got != want {
			t.Errorf("%s: kept %v, want %v\n%s", k, got, want, stderr.String())
		}
	}
	if !strings.Contains(stderr.String(), "retention: deleted") || !strings.Contains(stderr.String(), "s3://rec/ret/old-1.mkv") {
		t.Errorf("the deletions are not logged:\n%s", stderr.String())
	}
}

// TestRetentionBySizeDeletesTheOldestObjectsFirst: --retention-size with
// an s3:// -o deletes the oldest recordings under the key's prefix until
// those left fit (the run's own, well under 0.5 MB, counts too), and
// never an object that is not a recording.
func TestRetentionBySizeDeletesTheOldestObjectsFirst(t *testing.T) {
	s := s3test.Start(t)
	dir := s.Bucket(t, "rec")
	s3Env(t, s)
	const mb = 1_000_000
	now := time.Now()
	for k, age := range map[string]time.Duration{"size/a.mkv": 72 * time.Hour, "size/b.mp4": 48 * time.Hour, "size/c.ts": 24 * time.Hour, "size/notes.txt": 96 * time.Hour} {
		p := filepath.Join(dir, filepath.FromSlash(k))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, make([]byte, mb), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, now.Add(-age), now.Add(-age))
	}
	var stderr syncBuffer // the sweep may log after Execute returns
	code := Execute(context.Background(), []string{"--duration", "2s", "-o", "s3://rec/size/{broadcast}-{n}.mkv", "--spool", t.TempDir(), "--retention-size", "2.5MB", "-v"},
		Env{Stdout: &bytes.Buffer{}, Stderr: &stderr})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if strings.Contains(stderr.String(), "s3://rec/size/a.mkv") {
			break
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "size", "demo-0.mkv")); err != nil || fi.Size() >= mb/2 {
		t.Fatalf("the run's own object: %v (the test's sizes assume under 0.5 MB)", err)
	}
	for k, want := range map[string]bool{"size/a.mkv": false, "size/b.mp4": true, "size/c.ts": true, "size/notes.txt": true, "size/demo-0.mkv": true} {
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(k)))
		if got := err == nil; got != want {
			t.Errorf("%s: kept %v, want %v\n%s", k, got, want, stderr.String())
		}
	}
}
