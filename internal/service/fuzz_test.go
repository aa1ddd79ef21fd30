package service

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/record"
)

// FuzzStartRequest feeds untrusted bodies to the start operation's checks:
// none panics, a body that is not a valid request is refused with a 4xx
// and a message, and an accepted one writes under the root only.
func FuzzStartRequest(f *testing.F) {
	for _, seed := range []string{
		`{"url": "https://relay.example/anon", "broadcast": "b", "output": "{broadcast}-{n}.mkv"}`,
		`{"url": "moql://h:1/x", "broadcast": "a/b", "output": "x/{time}.mp4", "segment": "10s", "duration": "1h"}`,
		`{"url": "https://h/", "broadcast": "b", "output": "../../etc/{broadcast}.mkv"}`,
		`{"url": "https://h/", "broadcast": "b", "output": "a/../../{n}.ts", "format": "ts"}`,
		`{"url": "ftp://h/", "broadcast": "b", "output": "x.flv", "video": ["v"], "webhooks": ["http://x/"]}`,
		`{"url": "https://h/", "broadcast": "b", "output": "/abs/{n}.mkv"}`,
		`[]`, `null`, `{"output": 5}`, `{"colour": "red"}`,
	} {
		f.Add(seed)
	}
	root := f.TempDir()
	s, err := New(Options{Root: root, Logger: slog.New(slog.DiscardHandler), Base: record.Options{Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/recordings", strings.NewReader(body))
		var req StartRequest
		err := decodeStrict(r, &req)
		if err == nil {
			var opts record.Options
			opts, err = s.startOptions(req)
			if err == nil {
				tmpl, ok := opts.Output.(record.TemplatedOutput)
				if !ok || !within(s.opts.Root, tmpl.Template().Dir()) {
					t.Fatalf("accepted %q writing outside the root", body)
				}
				for _, name := range []string{"../x", "a/../../b", "..", "/etc/passwd", "\x00"} {
					if p, err := tmpl.Template().Expand(name, 3, fixedTime); err == nil && !within(s.opts.Root, p) {
						t.Fatalf("%q with broadcast %q expands to %s, outside the root", body, name, p)
					}
				}
				return
			}
		}
		var re *requestError
		if !asRequestError(err, &re) || re.code/100 != 4 || re.msg == "" {
			t.Fatalf("%q: %v is not a 4xx with a message", body, err)
		}
		if b, _ := json.Marshal(apiError{Error: re.msg}); len(b) == 0 {
			t.Fatal("unencodable message")
		}
		if entries, _ := os.ReadDir(root); len(entries) > 0 {
			t.Fatalf("%q created %s", body, filepath.Join(root, entries[0].Name()))
		}
	})
}

var fixedTime = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func asRequestError(err error, re **requestError) bool { return errors.As(err, re) }
