package service_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluenviron/gohlslib/v2/pkg/playlist"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// TestRetentionNeverTouchesAPackageWhileItIsRecorded: an HLS/DASH package
// recorded across two sweeps, every one of its files made older than the
// age bound and the size bound one byte, keeps every file it names (its
// media files, init segments and segments are .mp4 files like any
// recording's); after the recording it plays whole, every frame written
// in it, and then, ended, the size bound takes it whole, directory and
// all.
func TestRetentionNeverTouchesAPackageWhileItIsRecorded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		segmentFiles bool
	}{{"byte ranges", false}, {"a file per segment", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			now := time.Now()
			s, _ := serve(t, service.Options{Root: root, Retention: service.Retention{Age: time.Hour, Size: 1}})
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			r, done := recordAll(t, s, record.Options{Output: mustFiles(t, filepath.Join(root, "{broadcast}", "index.m3u8")),
				HLSSegmentDuration: time.Second, HLSSegmentFiles: tc.segmentFiles}, record.Local(liveDemo(t, "live")), ctx)
			pkg := filepath.Join(root, "live")
			segments := func() int {
				b, _ := os.ReadFile(filepath.Join(pkg, "v0.m3u8"))
				return strings.Count(string(b), "#EXTINF")
			}
			for _, want := range []int{2, 4} {
				waitFor(t, "the package's segments", func() bool { return segments() >= want })
				age(t, pkg, now.Add(-100*time.Hour))
				if n := s.Sweep(now); n != 0 {
					t.Errorf("a sweep at %d segments deleted %d files of the package being recorded", want, n)
				}
			}
			stop()
			<-done
			files := r.Files()
			if len(files) != 1 || files[0].Frames == 0 {
				t.Fatalf("files: %+v", files)
			}
			named := checkPackage(t, pkg)
			mediatest.DecodeClean(t, filepath.Join(pkg, "index.m3u8"))
			var packets int
			for _, id := range []string{"v0", "a0"} {
				packets += len(mediatest.Probe(t, filepath.Join(pkg, id+".m3u8")).Packets)
			}
			if int64(packets) != files[0].Frames {
				t.Errorf("the package's media playlists hold %d packets; %d frames were written", packets, files[0].Frames)
			}
			if len(named) < 4 {
				t.Errorf("the playlists name only %v", named)
			}

			// Ended, it is one unit like a file: the size bound takes it
			// whole, with its directory.
			if n := s.Sweep(now); n < len(named) {
				t.Errorf("the sweep after the end deleted %d files; the package has %d named", n, len(named))
			}
			if left := tree(t, pkg); left != nil {
				t.Errorf("after the package expired, left: %v", left)
			}
		})
	}
}

// TestRetentionExpiresAFinishedPackageWholeByItsNewestFile: a finished
// package is deleted whole once its newest file is older than the age
// bound (a killed one too, with its links and manifest directories), and
// kept whole while any of its files is newer, however old its media
// files are; by size, the oldest package goes whole before a newer one
// loses anything; plain recording files beside them keep their rules.
func TestRetentionExpiresAFinishedPackageWholeByItsNewestFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	now := time.Now()
	for _, name := range []string{"expired", "fresh", "oldest", "killed"} {
		finishedPackage(t, root, name)
	}
	// expired: every file older than the bound.
	age(t, filepath.Join(root, "expired"), now.Add(-72*time.Hour))
	// fresh: old media, and a playlist rewritten an hour ago.
	age(t, filepath.Join(root, "fresh"), now.Add(-72*time.Hour))
	os.Chtimes(filepath.Join(root, "fresh", "v0.m3u8"), now.Add(-time.Hour), now.Add(-time.Hour))
	// oldest: within the age bound, the oldest of the younger ones.
	age(t, filepath.Join(root, "oldest"), now.Add(-20*time.Hour))
	// killed: what kill -9 leaves, the manifests links into .manifests.
	killed := filepath.Join(root, "killed")
	os.Mkdir(filepath.Join(killed, ".manifests"), 0o755)
	os.Mkdir(filepath.Join(killed, ".manifests.tmp"), 0o755)
	for _, name := range []string{"index.m3u8", "v0.m3u8", "a0.m3u8", "index.mpd", "index.state.json"} {
		if err := os.Rename(filepath.Join(killed, name), filepath.Join(killed, ".manifests", name)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(".manifests", name), filepath.Join(killed, name)); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(killed, ".manifests.tmp", "v0.m3u8"), []byte("#EXTM3U\n"), 0o644)
	age(t, killed, now.Add(-50*time.Hour))
	// Plain files: one expired, one not.
	plain := func(name string, a time.Duration) string {
		p := filepath.Join(root, name)
		os.WriteFile(p, make([]byte, 1000), 0o644)
		os.Chtimes(p, now.Add(-a), now.Add(-a))
		return p
	}
	oldFile, newFile := plain("old.mkv", 60*time.Hour), plain("new.mp4", time.Minute)

	sizeOf := func(dir string) int64 {
		var n int64
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				fi, _ := d.Info()
				n += fi.Size()
			}
			return nil
		})
		return n
	}
	keep := sizeOf(filepath.Join(root, "fresh")) + 1000
	s, _ := serve(t, service.Options{Root: root, Retention: service.Retention{Age: 48 * time.Hour, Size: keep + 1000}})
	freshBefore := tree(t, filepath.Join(root, "fresh"))
	if n := s.Sweep(now); n == 0 {
		t.Fatal("nothing deleted")
	}
	for _, gone := range []string{"expired", "killed", "oldest"} {
		if left := tree(t, filepath.Join(root, gone)); left != nil {
			t.Errorf("package %s: left %v", gone, left)
		}
	}
	if _, err := os.Stat(oldFile); err == nil {
		t.Errorf("%s kept", oldFile)
	}
	if _, err := os.Stat(newFile); err != nil {
		t.Errorf("%s: %v", newFile, err)
	}
	if got := tree(t, filepath.Join(root, "fresh")); !slices.Equal(got, freshBefore) {
		t.Errorf("the package written an hour ago holds %v, held %v", got, freshBefore)
	}
	checkPackage(t, filepath.Join(root, "fresh"))
	mediatest.DecodeClean(t, filepath.Join(root, "fresh", "index.m3u8"))
}

// TestRetentionOfAnObjectStoreKeepsARunningPackagesObjects: the objects of
// a package being recorded to an object store (each segment an object,
// every one as old as the bound allows) stay; a finished package's go
// whole once its newest is expired; plain recordings by their own age.
func TestRetentionOfAnObjectStoreKeepsARunningPackagesObjects(t *testing.T) {
	t.Parallel()
	now := time.Now()
	st := &memStore{objects: map[string]service.Kept{}}
	put := func(name string, a time.Duration) {
		st.objects[name] = service.Kept{Name: name, Size: 100, Modified: now.Add(-a)}
	}
	const bucket = "s3://rec/cam/"
	for _, pkg := range []string{"live", "done", "young"} {
		for _, f := range []string{"index.m3u8", "index.mpd", "index.state.json", "v0.m3u8", "v0-init.mp4", "v0-00001.m4s", "a0-init.mp4", "a0-00001.m4s"} {
			put(bucket+pkg+"/"+f, 100*time.Hour)
		}
	}
	put(bucket+"young/v0-00002.m4s", time.Hour)
	put(bucket+"old.mp4", 100*time.Hour)
	put(bucket+"new.mp4", time.Hour)
	opts := record.Options{}
	s, _ := serve(t, service.Options{Root: t.TempDir(), Retention: service.Retention{Age: 48 * time.Hour, Store: st}})
	s.Hooks(&opts)
	// The package "live" is being recorded: its main playlist is open.
	opts.OnFile(record.FileEvent{File: record.FileInfo{Path: bucket + "live/index.m3u8", Format: string(record.HLS)}})
	if n := s.Sweep(now); n != 9 {
		t.Errorf("deleted %d objects, want 9 (the finished package's 8 and old.mp4)", n)
	}
	for name := range st.objects {
		if strings.HasPrefix(name, bucket+"done/") || name == bucket+"old.mp4" {
			t.Errorf("%s kept", name)
		}
	}
	for _, pkg := range []string{"live", "young"} {
		if n := st.count(bucket + pkg + "/"); n < 8 {
			t.Errorf("package %s: %d objects left of 8 or more", pkg, n)
		}
	}
	// Finished, the package expires whole.
	opts.OnFile(record.FileEvent{Finished: true, File: record.FileInfo{Path: bucket + "live/index.m3u8", Format: string(record.HLS)}})
	if n := s.Sweep(now); n != 8 {
		t.Errorf("after the end: deleted %d objects, want the package's 8", n)
	}
	if n := st.count(bucket + "live/"); n != 0 {
		t.Errorf("%d objects of the ended package left", n)
	}
}

// memStore is a RetentionStore of objects held in memory.
type memStore struct {
	mu      sync.Mutex
	objects map[string]service.Kept
}

func (m *memStore) List(context.Context) ([]service.Kept, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []service.Kept
	for _, k := range m.objects {
		out = append(out, k)
	}
	return out, nil
}

func (m *memStore) Delete(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, name)
	return nil
}

func (m *memStore) count(prefix string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for name := range m.objects {
		if strings.HasPrefix(name, prefix) {
			n++
		}
	}
	return n
}

// finishedPackage records the demo once through, fast, into the HLS
// package root/name.
func finishedPackage(t *testing.T, root, name string) {
	t.Helper()
	bc := model.NewBroadcast(name)
	if err := demo.Publish(context.Background(), bc, demo.Options{Loops: 1, KeepGroups: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	r, err := record.New(record.Options{Output: mustFiles(t, filepath.Join(root, "{broadcast}", "index.m3u8")), Delay: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Record(context.Background(), record.Local(bc), name); err != nil {
		t.Fatal(err)
	}
}

// age sets the modification time of every file under dir (not following
// links; a file replaced meanwhile is left as it is).
func age(t *testing.T, dir string, at time.Time) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			os.Chtimes(p, at, at)
		}
		return nil
	})
}

// tree lists what is under dir (relative names, links and directories
// too); nil when dir does not exist.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	out := []string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// checkPackage reads the package in dir as a player does: the
// multivariant playlist, each media playlist it names, and every init
// segment and segment they name, each byte range within its file. It
// returns the files named.
func checkPackage(t *testing.T, dir string) []string {
	t.Helper()
	return checkPackageNamed(t, dir, "index.m3u8")
}

// checkPackageNamed is checkPackage of the package whose multivariant
// playlist is dir/main.
func checkPackageNamed(t *testing.T, dir, main string) []string {
	t.Helper()
	read := func(name string) playlist.Playlist {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("the package's %s: %v", name, err)
		}
		pl, err := playlist.Unmarshal(b)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, b)
		}
		return pl
	}
	mv, ok := read(main).(*playlist.Multivariant)
	if !ok {
		t.Fatalf("%s is not a multivariant playlist", main)
	}
	var media []string
	for _, v := range mv.Variants {
		media = append(media, v.URI)
	}
	for _, r := range mv.Renditions {
		if r.URI != nil {
			media = append(media, *r.URI)
		}
	}
	named := map[string]bool{}
	check := func(uri string, length, start *uint64, next map[string]uint64) {
		named[uri] = true
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(path.Clean(uri))))
		if err != nil {
			t.Errorf("named, missing: %v", err)
			return
		}
		if length == nil {
			return
		}
		off := next[uri]
		if start != nil {
			off = *start
		}
		if end := off + *length; uint64(fi.Size()) < end {
			t.Errorf("%s holds %d bytes; a playlist names %d@%d", uri, fi.Size(), *length, off)
		}
		next[uri] = off + *length
	}
	for _, m := range media {
		named[m] = true
		mp, ok := read(m).(*playlist.Media)
		if !ok {
			t.Fatalf("%s is not a media playlist", m)
		}
		if len(mp.Segments) == 0 {
			t.Errorf("%s names no segment", m)
		}
		next := map[string]uint64{}
		if mp.Map != nil {
			check(mp.Map.URI, mp.Map.ByteRangeLength, mp.Map.ByteRangeStart, next)
		}
		for _, sg := range mp.Segments {
			check(sg.URI, sg.ByteRangeLength, sg.ByteRangeStart, next)
		}
	}
	var out []string
	for n := range named {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestRetentionJudgesAPackageAndTheRecordingsBesideItEachOnTheirOwn: a
// package whose state and playlists are written beside other recordings
// (in the root, or in a directory the recordings share) is its own files,
// those its names say are its: an expired package goes without the fresh
// recording beside it, an expired recording goes without the fresh or
// running package beside it, and a file that is no recording (notes.txt)
// is never deleted with a package.
func TestRetentionJudgesAPackageAndTheRecordingsBesideItEachOnTheirOwn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		sub  string // the directory shared under the root ("" the root)
		// pkgAge and recAge are the ages of the package's files and the
		// recording's.
		pkgAge, recAge time.Duration
		running        bool // the package is being recorded
		segmentFiles   bool // a file per segment
		pkgGone        bool // the package is deleted, else kept whole
		recGone        bool
	}{
		{name: "an expired package in the root beside a fresh recording", pkgAge: 72 * time.Hour, recAge: time.Minute, pkgGone: true},
		{name: "a fresh package in the root beside an expired recording", pkgAge: time.Minute, recAge: 72 * time.Hour, recGone: true},
		{name: "an expired package in a shared directory beside a fresh recording", sub: "cam", pkgAge: 72 * time.Hour, recAge: time.Minute, pkgGone: true},
		{name: "an expired package of a file per segment beside a fresh recording", sub: "cam", pkgAge: 72 * time.Hour, recAge: time.Minute, segmentFiles: true, pkgGone: true},
		{name: "an expired package beside an expired recording and a note", pkgAge: 72 * time.Hour, recAge: 72 * time.Hour, pkgGone: true, recGone: true},
		{name: "an expired recording beside a package being recorded", sub: "cam", pkgAge: 72 * time.Hour, recAge: 72 * time.Hour, running: true, recGone: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := filepath.Join(root, tc.sub)
			now := time.Now()
			finishedPackageAt(t, filepath.Join(dir, "show.m3u8"), "show", tc.segmentFiles)
			pkgFiles := tree(t, dir)
			age(t, dir, now.Add(-tc.pkgAge))
			rec := filepath.Join(dir, "show-20260101T000000Z.mkv")
			notes := filepath.Join(dir, "notes.txt")
			for _, p := range []string{rec, notes} {
				if err := os.WriteFile(p, make([]byte, 1000), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			os.Chtimes(rec, now.Add(-tc.recAge), now.Add(-tc.recAge))
			os.Chtimes(notes, now.Add(-100*time.Hour), now.Add(-100*time.Hour))
			opts := record.Options{}
			s, _ := serve(t, service.Options{Root: root, Retention: service.Retention{Age: 48 * time.Hour}})
			s.Hooks(&opts)
			if tc.running {
				opts.OnFile(record.FileEvent{File: record.FileInfo{Path: filepath.Join(dir, "show.m3u8"), Format: string(record.HLS)}})
			}
			s.Sweep(now)
			if _, err := os.Stat(rec); tc.recGone != errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the recording beside the package: %v; want deleted %v", err, tc.recGone)
			}
			if _, err := os.Stat(notes); err != nil {
				t.Errorf("notes.txt, no recording, was deleted with the package: %v", err)
			}
			left := slices.DeleteFunc(tree(t, dir), func(n string) bool {
				return n == filepath.Base(rec) || n == filepath.Base(notes)
			})
			if tc.pkgGone {
				if len(left) != 0 {
					t.Errorf("the expired package left %v", left)
				}
				return
			}
			if !slices.Equal(left, pkgFiles) {
				t.Errorf("the package kept %v of %v", left, pkgFiles)
			}
			checkPackageNamed(t, dir, "show.m3u8")
			mediatest.DecodeClean(t, filepath.Join(dir, "show.m3u8"))
		})
	}
}

// finishedPackageAt records the demo once through, fast, into the HLS
// package whose multivariant playlist is playlist.
func finishedPackageAt(t *testing.T, playlist, name string, segmentFiles bool) {
	t.Helper()
	bc := model.NewBroadcast(name)
	if err := demo.Publish(context.Background(), bc, demo.Options{Loops: 1, KeepGroups: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	r, err := record.New(record.Options{Output: mustFiles(t, playlist), Delay: time.Hour, Logger: quiet, HLSSegmentFiles: segmentFiles})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Record(context.Background(), record.Local(bc), name); err != nil {
		t.Fatal(err)
	}
}
