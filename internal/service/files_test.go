package service_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/record"
)

// get fetches url with the extra headers given (name, value, ...) and
// returns the status, the body and the response's headers.
func get(t testing.TB, url string, headers ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] != "" {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// TestFilesHandsARevalidatingPlayerAFileRewrittenInTheSameSecond: a
// player fetches a file under /files/, the file is replaced or grows
// within the same second (its modification time unchanged, as a rewrite
// within the second looks to a Last-Modified validator), and the player
// revalidates as Chromium does (If-None-Match and If-Modified-Since): it
// must get the new bytes, and an unchanged file must still be a 304. A
// manifest is served Cache-Control: no-cache, so a player revalidates it
// on every reload. Before /files/ named each response's bytes, the
// rewritten playlist was answered 304 and the player kept the stale copy
// for good (a live package never reached its ENDLIST).
func TestFilesHandsARevalidatingPlayerAFileRewrittenInTheSameSecond(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, base := serve(t, service.Options{Root: root})
	for _, tc := range []struct {
		name, first, then string
		manifest          bool
	}{
		{"pkg/v0.m3u8", "#EXTM3U\n#EXTINF:2,\nv0.mp4\n", "#EXTM3U\n#EXTINF:2,\nv0.mp4\n#EXT-X-ENDLIST\n", true},
		{"pkg/index.mpd", `<MPD type="dynamic"><S t="0" d="2"/></MPD>`, `<MPD type="static"><S t="0" d="2"/></MPD>`, true},
		{"pkg/a.m3u8", "#EXTM3U\n#EXTINF:2,\na0.mp4\n", "#EXTM3U\n#EXTINF:2,\na1.mp4\n", true}, // same size
		{"pkg/v0.mp4", "init+segment 1", "init+segment 1+segment 2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(root, filepath.FromSlash(tc.name))
			must(t, os.MkdirAll(filepath.Dir(path), 0o755))
			must(t, os.WriteFile(path, []byte(tc.first), 0o644))
			fi, err := os.Stat(path)
			must(t, err)
			url := base + "/files/" + tc.name
			code, body, h := get(t, url)
			if code != http.StatusOK || body != tc.first {
				t.Fatalf("first fetch: %d %q: want 200 and the file", code, body)
			}
			if h.Get("ETag") == "" {
				t.Errorf("no ETag on %s: headers %v", tc.name, h)
			}
			if cc := h.Get("Cache-Control"); tc.manifest != (cc == "no-cache") {
				t.Errorf("Cache-Control %q on %s", cc, tc.name)
			}
			revalidate := func() (int, string) {
				code, body, _ := get(t, url, "If-None-Match", h.Get("ETag"), "If-Modified-Since", h.Get("Last-Modified"))
				return code, body
			}
			if code, _ := revalidate(); code != http.StatusNotModified {
				t.Errorf("revalidating the unchanged file: %d, want 304", code)
			}
			must(t, os.WriteFile(path, []byte(tc.then), 0o644))
			must(t, os.Chtimes(path, fi.ModTime(), fi.ModTime()))
			if code, body := revalidate(); code != http.StatusOK || body != tc.then {
				t.Errorf("revalidating the file rewritten in the same second: %d %q (the player keeps %q), want 200 and %q", code, body, tc.first, tc.then)
			}
		})
	}
}

// must fails the test on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestFilesServesNothingOutsideTheRootNorAHiddenName: /files/ resolves
// every name inside the root. A package's manifests, links into its
// .manifests directory while it is recorded, are served through the
// links; a name leading out of the root (by "..", encoded or not, or by a
// symbolic link, relative or absolute, to a file or a directory outside)
// is a 404, and so is a hidden name (the .manifests directories, a spare
// written in place). With a token, /files/ needs it.
func TestFilesServesNothingOutsideTheRootNorAHiddenName(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	outside := filepath.Join(parent, "outside")
	for _, d := range []string{filepath.Join(root, "pkg", ".manifests"), filepath.Join(root, "pkg", ".manifests.tmp"), outside} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(outside, "secret.mp4"), []byte("secret"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "pkg", ".manifests", "index.m3u8"), []byte("#EXTM3U\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "pkg", ".manifests.tmp", "index.m3u8"), []byte("#EXTM3"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "pkg", "v0.mp4"), []byte("media"), 0o644))
	for link, to := range map[string]string{
		"pkg/index.m3u8":   ".manifests/index.m3u8", // as DirStore links a recorded package
		"pkg/relative.mp4": "../../outside/secret.mp4",
		"pkg/absolute.mp4": filepath.Join(outside, "secret.mp4"),
		"pkg/out":          "../../outside",
		"pkg/up.m3u8":      "../pkg/.manifests/index.m3u8",
	} {
		must(t, os.Symlink(to, filepath.Join(root, filepath.FromSlash(link))))
	}
	const token = "s3cret-token"
	_, base := serve(t, service.Options{Root: root, Token: token})
	bearer := "Bearer " + token
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/files/pkg/index.m3u8", 200, "#EXTM3U\n"},
		{"/files/pkg/up.m3u8", 200, "#EXTM3U\n"},
		{"/files/pkg/v0.mp4", 200, "media"},
		{"/files/pkg/relative.mp4", 404, ""},
		{"/files/pkg/absolute.mp4", 404, ""},
		{"/files/pkg/out/secret.mp4", 404, ""},
		{"/files/pkg/.manifests/index.m3u8", 404, ""},
		{"/files/pkg/.manifests.tmp/index.m3u8", 404, ""},
		{"/files/pkg/", 404, ""},
		{"/files/pkg", 404, ""},
		{"/files/../outside/secret.mp4", 404, ""},
		{"/files/pkg/..%2f..%2foutside%2fsecret.mp4", 404, ""},
		{"/files/%2e%2e/outside/secret.mp4", 404, ""},
	} {
		code, body, _ := get(t, base+tc.path, "Authorization", bearer)
		if code != tc.code || (tc.code == 200 && body != tc.body) || strings.Contains(body, "secret") {
			t.Errorf("GET %s: %d %q; want %d %q", tc.path, code, body, tc.code, tc.body)
		}
	}
	if code, body, _ := get(t, base+"/files/pkg/index.m3u8"); code != http.StatusUnauthorized || strings.Contains(body, "EXTM3U") {
		t.Errorf("GET /files/ without the token: %d %q; want 401", code, body)
	}
}

// TestFilesServesAPackageWhileItIsRecordedAndNoOtherFileBeingWritten:
// a package (HLS/DASH) plays while it is recorded, so /files/ serves its
// playlists then (each new version to a revalidating player), while an
// MP4 being written stays hidden until it is finished.
func TestFilesServesAPackageWhileItIsRecordedAndNoOtherFileBeingWritten(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s, base := serve(t, service.Options{Root: root})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	r, done := recordAll(t, s, record.Options{Output: mustFiles(t, filepath.Join(root, "{broadcast}", "index.m3u8")),
		HLSSegmentDuration: time.Second, Duration: 4 * time.Second}, record.Local(liveDemo(t, "live")), ctx)
	_, mp4Done := recordAll(t, s, record.Options{Output: mustFiles(t, filepath.Join(root, "{broadcast}.mp4"))},
		record.Local(liveDemo(t, "file")), ctx)
	waitFor(t, "the package's second segment", func() bool {
		b, err := os.ReadFile(filepath.Join(root, "live", "v0.m3u8"))
		return err == nil && strings.Count(string(b), "#EXTINF") >= 2
	})
	code, first, h := get(t, base+"/files/live/v0.m3u8")
	if code != http.StatusOK || strings.Contains(first, "#EXT-X-ENDLIST") || h.Get("Cache-Control") != "no-cache" {
		t.Fatalf("the live variant playlist: %d, %v\n%s", code, h, first)
	}
	if code, body, _ := get(t, base+"/files/live/index.m3u8"); code != http.StatusOK || !strings.Contains(body, "v0.m3u8") {
		t.Errorf("the live package's multivariant playlist: %d\n%s", code, body)
	}
	if _, err := os.Stat(filepath.Join(root, "file.mp4")); err != nil {
		t.Fatalf("the MP4 being written: %v", err)
	}
	if code, _, _ := get(t, base+"/files/file.mp4"); code != http.StatusNotFound {
		t.Errorf("an MP4 being written: %d, want 404", code)
	}
	// Revalidate as the player does until the package ends.
	etag, last := h.Get("ETag"), first
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(last, "#EXT-X-ENDLIST") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		code, body, h := get(t, base+"/files/live/v0.m3u8", "If-None-Match", etag)
		switch code {
		case http.StatusOK:
			if len(body) <= len(last) && body != last {
				t.Fatalf("the playlist shrank:\n%s\nafter\n%s", body, last)
			}
			etag, last = h.Get("ETag"), body
		case http.StatusNotModified:
		default:
			t.Fatalf("revalidating the live playlist: %d", code)
		}
	}
	if !strings.Contains(last, "#EXT-X-ENDLIST") || strings.Count(last, "#EXTINF") <= strings.Count(first, "#EXTINF") {
		t.Fatalf("the player never got the package's end; its last playlist:\n%s", last)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(r.Files()) != 1 {
		t.Fatalf("files: %+v", r.Files())
	}
	stop()
	<-mp4Done
	waitFor(t, "the finished MP4", func() bool { c, _, _ := get(t, base+"/files/file.mp4"); return c == http.StatusOK })
}
