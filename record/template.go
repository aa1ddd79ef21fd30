package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Template is an output path with placeholders: {broadcast} (the broadcast
// name, made safe as one file name), {n} (the segment number, from 0) and
// {time} (the UTC start time of the file, 20060102T150405Z: by the
// catalog's clock when the broadcast has one, see FileInfo.Start). The directory
// part before the first placeholder is the output directory; an expanded
// path never leaves it.
type Template struct {
	raw  string
	base string // output directory: the literal directory before the first placeholder
}

// ErrTemplate is wrapped by errors about a malformed output template.
var ErrTemplate = errors.New("output template")

var placeholders = []string{"{broadcast}", "{n}", "{time}"}

// ParseTemplate checks an output template.
func ParseTemplate(raw string) (Template, error) {
	if raw == "" {
		return Template{}, fmt.Errorf("%w: empty path", ErrTemplate)
	}
	rest := raw
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return Template{}, fmt.Errorf("%w %q: unclosed %q; placeholders are {broadcast}, {n} and {time}", ErrTemplate, raw, "{")
		}
		ph := rest[i : i+j+1]
		if !slices.Contains(placeholders, ph) {
			return Template{}, fmt.Errorf("%w %q: unknown placeholder %s; use {broadcast}, {n} or {time}", ErrTemplate, raw, ph)
		}
		rest = rest[i+j+1:]
	}
	t := Template{raw: raw}
	lit := raw
	if i := strings.IndexByte(raw, '{'); i >= 0 {
		lit = raw[:i]
		// The literal prefix may end inside a file name ("rec/x-{n}"):
		// its directory is what precedes the last separator.
		t.base = filepath.Dir(lit + "x")
	} else {
		t.base = filepath.Dir(raw)
	}
	return t, nil
}

// Has reports whether the template uses placeholder name ("broadcast", "n"
// or "time").
func (t Template) Has(name string) bool { return strings.Contains(t.raw, "{"+name+"}") }

// IsTemplate reports whether the path has any placeholder.
func (t Template) IsTemplate() bool { return strings.Contains(t.raw, "{") }

// String returns the template as given.
func (t Template) String() string { return t.raw }

// Dir returns the output directory.
func (t Template) Dir() string { return t.base }

// Expand returns the path for broadcast name, segment n, started at when.
// The broadcast name is untrusted: it becomes a single file-name component
// (see SafeName), and the result is checked to stay in the output directory.
func (t Template) Expand(broadcast string, n int, when time.Time) (string, error) {
	r := strings.NewReplacer(
		"{broadcast}", SafeName(broadcast),
		"{n}", strconv.Itoa(n),
		"{time}", when.UTC().Format("20060102T150405Z"),
	)
	p := filepath.Clean(r.Replace(t.raw))
	if !within(t.base, p) {
		return "", fmt.Errorf("%w %q: expands to %q outside %q", ErrTemplate, t.raw, p, t.base)
	}
	return p, nil
}

// packagePath splits a package's path (a template or an expanded path)
// into the part that names its directory and its multivariant playlist's
// name: a path ending in .m3u8 names the playlist, one ending in .mpd the
// MPD (its stem names both manifests); any other path is the directory,
// whose playlist is index.m3u8.
func packagePath(p string) (dir, playlist string) {
	dir, playlist = p, "index.m3u8"
	switch strings.ToLower(filepath.Ext(p)) {
	case ".m3u8":
		dir, playlist = filepath.Dir(p), filepath.Base(p)
	case ".mpd":
		dir, playlist = filepath.Dir(p), strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))+".m3u8"
	}
	return dir, playlist
}

// CheckPackages checks that the HLS/DASH packages t names for different
// broadcasts each get a directory of their own: {broadcast} in the part
// of t that names the directory (rec/{broadcast}/index.m3u8,
// rec/{broadcast}), not only in the playlist's name (rec/{broadcast}.m3u8).
// Every package names its files alike (v0.mp4, a0.mp4, v0.m3u8, the
// .manifests directory), so packages that share a directory overwrite
// each other's. The error is a *SharedPackageError.
func (t Template) CheckPackages() error {
	dir, playlist := packagePath(t.raw)
	if strings.Contains(dir, "{broadcast}") {
		return nil
	}
	ext := filepath.Ext(t.raw)
	var suggest string
	switch stem := strings.TrimSuffix(filepath.Base(t.raw), ext); {
	case ext == "" || !strings.Contains(stem, "{broadcast}"):
		// A directory, or a playlist named without the broadcast.
		suggest = filepath.Join(dir, "{broadcast}", playlist)
		if strings.EqualFold(ext, ".mpd") {
			suggest = filepath.Join(dir, "{broadcast}", filepath.Base(t.raw))
		}
	default:
		// The playlist's name becomes the package's directory.
		suggest = filepath.Join(dir, stem, "index"+ext)
	}
	return &SharedPackageError{Template: t.raw, Suggest: suggest}
}

// within reports whether path p is dir or below it, lexically.
func within(dir, p string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// maxNameBytes caps a sanitized name well under common file-name limits
// (255 bytes), leaving room for the rest of the template.
const maxNameBytes = 120

// SafeName turns an untrusted broadcast name into one harmless file-name
// component: path separators become "_", and so do control characters,
// characters that shells or other systems treat specially, and a leading
// dot (so ".." and hidden files cannot result); Windows device names (CON,
// NUL, COM1, ...) get a "_" in front. The result is
// never empty and at most 120 bytes long.
func SafeName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == utf8.RuneError, unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			b.WriteByte('_')
		case r < utf8.RuneSelf && !(isAlnum(byte(r)) || r == '.' || r == '-' || r == '_'):
			b.WriteByte('_')
		case r >= utf8.RuneSelf && !unicode.IsLetter(r) && !unicode.IsDigit(r):
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	s := b.String()
	if strings.HasPrefix(s, ".") {
		s = "_" + s[1:]
	}
	if isDeviceName(s) {
		s = "_" + s
	}
	for len(s) > maxNameBytes {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	if s == "" {
		return "_"
	}
	return s
}

// isDeviceName reports whether Windows takes file name s for a device
// (CON, PRN, AUX, NUL, COM0-9, LPT0-9, whatever follows a dot).
func isDeviceName(s string) bool {
	stem, _, _ := strings.Cut(s, ".")
	switch strings.ToUpper(stem) {
	case "CON", "PRN", "AUX", "NUL":
		return true
	}
	return len(stem) == 4 && (strings.EqualFold(stem[:3], "COM") || strings.EqualFold(stem[:3], "LPT")) && stem[3] >= '0' && stem[3] <= '9'
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// createUnique creates path, which lies below the output directory dir,
// for writing, its directories too; when path exists it tries
// "name-1.ext", "name-2.ext", ... so a recording never overwrites an
// earlier one (a broadcast that restarts, a clock that went back). Below
// dir everything is opened through an os.Root, so a symlink there cannot
// take the file outside dir.
func createUnique(dir, path string) (*os.File, string, error) {
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return nil, "", err
	}
	ext := filepath.Ext(rel)
	stem := strings.TrimSuffix(rel, ext)
	p := rel
	for i := 1; ; i++ {
		f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return f, filepath.Join(dir, p), nil
		}
		if !errors.Is(err, os.ErrExist) || i > 10000 {
			return nil, "", err
		}
		p = fmt.Sprintf("%s-%d%s", stem, i, ext)
	}
}
