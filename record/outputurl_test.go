package record

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestURLSchemeTellsURLsFromPaths(t *testing.T) {
	for _, tc := range []struct{ in, scheme string }{
		{"rec/x.mkv", ""},
		{"/abs/x.mkv", ""},
		{"a:b.mkv", ""},
		{"rec/a://b.mkv", ""},
		{"://x", ""},
		{"1s3://b/k", ""},
		{"s3://bucket/rec/{n}.mp4", "s3"},
		{"S3://bucket/k.mp4", "s3"},
		{"file:///tmp/x.mkv", "file"},
		{"azblob://c/k.mkv", "azblob"},
		{"gs+x.y-z://b/k", "gs+x.y-z"},
	} {
		if got := URLScheme(tc.in); got != tc.scheme {
			t.Errorf("URLScheme(%q) = %q, want %q", tc.in, got, tc.scheme)
		}
	}
}

func TestLocalPathTakesPathsAndFileURLsAndRefusesOtherSchemes(t *testing.T) {
	for _, tc := range []struct {
		in, path string
		err      bool
	}{
		{"rec/{broadcast}.mkv", "rec/{broadcast}.mkv", false},
		{"file:///tmp/rec/{n}.mkv", "/tmp/rec/{n}.mkv", false},
		{"file://localhost/tmp/a%20b.mkv", "/tmp/a b.mkv", false},
		{"file://otherhost/tmp/x.mkv", "", true},
		{"file://", "", true},
		{"file:///tmp/%zz.mkv", "", true},
		{"s3://rec/demo/one.mp4", "", true},
		{"gs://b/x.mkv", "", true},
	} {
		p, err := LocalPath(tc.in)
		if (err != nil) != tc.err || p != tc.path {
			t.Errorf("LocalPath(%q) = %q, %v; want %q, error %v", tc.in, p, err, tc.path, tc.err)
		}
		if err != nil && !errors.Is(err, ErrScheme) {
			t.Errorf("LocalPath(%q): %v does not wrap ErrScheme", tc.in, err)
		}
	}
}

// TestFilesRefusesAnObjectStoreURLInsteadOfWritingALocalDirectory is the
// bug of issue 30: -o s3://rec/demo/one.mp4 wrote ./s3:/rec/demo/one.mp4.
func TestFilesRefusesAnObjectStoreURLInsteadOfWritingALocalDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, err := Files("s3://rec/demo/one.mp4", FileOptions{})
	var se *SchemeError
	if !errors.As(err, &se) || se.Scheme != "s3" || !errors.Is(err, ErrScheme) {
		t.Fatalf("Files(s3://...) = %v, want a *SchemeError for s3", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refused URL left %v behind", entries)
	}
}

func TestFilesWritesAFileURLToItsPath(t *testing.T) {
	dir := t.TempDir()
	out, err := Files("file://"+filepath.ToSlash(dir)+"/rec/{n}.mkv", FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := out.Create("b", 3, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "rec", "3.mkv")); err != nil || string(b) != "x" {
		t.Errorf("file %q, %v", b, err)
	}
}
