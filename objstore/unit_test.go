package objstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/mp4"
)

func TestRetryWaitDoublesToFiveSecondsWithJitterInTheUpperHalf(t *testing.T) {
	for _, tc := range []struct {
		attempt  int
		rnd      float64
		min, max time.Duration
	}{
		{0, 0, 100 * time.Millisecond, 100 * time.Millisecond},
		{0, 0.999, 100 * time.Millisecond, 200 * time.Millisecond},
		{1, 0, 200 * time.Millisecond, 200 * time.Millisecond},
		{3, 0.5, 800 * time.Millisecond, 1600 * time.Millisecond},
		{10, 0, 2500 * time.Millisecond, 2500 * time.Millisecond},
		{100, 0.999, 2500 * time.Millisecond, 5 * time.Second},
	} {
		got := retryWait(tc.attempt, tc.rnd)
		if got < tc.min || got > tc.max {
			t.Errorf("retryWait(%d, %v) = %v, want in [%v, %v]", tc.attempt, tc.rnd, got, tc.min, tc.max)
		}
	}
}

func TestOnlyClientErrorsArePermanent(t *testing.T) {
	for _, tc := range []struct {
		e         StoreError
		permanent bool
		is        error
	}{
		{StoreError{Status: 0}, false, nil},
		{StoreError{Status: 500, Code: "InternalError"}, false, nil},
		{StoreError{Status: 503, Code: "SlowDown"}, false, nil},
		{StoreError{Status: 429}, false, nil},
		{StoreError{Status: 400, Code: "RequestTimeout"}, false, nil},
		{StoreError{Status: 404, Code: "NoSuchBucket"}, true, ErrNoBucket},
		{StoreError{Op: "check bucket", Status: 404}, true, ErrNoBucket},
		{StoreError{Status: 403, Code: "AccessDenied"}, true, ErrAccessDenied},
		{StoreError{Status: 403, Code: "SignatureDoesNotMatch"}, true, ErrAccessDenied},
		{StoreError{Status: 404, Code: "NoSuchUpload"}, true, nil},
	} {
		e := tc.e
		e.Err = errors.New("x")
		if e.Permanent() != tc.permanent {
			t.Errorf("%+v: permanent %v, want %v", tc.e, e.Permanent(), tc.permanent)
		}
		if tc.is != nil && !errors.Is(&e, tc.is) {
			t.Errorf("%+v is not %v", tc.e, tc.is)
		}
	}
}

func TestParseURLTakesBucketKeyAndQueryOverrides(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Location
		err  bool
	}{
		{in: "s3://rec/{broadcast}-{time}-{n}.mp4", want: Location{Scheme: "s3", given: "s3", Bucket: "rec", Key: "{broadcast}-{time}-{n}.mp4"}},
		{in: "s3://rec/a/b.mkv?endpoint=http://127.0.0.1:9000&region=eu-west-1&path_style=false",
			want: Location{Scheme: "s3", given: "s3", Bucket: "rec", Key: "a/b.mkv", Endpoint: "http://127.0.0.1:9000", Region: "eu-west-1", PathStyle: "false"}},
		{in: "s3://rec/x.ts?s3ForcePathStyle=true", want: Location{Scheme: "s3", given: "s3", Bucket: "rec", Key: "x.ts", PathStyle: "true"}},
		{in: "gs://rec/a/{n}.mp4", want: Location{Scheme: "gs", given: "gs", Bucket: "rec", Key: "a/{n}.mp4"}},
		{in: "gs://rec/x.mp4?endpoint=http://127.0.0.1:4443", want: Location{Scheme: "gs", given: "gs", Bucket: "rec", Key: "x.mp4", Endpoint: "http://127.0.0.1:4443"}},
		{in: "az://rec/x.mkv", want: Location{Scheme: "az", given: "az", Bucket: "rec", Key: "x.mkv"}},
		{in: "azblob://rec/x.mkv?endpoint=https://acct.blob.core.windows.net/", want: Location{Scheme: "az", given: "azblob", Bucket: "rec", Key: "x.mkv", Endpoint: "https://acct.blob.core.windows.net/"}},
		{in: "gs://rec/x.mp4?region=eu", err: true},
		{in: "az://rec/x.mp4?path_style=true", err: true},
		{in: "gs://rec", err: true},
		{in: "ftp://rec/x.mp4", err: true},
		{in: "s3://rec", err: true},
		{in: "s3://rec/", err: true},
		{in: "s3:///x.mp4", err: true},
		{in: "s3://rec/x.mp4?endpoint=ftp://h", err: true},
		{in: "s3://rec/x.mp4?path_style=maybe", err: true},
		{in: "s3://rec/x.mp4?secret=1", err: true},
		{in: "s3://rec/{nope}.mp4", err: true},
	} {
		got, err := ParseURL(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestBodyReadsItsPiecesInOrderAndSeeks(t *testing.T) {
	b, err := newBody(bytes.NewReader([]byte("head")), io.NewSectionReader(bytes.NewReader([]byte("xxmediayy")), 2, 5), bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := io.ReadAll(b)
		if err != nil || string(got) != "headmedia" || b.size != 9 {
			t.Fatalf("read %q, %v (size %d)", got, err, b.size)
		}
		if _, err := b.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
	}
	b.Seek(3, io.SeekStart)
	got, _ := io.ReadAll(io.LimitReader(b, 3))
	if string(got) != "dme" {
		t.Errorf("from 3: %q", got)
	}
	if _, err := b.Seek(10, io.SeekStart); err == nil {
		t.Error("seek past the end accepted")
	}
}

// TestAKilledMP4EndsAtItsLastWholeFragment: a recorder killed while it
// writes a fragment leaves its moof whole and its mdat cut (a write to the
// spool can be cut short by SIGKILL); the recovered object ends before that
// moof and decodes clean, and keeps every whole fragment before it.
func TestAKilledMP4EndsAtItsLastWholeFragment(t *testing.T) {
	var buf bytes.Buffer
	w := mp4.NewWriter(&buf, mp4.Options{})
	mediatest.Feed(t, w, mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	file := buf.Bytes()
	var moofs []int64 // where each moof begins
	for off := int64(0); off+8 <= int64(len(file)); {
		n := int64(binary.BigEndian.Uint32(file[off:]))
		if string(file[off+4:off+8]) == "moof" {
			moofs = append(moofs, off)
		}
		off += n
	}
	if len(moofs) < 3 {
		t.Fatalf("%d fragments; the test needs 3", len(moofs))
	}
	last := moofs[len(moofs)-1]
	lastMdat := last + int64(binary.BigEndian.Uint32(file[last:]))
	for _, tc := range []struct {
		name string
		size int64
	}{
		{"inside the last mdat", lastMdat + (int64(len(file))-lastMdat)/2},
		{"right after the last moof", lastMdat},
		{"inside the last mdat's header", lastMdat + 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := wholeBoxes(bytes.NewReader(file[:tc.size]), 0, tc.size)
			if got != last {
				t.Errorf("the object ends at %d, want %d (before the last moof)", got, last)
			}
			path := filepath.Join(t.TempDir(), "killed.mp4")
			if err := os.WriteFile(path, file[:got], 0o644); err != nil {
				t.Fatal(err)
			}
			mediatest.DecodeClean(t, path)
		})
	}
}

func TestWholeBoxesEndsAtTheLastCompleteTopLevelBox(t *testing.T) {
	box := func(typ string, n int) []byte {
		b := make([]byte, n)
		b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		copy(b[4:], typ)
		return b
	}
	large := make([]byte, 40)
	copy(large, []byte{0, 0, 0, 1, 'm', 'd', 'a', 't', 0, 0, 0, 0, 0, 0, 0, 40})
	file := append(append(append(box("ftyp", 16), box("moof", 24)...), box("mdat", 100)...), large...)
	for _, tc := range []struct {
		from, size, want int64
	}{
		{0, int64(len(file)), int64(len(file))},
		{0, 16 + 24 + 60, 16},         // the mdat is cut: its moof goes with it
		{0, 16 + 24, 16},              // a moof without its mdat
		{0, 16 + 24 + 4, 16},          // a moof and part of its mdat's header
		{16, 16 + 24 + 100, 140},      // a whole fragment
		{16, 16 + 24 + 100 + 20, 140}, // the 64-bit mdat is cut
		{16, 16 + 24 + 100 + 12, 140}, // even its header
		{0, 3, 0},                     // not even a header
		{16, int64(len(file)), int64(len(file))},
	} {
		if got := wholeBoxes(bytes.NewReader(file[:tc.size]), tc.from, tc.size); got != tc.want {
			t.Errorf("from %d of %d bytes: %d, want %d", tc.from, tc.size, got, tc.want)
		}
	}
}
