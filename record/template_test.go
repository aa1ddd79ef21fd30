package record

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestSafeNameIsOneHarmlessComponent(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"alice", "alice"},
		{"room/alice", "room_alice"},
		{"..", "_."},
		{"../../etc/passwd", "_._.._etc_passwd"},
		{"/etc/passwd", "_etc_passwd"},
		{`C:\Windows\x`, "C__Windows_x"},
		{"a\x00b\nc\x7f", "a_b_c_"},
		{"evil\u202etxt.exe", "evil_txt.exe"}, // right-to-left override
		{".hidden", "_hidden"},
		{"", "_"},
		{"über-straße 2", "über-straße_2"},
		{"a b;c|d$e`f", "a_b_c_d_e_f"},
		{"\xff\xfe", "__"},
	} {
		if got := SafeName(tc.in); got != tc.want {
			t.Errorf("SafeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := SafeName(strings.Repeat("é", 500))
	if len(long) > maxNameBytes || !utf8.ValidString(long) {
		t.Errorf("long name: %d bytes, valid UTF-8 %v", len(long), utf8.ValidString(long))
	}
}

func TestTemplateExpandsPlaceholders(t *testing.T) {
	when := time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	for _, tc := range []struct{ tmpl, bc, want string }{
		{"rec/{broadcast}-{n}.mkv", "room/alice", "rec/room_alice-3.mkv"},
		{"{broadcast}.ts", "demo", "demo.ts"},
		{"/srv/rec/{broadcast}/{time}.flv", "bob", "/srv/rec/bob/20250304T040607Z.flv"},
		{"../out/{n}.ts", "x", "../out/3.ts"},
		{"plain.mkv", "x", "plain.mkv"},
		{"rec/{broadcast}-{n}.mkv", "../../../etc/cron.d/x", "rec/_._.._.._etc_cron.d_x-3.mkv"},
	} {
		tm, err := ParseTemplate(tc.tmpl)
		if err != nil {
			t.Fatalf("%q: %v", tc.tmpl, err)
		}
		got, err := tm.Expand(tc.bc, 3, when)
		if err != nil {
			t.Fatalf("%q with %q: %v", tc.tmpl, tc.bc, err)
		}
		if got != filepath.FromSlash(tc.want) {
			t.Errorf("%q with %q = %q, want %q", tc.tmpl, tc.bc, got, tc.want)
		}
	}
}

func TestTemplateRejectsUnknownAndUnclosedPlaceholders(t *testing.T) {
	for _, raw := range []string{"rec/{name}.mkv", "rec/{broadcast.mkv", "", "{N}.ts"} {
		if _, err := ParseTemplate(raw); !errors.Is(err, ErrTemplate) {
			t.Errorf("ParseTemplate(%q) = %v, want ErrTemplate", raw, err)
		}
	}
}

func TestTemplateOutputDirectory(t *testing.T) {
	for _, tc := range []struct{ tmpl, dir string }{
		{"rec/{broadcast}-{n}.mkv", "rec"},
		{"rec/x-{n}.mkv", "rec"},
		{"rec/{broadcast}/{n}.mkv", "rec"},
		{"{broadcast}.mkv", "."},
		{"/a/b/c.ts", "/a/b"},
	} {
		tm, err := ParseTemplate(tc.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if tm.Dir() != filepath.FromSlash(tc.dir) {
			t.Errorf("Dir(%q) = %q, want %q", tc.tmpl, tm.Dir(), tc.dir)
		}
	}
}

func TestCreateUniqueNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "a.mkv")
	var got []string
	for range 3 {
		f, name, err := createUnique(dir, p)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		got = append(got, filepath.Base(name))
	}
	if strings.Join(got, " ") != "a.mkv a-1.mkv a-2.mkv" {
		t.Errorf("names %v", got)
	}
}

// FuzzTemplateExpandStaysInOutputDirectory feeds arbitrary broadcast names
// (untrusted: they come from the network) through several templates.
func FuzzTemplateExpandStaysInOutputDirectory(f *testing.F) {
	for _, s := range []string{"..", "../..", "/", "a/../../b", "\x00", ".", "C:\\x", "~", "a/./b", "%2e%2e"} {
		f.Add(s)
	}
	tmpls := []string{"rec/{broadcast}-{n}.mkv", "{broadcast}", "rec/{broadcast}/{broadcast}.ts", "/abs/{broadcast}{time}.flv"}
	f.Fuzz(func(t *testing.T, name string) {
		s := SafeName(name)
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00") || len(s) > maxNameBytes {
			t.Fatalf("SafeName(%q) = %q", name, s)
		}
		for _, raw := range tmpls {
			tm, err := ParseTemplate(raw)
			if err != nil {
				t.Fatal(err)
			}
			p, err := tm.Expand(name, 1, time.Unix(0, 0))
			if err != nil {
				t.Fatalf("%q with %q: %v", raw, name, err)
			}
			// The name adds no directory level: the path has as many
			// separators as the template expanded with a plain name.
			plain, _ := tm.Expand("x", 1, time.Unix(0, 0))
			if !within(tm.Dir(), p) || strings.Count(p, string(filepath.Separator)) != strings.Count(plain, string(filepath.Separator)) {
				t.Fatalf("%q with %q expands to %q outside %q", raw, name, p, tm.Dir())
			}
		}
	})
}

// TestTemplateOutputDoesNotFollowSymlinksOutOfTheDirectory: a symlink in
// the output directory named like a broadcast must not carry that
// broadcast's files elsewhere.
func TestTemplateOutputDoesNotFollowSymlinksOutOfTheDirectory(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	rec := filepath.Join(dir, "rec")
	if err := os.MkdirAll(rec, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(rec, "evil")); err != nil {
		t.Skipf("cannot make a symlink here: %v", err)
	}
	tm, err := ParseTemplate(filepath.Join(rec, "{broadcast}", "{n}.ts"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := tm.Expand("evil", 0, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if f, name, err := createUnique(tm.Dir(), p); err == nil {
		f.Close()
		t.Errorf("created %s through the symlink", name)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("%d files written outside the output directory", len(ents))
	}
	// A symlink that stays inside the directory is still followed.
	if err := os.MkdirAll(filepath.Join(rec, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(rec, "alias")); err != nil {
		t.Fatal(err)
	}
	p, _ = tm.Expand("alias", 0, time.Unix(0, 0))
	f, _, err := createUnique(tm.Dir(), p)
	if err != nil {
		t.Fatalf("symlink inside the directory: %v", err)
	}
	f.Close()
	if _, err := os.Stat(filepath.Join(rec, "real", "0.ts")); err != nil {
		t.Error(err)
	}
}

// TestSafeNameAvoidsWindowsDeviceNames: CON, NUL, COM1 and the like open
// a device on Windows whatever the extension.
func TestSafeNameAvoidsWindowsDeviceNames(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"CON", "_CON"},
		{"nul", "_nul"},
		{"Com1", "_Com1"},
		{"lpt9.x", "_lpt9.x"},
		{"aux.", "_aux."},
		{"console", "console"},
		{"com10", "com10"},
		{"con-1", "con-1"},
	} {
		if got := SafeName(tc.in); got != tc.want {
			t.Errorf("SafeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
