package record

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/moq-export/moq-export/mux"
)

// Format is an output container.
type Format string

// Output formats.
const (
	FLV  Format = "flv"
	MKV  Format = "mkv"
	WebM Format = "webm"
	TS   Format = "ts"
	MP4  Format = "mp4"
	// HLS is a package of files, not one: CMAF segments of every
	// rendition, an HLS playlist per rendition and a multivariant one,
	// and a DASH manifest over the same segments (see mux/hls). It needs
	// an Output that holds packages (PackageOutput: Files does).
	HLS Format = "hls"
)

// Formats lists the formats in the order help texts show them.
var Formats = []Format{FLV, MKV, WebM, TS, MP4, HLS}

// ParseFormat accepts a format name: flv, mkv, webm, ts, mp4 or hls (and
// the aliases matroska, mpegts, m4v, m4a, and dash, m3u8 and mpd for hls:
// one package holds both manifests), or archive (ArchiveOutput's).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "flv":
		return FLV, nil
	case "mkv", "matroska":
		return MKV, nil
	case "webm":
		return WebM, nil
	case "ts", "mpegts", "m2ts":
		return TS, nil
	case "mp4", "m4v", "m4a":
		return MP4, nil
	case "archive":
		return Archive, nil
	case "hls", "dash", "m3u8", "mpd":
		return HLS, nil
	}
	return "", fmt.Errorf("unknown format %q: the formats are flv, mkv, webm, ts, mp4 and hls", s)
}

// FormatFromPath picks the format from an output path's extension. ok is
// false when the extension names no format.
func FormatFromPath(path string) (f Format, ok bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".flv":
		return FLV, true
	case ".mkv", ".mka", ".mk3d":
		return MKV, true
	case ".webm":
		return WebM, true
	case ".ts", ".m2ts", ".mts":
		return TS, true
	case ".mp4", ".m4v", ".m4a":
		return MP4, true
	case ".m3u8", ".mpd":
		return HLS, true
	}
	return "", false
}

// Ext returns the usual file extension of the format, with the dot.
func (f Format) Ext() string {
	if f == HLS {
		return ".m3u8"
	}
	return "." + string(f)
}

// Package reports whether the format writes a package of named files
// (HLS) rather than one file: it needs a PackageOutput.
func (f Format) Package() bool { return muxers[f].pkg != nil }

// Caps returns what the format's container carries (which tracks, how many
// of each kind); the zero Caps when the format is not built in.
func (f Format) Caps() mux.Caps { return muxers[f].caps }

// Chapters reports whether files of format f can hold chapters
// (Recording.Chapter): its muxer is a mux.Chapterer.
func (f Format) Chapters() bool {
	m, ok := muxers[f]
	if !ok {
		return false
	}
	_, ok = m.new(io.Discard, MuxOptions{}).(mux.Chapterer)
	return ok
}

// Container is a container of a service's own, recorded like a built-in
// Format without forking this package (Options.Container): what it
// carries and how to make its muxer over one output. Options.Format names
// it in FileInfo and messages.
type Container struct {
	// Caps says what the container carries (mux.Caps: the codecs and how
	// many tracks of each kind); the selection and the check before
	// recording ask it, as for the built-in formats.
	Caps mux.Caps
	// New returns the muxer of one output written to w (an io.WriteSeeker
	// for a file, so that it can finish the container in place).
	New func(w io.Writer, o MuxOptions) (mux.Muxer, error)
}

// MuxOptions are what the command passes to every muxer.
type MuxOptions struct {
	// Path is the file the muxer writes, "" for a stream (stdout): MP4
	// finishes a file into a regular MP4 at Close.
	Path string
	// FinishHead, for a RemoteFile, is how MP4 finishes (see
	// RemoteFile); set, MKV also leaves its Clusters' sizes unknown.
	FinishHead     func(head []byte, from int64) error
	KeepTimestamps bool
	Logger         *slog.Logger
	// Compact asks for a finish that adds little to what was written (a
	// size limit holds the file): MP4 finishes by copy instead of in
	// place, which would copy its first fragments to the end.
	Compact bool
	// WallClock maps a frame timestamp (µs) to wall-clock time when the
	// broadcast's catalog has a clock (catalog.Clock.At), nil otherwise:
	// MKV's DateUTC and MP4's creation_time are its first frame's.
	WallClock func(ts int64) time.Time
}

// NewMuxer returns a muxer of format f writing to w.
func (f Format) NewMuxer(w io.Writer, o MuxOptions) (mux.Muxer, error) {
	m, ok := muxers[f]
	if !ok {
		return nil, fmt.Errorf("format %s is not built into this binary (it has %s)", f, availableFormats())
	}
	if m.pkg != nil {
		return nil, fmt.Errorf("format %s writes a package of files, not one stream: %w", f, ErrPackage)
	}
	return m.new(w, o), nil
}

func availableFormats() string {
	var s []string
	for _, f := range Formats {
		if _, ok := muxers[f]; ok {
			s = append(s, string(f))
		}
	}
	return strings.Join(s, ", ")
}
