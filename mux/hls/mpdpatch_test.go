package hls_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Eyevinn/dash-mpd/mpd"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/hls"
)

// patchCheckStore is a dirStore that takes the changes of an MPD and of a
// media playlist (hls.PatchStore) and holds each to what they claim: the
// version before, changed only within the ranges given and past its end,
// is the new version byte for byte. Every MPD written, whole or changed,
// must read in dash-mpd as the document dash-mpd's own writer makes of
// the same package, every media playlist be what gohlslib writes.
type patchCheckStore struct {
	*dirStore
	t              *testing.T
	w              *hls.Writer
	now            time.Time // the Writer's clock: a boundary later at each MPD
	last           map[string][]byte
	whole, patched int
}

func (s *patchCheckStore) WriteFile(name string, data []byte) error {
	s.t.Helper()
	s.check(name, data)
	if s.watched(name) {
		s.whole++
		s.last[name] = append([]byte(nil), data...)
	}
	return s.dirStore.WriteFile(name, data)
}

// watched: the MPD and the media playlists, which the Writer gives as
// changes.
func (s *patchCheckStore) watched(name string) bool {
	return strings.HasSuffix(name, ".mpd") || strings.HasSuffix(name, ".m3u8") && name != "index.m3u8"
}

func (s *patchCheckStore) WriteFileChanged(name string, data []byte, changed []hls.Span) error {
	s.t.Helper()
	prev, ok := s.last[name]
	if !ok || len(prev) > len(data) || !s.watched(name) {
		s.t.Fatalf("%s: changes to a version of %d bytes (written before: %v), the new one %d bytes", name, len(prev), ok, len(data))
	}
	// The version before, its changes taken from the new one, and what is
	// past its end.
	prev = append(prev, data[len(prev):]...)
	for _, sp := range changed {
		copy(prev[sp.Off:sp.Off+sp.Len], data[sp.Off:sp.Off+sp.Len])
	}
	if !bytes.Equal(prev, data) {
		at := 0
		for at < len(data) && prev[at] == data[at] {
			at++
		}
		s.t.Fatalf("%s: the version before, with the ranges said to change (%v), differs from the new one at byte %d:\n%s", name, changed, at, data)
	}
	s.last[name] = prev
	s.check(name, data)
	s.patched++
	return s.dirStore.WriteFile(name, data)
}

// check fails the test unless an MPD reads in dash-mpd as what dash-mpd's
// writer makes of the package now, and a media playlist is what
// gohlslib's writer makes of it, byte for byte.
func (s *patchCheckStore) check(name string, data []byte) {
	s.t.Helper()
	if !s.watched(name) {
		return
	}
	if id, ok := strings.CutSuffix(name, ".m3u8"); ok {
		want, err := s.w.ReferenceMediaPlaylist(id, bytes.Contains(data, []byte("#EXT-X-ENDLIST")))
		must(s.t, err)
		if !bytes.Equal(data, want) {
			s.t.Fatalf("%s written:\n%s\nwant, as gohlslib writes it:\n%s", name, data, want)
		}
		return
	}
	final := bytes.Contains(data, []byte(`type="static"`))
	ref, err := s.w.ReferenceMPD(final)
	must(s.t, err)
	if err := wellFormed(data); err != nil {
		s.t.Fatalf("the MPD written is not well-formed XML (%v):\n%s", err, data)
	}
	mine, err := mpd.ReadFromString(string(data))
	if err != nil {
		s.t.Fatalf("dash-mpd cannot read the MPD written (%v):\n%s", err, data)
	}
	want, err := mpd.ReadFromString(ref)
	must(s.t, err)
	if !reflect.DeepEqual(mine, want) {
		s.t.Fatalf("the MPD written says other than dash-mpd's writer:\n%s\nwant:\n%s", data, ref)
	}
	s.now = s.now.Add(1234567 * time.Microsecond)
}

// TestAnMPDChangedInPlaceSaysWhatDashMPDSaysAtEveryBoundary: through a
// store that takes changes (a directory), the Writer writes the MPD with
// room and fills a boundary's new lines into it, and appends a media
// playlist's new lines; each version, with the ranges it says changed
// taken from it into the version before, is that version, and reads as
// dash-mpd's (gohlslib's) writer writes the package, for every shape of
// package, over more segments than any room holds.
func TestAnMPDChangedInPlaceSaysWhatDashMPDSaysAtEveryBoundary(t *testing.T) {
	t.Parallel()
	v, a := looped("h264", 0, 3), looped("aac", 1, 3)
	gap := int64(30_000_000)
	outage := mediatest.Interleave(v, a)
	outage = append(outage, mediatest.AfterDiscontinuity(mediatest.Interleave(v.Shift(gap), a.Shift(gap)))...)
	for _, tc := range []struct {
		name   string
		runs   int
		seg    time.Duration
		ins    []mediatest.Input
		frames []mux.Frame
	}{
		{"two video, two audio and subtitles", 1, time.Second, append(withText(), renamed(looped("h264", 4, 3), "small")), nil},
		{"a restart", 2, time.Second, []mediatest.Input{looped("h264", 0, 4), looped("aac", 1, 4)}, nil},
		{"an outage", 1, time.Second, []mediatest.Input{v, a}, outage},
		{"chapters", 1, time.Second, []mediatest.Input{looped("h264", 0, 3), looped("aac", 1, 3)}, nil},
		{"a chapter while recording", 1, time.Second, []mediatest.Input{looped("h264", 0, 3), looped("aac", 1, 3)}, nil},
		{"100 segments, past every room", 1, time.Second, []mediatest.Input{looped("h264", 0, 25), looped("aac", 1, 25)}, nil},
	} {
		for _, layout := range layouts {
			t.Run(layout.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				st := &patchCheckStore{dirStore: newStore(t), t: t, last: map[string][]byte{}, now: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)}
				for range tc.runs {
					st.w = hls.NewWriter(hls.Options{Store: st, SegmentDuration: tc.seg, SegmentFiles: layout.files, Now: func() time.Time { return st.now }})
					if tc.name == "chapters" {
						must(t, st.w.Chapter(0, "opening"))
						must(t, st.w.Chapter(5_000_000, `a "second" one`))
					}
					switch {
					case tc.name == "a chapter while recording":
						// The playlists' tags before the segments change
						// after boundaries written as changes.
						frames := mediatest.Interleave(tc.ins...)
						for _, tr := range mediatest.Tracks(tc.ins...) {
							must(t, st.w.AddTrack(tr))
						}
						for i, f := range frames {
							if i == len(frames)/2 {
								must(t, st.w.Chapter(f.Timestamp, "middle"))
							}
							must(t, st.w.WriteFrame(f))
						}
					case tc.frames != nil:
						mediatest.Write(t, st.w, mediatest.Tracks(tc.ins...), tc.frames)
					default:
						mediatest.Feed(t, st.w, tc.ins...)
					}
					must(t, st.w.Close())
				}
				if st.patched < 3*st.whole {
					t.Fatalf("%d MPDs and media playlists given as changes, %d written whole: want most as changes", st.patched, st.whole)
				}
				t.Logf("%d MPDs and media playlists given as changes, %d written whole", st.patched, st.whole)
			})
		}
	}
}

// wellFormed reports whether data is well-formed XML, as encoding/xml's
// strict decoder reads it: checked before dash-mpd reads an MPD, whose
// own copy of the decoder can loop on a broken document.
func wellFormed(data []byte) error {
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// mpdRangeRE is a SegmentURL of an MPD: its media file and range.
var mpdRangeRE = regexp.MustCompile(`<SegmentURL media="([^"]+)" mediaRange="(\d+)-(\d+)"`)

// liveDirStore is a DirStore that, after each publication (Release),
// reads the MPD and the media playlists as a player would, through their
// names in the directory: the MPD must be the document dash-mpd's writer
// makes of the package, each playlist what gohlslib writes, and every
// range they name must be in its media file.
type liveDirStore struct {
	*hls.DirStore
	t     *testing.T
	dir   string
	w     *hls.Writer
	now   *time.Time // the Writer's clock: a boundary later at each publication
	reads int
}

func (s *liveDirStore) Release() error {
	if err := s.DirStore.Release(); err != nil {
		return err
	}
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(s.dir, "index.mpd"))
	if os.IsNotExist(err) {
		return nil // not yet: the first boundary is not complete
	}
	must(s.t, err)
	ref, err := s.w.ReferenceMPD(bytes.Contains(data, []byte(`type="static"`)))
	must(s.t, err)
	if err := wellFormed(data); err != nil {
		s.t.Fatalf("publication %d: the MPD a reader reads is not well-formed XML (%v):\n%s", s.reads, err, data)
	}
	mine, err := mpd.ReadFromString(string(data))
	if err != nil {
		s.t.Fatalf("publication %d: the MPD a reader reads is no MPD (%v):\n%s", s.reads, err, data)
	}
	want, err := mpd.ReadFromString(ref)
	must(s.t, err)
	if !reflect.DeepEqual(mine, want) {
		s.t.Fatalf("publication %d: the MPD a reader reads says other than the package:\n%s\nwant:\n%s", s.reads, data, ref)
	}
	for _, m := range mpdRangeRE.FindAllStringSubmatch(string(data), -1) {
		last, _ := strconv.ParseInt(m[3], 10, 64)
		fi, err := os.Stat(filepath.Join(s.dir, m[1]))
		if err != nil || fi.Size() <= last {
			s.t.Fatalf("publication %d: the MPD names %s bytes %s-%s, the file holds fewer (%v)", s.reads, m[1], m[2], m[3], err)
		}
	}
	for _, id := range []string{"v0", "a0"} {
		data, err := os.ReadFile(filepath.Join(s.dir, id+".m3u8"))
		must(s.t, err)
		want, err := s.w.ReferenceMediaPlaylist(id, bytes.Contains(data, []byte("#EXT-X-ENDLIST")))
		must(s.t, err)
		if !bytes.Equal(data, want) {
			s.t.Fatalf("publication %d: the %s.m3u8 a reader reads:\n%s\nwant:\n%s", s.reads, id, data, want)
		}
		for _, m := range byteRangeRE.FindAllStringSubmatch(string(data), -1) {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			off, _ := strconv.ParseInt(m[2], 10, 64)
			fi, err := os.Stat(filepath.Join(s.dir, id+".mp4"))
			if err != nil || fi.Size() < off+n {
				s.t.Fatalf("publication %d: %s.m3u8 names %d@%d, %s.mp4 holds fewer (%v)", s.reads, id, n, off, id, err)
			}
		}
	}
	s.reads++
	*s.now = s.now.Add(987654 * time.Microsecond)
	return nil
}

// TestALiveReaderOfADirectoryReadsTheWholeManifestsAfterEveryBoundary records a
// package of 1 s segments into a directory, kills the recording (no
// Close) after 60 boundaries, continues it for 60 more and closes it:
// after every publication the MPD a reader reads through the directory
// is the package's, its rooms filled and renewed many times over, and so
// is each media playlist (its new lines appended); the finished package's
// MPD and playlists decode in ffmpeg.
func TestALiveReaderOfADirectoryReadsTheWholeManifestsAfterEveryBoundary(t *testing.T) {
	t.Parallel()
	for _, layout := range layouts {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ins := []mediatest.Input{looped("h264", 0, 15), looped("aac", 1, 15)}
			frames := mediatest.Interleave(ins...)
			now := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
			opts := hls.Options{SegmentDuration: time.Second, SegmentFiles: layout.files, Now: func() time.Time { return now }}
			open := func() *liveDirStore {
				ds, err := hls.OpenDirStore(dir)
				must(t, err)
				st := &liveDirStore{DirStore: ds, t: t, dir: dir, now: &now}
				opts.Store = st
				st.w = hls.NewWriter(opts)
				for _, tr := range mediatest.Tracks(ins...) {
					must(t, st.w.AddTrack(tr))
				}
				return st
			}
			killed := open()
			for _, f := range frames {
				must(t, killed.w.WriteFrame(f))
			}
			// Killed: neither the Writer nor the store closed; the
			// manifests stay links into .manifests.
			if fi, err := os.Lstat(filepath.Join(dir, "index.mpd")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("after the kill index.mpd is not the link into .manifests (%v)", err)
			}
			whole, patched := killed.w.MPDWhole(), killed.Patched()
			pk := &dirStore{dir: dir}
			closedCopy(t, pk)
			before := map[string]int{}
			for _, id := range []string{"v0", "a0"} {
				before[id] = len(mediatest.Probe(t, pk.path("closed-"+id+".m3u8")).Packets)
			}
			st := open()
			for _, f := range frames {
				must(t, st.w.WriteFrame(f))
			}
			whole += st.w.MPDWhole()
			must(t, st.w.Close())
			patched += st.Patched()
			must(t, st.Close())
			reads := killed.reads + st.reads
			// A file per segment has SegmentTemplate timelines, whose
			// repeated durations take no line: their rooms fill more
			// slowly.
			minWhole := 8
			if layout.files {
				minWhole = 4
			}
			if reads < 110 || whole > reads/4 || whole < minWhole {
				t.Fatalf("%d publications read, %d MPDs written whole: want over 110, the rooms filled %d times or more, most changed in place", reads, whole, minWhole)
			}
			// The spare is written whole after each MPD written whole
			// and at the next publication (it holds the version before).
			if patched < reads-3*whole {
				t.Fatalf("%d of %d publications wrote the MPD into the spare as its changes, want %d or more", patched, reads, reads-3*whole)
			}
			t.Logf("%d publications read, %d MPDs written whole, %d written into the spare as changes", reads, whole, patched)
			b, err := os.ReadFile(filepath.Join(dir, "index.mpd"))
			must(t, err)
			if !bytes.Contains(b, []byte(`type="static"`)) || bytes.Contains(b, bytes.Repeat([]byte(" "), 16)) || bytes.Count(b, []byte("<Period ")) != 2 {
				t.Fatalf("the finished MPD is not a static one of two Periods without room:\n%s", b)
			}
			mediatest.DecodeClean(t, overHTTP(t, pk, "index.mpd"))
			for i, id := range []string{"v0", "a0"} {
				if n, want := len(mediatest.Probe(t, pk.path(id+".m3u8")).Packets), before[id]+len(ins[i].Frames); n != want {
					t.Errorf("%s: %d packets, want %d named before the kill and %d of the continuation", id, n, before[id], len(ins[i].Frames))
				}
			}
		})
	}
}

// TestADirStoreBringsASpareTwoVersionsBehindUpToDateFromTheChanges: the
// spare manifest directory's copy of a name is the version before the
// one showing; a version given as changes must show whole after each
// publication, whatever was changed where, including when the length
// changes (written whole) and when a publication leaves the name out.
func TestADirStoreBringsASpareTwoVersionsBehindUpToDateFromTheChanges(t *testing.T) {
	t.Parallel()
	st, dir := openDirStore(t)
	st.Hold()
	rng := rand.New(rand.NewPCG(1, 2))
	cur := bytes.Repeat([]byte("0123456789abcdef"), 1024) // 16 KB: spans far apart and near
	must(t, st.WriteFile("index.mpd", cur))
	must(t, st.Release())
	for i := range 300 {
		next := append([]byte(nil), cur...)
		var changed []hls.Span
		switch {
		case i%50 == 49:
			// Another length: written whole.
			next = append(next, fmt.Sprintf("<!-- %d -->", i)...)
			must(t, st.WriteFile("index.mpd", next))
		case i%37 == 36:
			// Left out of this publication: the other name changes.
			must(t, st.WriteFile("v0.m3u8", []byte(fmt.Sprint(i))))
			next = cur
		default:
			for range 1 + rng.IntN(4) {
				off := rng.IntN(len(next))
				n := 1 + rng.IntN(min(64, len(next)-off))
				for j := off; j < off+n; j++ {
					next[j] = byte('A' + rng.IntN(26))
				}
				changed = append(changed, hls.Span{Off: off, Len: n})
			}
			must(t, st.WriteFileChanged("index.mpd", next, changed))
		}
		must(t, st.Release())
		if got := readName(t, dir, "index.mpd"); got != string(next) {
			at := 0
			for at < len(got) && at < len(next) && got[at] == next[at] {
				at++
			}
			t.Fatalf("publication %d: index.mpd differs from the version given at byte %d (%d bytes, want %d)", i, at, len(got), len(next))
		}
		cur = next
	}
	// Of 300 publications, 6 change the length and 8 leave the name out:
	// each of those and the next write it whole.
	if got := st.Patched(); got < 300-2*(6+8) {
		t.Errorf("%d versions written into the spare as changes, want %d or more", got, 300-2*(6+8))
	}
	must(t, st.Close())
	if got := readName(t, dir, "index.mpd"); got != string(cur) {
		t.Fatalf("after Close index.mpd is not the last version")
	}
}
