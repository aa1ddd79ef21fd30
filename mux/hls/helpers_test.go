package hls_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
)

// dirStore is a Store over a directory: each file written to a temporary
// name and renamed, as record's directory output does.
type dirStore struct {
	dir    string
	writes []string // names, in the order written
	// early lists the segments a playlist named before they were written.
	early []string
}

func (d *dirStore) WriteFile(name string, data []byte) error {
	if strings.HasSuffix(name, ".m3u8") {
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasSuffix(line, ".m4s") || strings.HasSuffix(line, ".vtt") || strings.HasSuffix(line, ".m3u8") {
				if _, err := os.Stat(filepath.Join(d.dir, line)); err != nil {
					d.early = append(d.early, name+" names "+line)
				}
			}
		}
	}
	tmp := filepath.Join(d.dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	d.writes = append(d.writes, name)
	return os.Rename(tmp, filepath.Join(d.dir, name))
}

func (d *dirStore) ReadFile(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(d.dir, name))
}

func (d *dirStore) path(name string) string { return filepath.Join(d.dir, name) }

func newStore(t testing.TB) *dirStore { return &dirStore{dir: t.TempDir()} }

// looped returns sample name as track id, played n times back to back.
func looped(name string, id, n int) mediatest.Input {
	s := mediatest.LoadSample(name)
	one := mediatest.InputOf(s, id)
	d := s.Duration()
	out := mediatest.Input{Track: one.Track}
	for i := range n {
		out.Frames = append(out.Frames, one.Shift(int64(i)*d).Frames...)
	}
	return out
}

// renamed returns in with its track called name.
func renamed(in mediatest.Input, name string) mediatest.Input {
	in.Track.Name = name
	return in
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var _ = fmt.Sprint
var _ mux.Track

// closedCopy writes beside the package a copy of its multivariant playlist
// and of every media playlist with EXT-X-ENDLIST added, and returns the
// copy's path: what a player that reads an EVENT package to its end plays
// (ffmpeg would wait for an EVENT playlist to grow).
func closedCopy(t testing.TB, d *dirStore) string {
	t.Helper()
	ents, err := os.ReadDir(d.dir)
	must(t, err)
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".m3u8") || strings.HasPrefix(name, "closed-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d.dir, name))
		must(t, err)
		text := strings.ReplaceAll(string(b), "\n", "\n")
		if strings.Contains(text, "#EXT-X-TARGETDURATION") {
			text += "#EXT-X-ENDLIST\n"
		} else {
			var lines []string
			for _, l := range strings.Split(text, "\n") {
				if strings.HasSuffix(l, ".m3u8") && !strings.HasPrefix(l, "#") {
					l = "closed-" + l
				}
				lines = append(lines, strings.ReplaceAll(l, `URI="`, `URI="closed-`))
			}
			text = strings.Join(lines, "\n")
		}
		must(t, os.WriteFile(filepath.Join(d.dir, "closed-"+name), []byte(text), 0o644))
	}
	return filepath.Join(d.dir, "closed-index.m3u8")
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

var errNotExist = fs.ErrNotExist
