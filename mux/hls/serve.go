package hls

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
)

// ErrNotServed is wrapped by ServeFile's refusal of a name: one that is
// not a plain relative name, that names a hidden file or directory (a
// package's manifest directories, a spare being written), that leaves the
// root (by "..", or by a symbolic link pointing out of it), or that is not
// a regular file.
var ErrNotServed = errors.New("not a file this server serves")

// maxManifest bounds what ServeFile reads of a manifest to name it by its
// content: an hour of 4 s segments is ~100 KB per playlist.
const maxManifest = 64 << 20

// ServeFile serves the file name (slash-separated, relative) under root
// as a live origin must serve a package that is still being recorded:
// every response carries an ETag naming exactly the bytes it holds, so a
// player's revalidation gets the new version whenever there is one.
//
//   - A manifest (.m3u8, .mpd) is replaced whole at each segment: it is
//     read once, named by the SHA-256 of its content and served
//     Cache-Control: no-cache (revalidated on every reload).
//   - Any other file only grows while it is recorded (a rendition's media
//     file, a segment written once): it is named by its size and
//     modification time, and exactly that many bytes are served, however
//     much it grows during the response.
//
// Last-Modified alone, the only validator of http.ServeFile and
// `python3 -m http.server`, has one-second resolution: a playlist fetched
// and then replaced within the same second (a segment, then the clean
// end's ENDLIST) answers every later If-Modified-Since with 304, and the
// player keeps the older playlist for good.
//
// Names are resolved in root (os.Root): "..", absolute names and symbolic
// links leading out of root are refused, and so is any hidden name (a
// component starting with "."): the package's links into .manifests are
// followed by the file system, never requested by name. Range requests
// and conditional requests are answered as http.ServeContent does. A
// refused or missing name is a 404; ServeFile returns why (wrapping
// ErrNotServed or fs.ErrNotExist), nil when it answered.
func ServeFile(w http.ResponseWriter, r *http.Request, root *os.Root, name string) error {
	f, fi, err := openServed(root, name)
	if err != nil {
		http.NotFound(w, r)
		return err
	}
	defer f.Close()
	var content io.ReadSeeker
	switch ext := strings.ToLower(path.Ext(name)); ext {
	case ".m3u8", ".mpd":
		b, err := io.ReadAll(io.LimitReader(f, maxManifest))
		if err != nil {
			http.Error(w, "reading "+name+" failed", http.StatusInternalServerError)
			return fmt.Errorf("reading %s: %w", name, err)
		}
		sum := sha256.Sum256(b)
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:16])+`"`)
		w.Header().Set("Cache-Control", "no-cache")
		if ext == ".m3u8" {
			w.Header().Set("Content-Type", "application/vnd.apple.mpegurl")
		} else {
			w.Header().Set("Content-Type", "application/dash+xml")
		}
		content = bytes.NewReader(b)
	default:
		w.Header().Set("ETag", fmt.Sprintf(`"%x-%x"`, fi.Size(), fi.ModTime().UnixNano()))
		if ext == ".m4s" && w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "video/iso.segment")
		}
		content = io.NewSectionReader(f, 0, fi.Size())
	}
	http.ServeContent(w, r, path.Base(name), fi.ModTime(), content)
	return nil
}

// openServed opens name in root for ServeFile, refusing what it does not
// serve.
func openServed(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || strings.ContainsRune(name, 0) {
		return nil, nil, fmt.Errorf("%q: %w", name, ErrNotServed)
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || strings.HasPrefix(part, ".") {
			return nil, nil, fmt.Errorf("%q: %w", name, ErrNotServed)
		}
	}
	f, err := root.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("%q: %w: %w", name, ErrNotServed, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%q: %w: not a regular file", name, ErrNotServed)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}
