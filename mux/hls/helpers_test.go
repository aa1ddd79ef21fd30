package hls_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/hls"
)

// dirStore is a RangeStore over a directory: each file written to a
// temporary name and renamed, as record's directory output does, and
// media files written in place. The Writer keeps each rendition in one
// media file over it (byte ranges), as over a directory, unless
// hls.Options.SegmentFiles.
type dirStore struct {
	dir    string
	writes []string // names, in the order written
	// early lists the segments a playlist named before they were written.
	early []string
}

// byteRangeRE is an EXT-X-BYTERANGE, or an EXT-X-MAP's BYTERANGE.
var byteRangeRE = regexp.MustCompile(`BYTERANGE[:=]"?(\d+)@(\d+)`)

func (d *dirStore) WriteFile(name string, data []byte) error {
	if strings.HasSuffix(name, ".m3u8") {
		// Every file, and every byte range of a file, the playlist names
		// must be there before it.
		need := int64(0)
		for _, line := range strings.Split(string(data), "\n") {
			if m := byteRangeRE.FindStringSubmatch(line); m != nil {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				off, _ := strconv.ParseInt(m[2], 10, 64)
				need = off + n
			}
			uri := line
			if u, ok := strings.CutPrefix(line, `#EXT-X-MAP:URI="`); ok {
				uri, _, _ = strings.Cut(u, `"`)
			}
			if strings.HasSuffix(uri, ".m4s") || strings.HasSuffix(uri, ".vtt") || strings.HasSuffix(uri, ".m3u8") || strings.HasSuffix(uri, ".mp4") {
				fi, err := os.Stat(filepath.Join(d.dir, uri))
				if err != nil || fi.Size() < need {
					d.early = append(d.early, fmt.Sprintf("%s names %s (%d bytes)", name, uri, need))
				}
				need = 0
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

func (d *dirStore) WriteRange(name string, off int64, data []byte) error {
	f, err := os.OpenFile(filepath.Join(d.dir, name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, off)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (d *dirStore) TruncateRange(name string, size int64) error {
	fi, err := os.Stat(filepath.Join(d.dir, name))
	if err != nil {
		return err
	}
	if fi.Size() < size {
		return fmt.Errorf("%s holds %d bytes, not %d: %w", name, fi.Size(), size, hls.ErrShort)
	}
	return os.Truncate(filepath.Join(d.dir, name), size)
}

func (d *dirStore) ReadRange(name string, off int64, n int) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(d.dir, name))
	if err != nil {
		return nil, err
	}
	if off+int64(n) > int64(len(b)) {
		return nil, hls.ErrShort
	}
	return b[off : off+int64(n)], nil
}

// segmentBytes returns the media segments rendition id's media playlist
// names, by name (and range): the bytes a player reads.
func segmentBytes(t testing.TB, st *dirStore, id string) map[string][]byte {
	t.Helper()
	b, err := st.ReadFile(id + ".m3u8")
	must(t, err)
	out := map[string][]byte{}
	var rng []string
	for _, l := range strings.Split(string(b), "\n") {
		if m := byteRangeRE.FindStringSubmatch(l); m != nil {
			rng = m
		}
		if strings.HasPrefix(l, "#EXT-X-MAP") {
			rng = nil
		}
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		uri := l
		data, err := st.ReadFile(uri)
		must(t, err)
		key := uri
		if rng != nil {
			n, _ := strconv.ParseInt(rng[1], 10, 64)
			off, _ := strconv.ParseInt(rng[2], 10, 64)
			if off+n > int64(len(data)) {
				t.Fatalf("%s names %s@%d, the file holds %d bytes", id, rng[1], off, len(data))
			}
			key, data = fmt.Sprintf("%s@%d+%d", uri, off, n), data[off:off+n]
			rng = nil
		}
		out[key] = data
	}
	return out
}

// layouts are the two package layouts: one media file per rendition
// (byte ranges: a directory's default) and a file per segment
// (hls.Options.SegmentFiles: an object store's).
var layouts = []struct {
	name  string
	files bool
}{{"byte ranges", false}, {"a file per segment", true}}

// overHTTP serves the package over HTTP on loopback for the test and
// returns the URL of its file name: how players read a package, and how
// ffmpeg must read an MPD of byte ranges (ffmpeg 5.1's DASH reader asks
// a segment's range of an HTTP server; from a local file it reads each
// range from the file's start).
func overHTTP(t testing.TB, st *dirStore, name string) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(st.dir)))
	t.Cleanup(srv.Close)
	return srv.URL + "/" + name
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
