package record

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/units"
)

// ErrSelection is what errors about the Video and Audio selection (a
// rendition that does not exist, a selection of nothing) match with
// errors.Is: the command's usage errors (exit 2).
var ErrSelection = errors.New("nothing selected that the broadcast has")

// SelectionError is a Video or Audio selection the broadcast cannot meet:
// a rendition it does not have (Name), or nothing left (Name empty). It
// matches ErrSelection.
type SelectionError struct {
	Broadcast string
	Kind      catalog.Kind // of the rendition named
	Name      string       // the rendition named; empty: the selection leaves nothing
	// Video, Audio and Text are the renditions the broadcast has.
	Video, Audio, Text []string
}

func (e *SelectionError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("the selection leaves nothing of %q to record: it has video %s, audio %s", e.Broadcast, names(e.Video), names(e.Audio))
	}
	have := e.Video
	switch e.Kind {
	case catalog.KindAudio:
		have = e.Audio
	case catalog.KindText:
		have = e.Text
	}
	return fmt.Sprintf("broadcast %q has no %s rendition %q (it has %s)", e.Broadcast, e.Kind, e.Name, names(have))
}

func (e *SelectionError) Is(target error) bool { return target == ErrSelection }

// RenditionError is a rendition selected by name that the format cannot
// carry (Err says why); Others are the formats that can.
type RenditionError struct {
	Broadcast string
	Kind      catalog.Kind
	Name      string
	Format    Format
	Others    []Format
	Err       error
}

func (e *RenditionError) Error() string { return fmt.Sprintf("%s %s: %v", e.Kind, e.Name, e.Err) }

func (e *RenditionError) Unwrap() error { return e.Err }

// FormatError says that the format carries none of the selected
// renditions of a broadcast (Renditions: "name (codec)"); Others are the
// formats that would carry some, Err the first reason.
type FormatError struct {
	Broadcast  string
	Format     Format
	Renditions []string
	Others     []Format
	Err        error
}

func (e *FormatError) Error() string {
	s := fmt.Sprintf("%s cannot carry any selected rendition of %q (%s)", e.Format, e.Broadcast, strings.Join(e.Renditions, ", "))
	if len(e.Others) > 0 {
		s += ": " + formatList(e.Others) + " can"
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }

// SharedPackageError is the refusal to record every broadcast
// (RecordAll) into HLS/DASH packages that would share a directory: every
// package names its files alike (v0.mp4, a0.mp4, v0.m3u8, ...), so each
// broadcast needs a directory of its own (Template.CheckPackages). Suggest
// is Template with {broadcast} in the directory. It wraps ErrTemplate.
type SharedPackageError struct {
	Template string
	Suggest  string
}

func (e *SharedPackageError) Error() string {
	return fmt.Sprintf("%v %q puts the HLS/DASH package of every broadcast into one directory, where their files (v0.mp4, a0.mp4, v0.m3u8, ...) would overwrite each other: put {broadcast} in the directory, e.g. %q", ErrTemplate, e.Template, e.Suggest)
}

func (e *SharedPackageError) Unwrap() error { return ErrTemplate }

// PackageDirError is the refusal to record an HLS/DASH package (its
// multivariant playlist Playlist) into directory Dir (or an object store's
// prefix, a URL: s3://BUCKET/rec), which holds another package: every
// package names its files alike (v0.mp4, a0.mp4, v0.m3u8, .manifests), so
// the two would overwrite each other's. Other is the other package's
// playlist; Recording says this process records it into Dir now (Other
// may then be Playlist itself: one package has one writer). A package
// whose state Dir holds is continued, not refused.
type PackageDirError struct {
	Dir, Playlist, Other string
	Recording            bool
}

func (e *PackageDirError) Error() string {
	what := fmt.Sprintf("holds the HLS/DASH package %s", e.Other)
	if e.Recording {
		what = fmt.Sprintf("is where the package %s is being recorded now", e.Other)
	}
	stem := strings.TrimSuffix(e.Playlist, filepath.Ext(e.Playlist))
	where, own := "directory", filepath.Join(e.Dir, stem, "index.m3u8")
	if strings.Contains(e.Dir, "://") {
		where, own = "prefix", strings.TrimSuffix(e.Dir, "/")+"/"+stem+"/index.m3u8"
	}
	return fmt.Sprintf("the %s %s %s: a package of %s there would overwrite its files (v0.mp4, a0.mp4, v0.m3u8, ...); give each package a %s of its own, e.g. %s",
		where, e.Dir, what, e.Playlist, where, own)
}

// ErrNothingRecorded is matched by EmptyWindowError.
var ErrNothingRecorded = errors.New("nothing was recorded")

// EmptyWindowError is a RecordAll that followed the announcements for its
// window (Options.Duration, counted from the call: the source's setup, a
// relay session's connection and SETUP, takes part of it) and saw no
// broadcast announced in it: it recorded nothing. It matches
// ErrNothingRecorded.
type EmptyWindowError struct {
	Origin string // where the broadcasts were looked for (Options.Origin)
	Window time.Duration
}

func (e *EmptyWindowError) Error() string {
	origin := ""
	if e.Origin != "" {
		origin = " " + e.Origin
	}
	return fmt.Sprintf("no broadcast was announced%s within the %v followed (counted from the start, the connection's setup included): %v", origin, e.Window, ErrNothingRecorded)
}

func (e *EmptyWindowError) Is(target error) bool { return target == ErrNothingRecorded }

// RecordingsFailedError is a RecordAll that ended by itself (its window,
// Options.Duration, or its source's end) after broadcasts were announced
// and recorded, but every recording failed: none ended well. Broadcasts are the broadcasts whose recordings failed, in the
// order they failed, and Errs each one's error (the last, when a
// broadcast was recorded more than once); errors.Is and errors.As see
// those errors. A RecordAll in which some recording ended well returns
// nil, its failures logged.
type RecordingsFailedError struct {
	Broadcasts []string
	Errs       []error
}

func (e *RecordingsFailedError) Error() string {
	parts := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		parts[i] = err.Error()
	}
	what := fmt.Sprintf("the recording of %q failed", e.Broadcasts[0])
	if len(e.Broadcasts) > 1 {
		what = fmt.Sprintf("every recording failed (%d broadcasts)", len(e.Broadcasts))
	}
	return fmt.Sprintf("%s and none ended well: %s", what, strings.Join(parts, "; "))
}

func (e *RecordingsFailedError) Unwrap() []error { return e.Errs }

// WaitError is a wait that ended before what it waited for came: a
// broadcast's catalog (Broadcast set) or any announcement (Broadcast
// empty), from Origin, within Wait (Options.Wait).
type WaitError struct {
	Broadcast string
	Origin    string
	Wait      time.Duration
}

func (e *WaitError) Error() string {
	if e.Broadcast == "" {
		return fmt.Sprintf("no broadcast was announced %s within %v", e.Origin, e.Wait)
	}
	return fmt.Sprintf("broadcast %q was not announced %s within %v (or sent no catalog)", e.Broadcast, e.Origin, e.Wait)
}

// CatalogError is a broadcast whose catalog could not be read.
type CatalogError struct {
	Broadcast string
	Err       error
}

func (e *CatalogError) Error() string {
	return fmt.Sprintf("broadcast %q: reading its catalog: %v", e.Broadcast, e.Err)
}

func (e *CatalogError) Unwrap() error { return e.Err }

// Limit names one of the limits of Options.
type Limit string

// The limits (Options MaxRecordings, MaxFileBytes, MinFreeBytes, Admit).
const (
	LimitRecordings Limit = "recordings"
	LimitFileBytes  Limit = "file-bytes"
	LimitFreeBytes  Limit = "free-bytes"
	LimitOverload   Limit = "overload"
)

// LimitError is a limit reached: Have against Max (recordings, or bytes),
// Path the file or directory it is about; for LimitOverload, Err is what
// Options.Admit said. It matches ErrLimit.
type LimitError struct {
	Limit Limit
	Have  int64
	Max   int64
	Path  string
	Err   error
}

func (e *LimitError) Unwrap() error { return e.Err }

func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitOverload:
		return fmt.Sprintf("%v: %v", ErrLimit, e.Err)
	case LimitRecordings:
		return fmt.Sprintf("%v: %d recordings running, at most %d", ErrLimit, e.Have, e.Max)
	case LimitFileBytes:
		return fmt.Sprintf("%v: %s reached %s", ErrLimit, e.Path, units.ByteSize(e.Max))
	}
	return fmt.Sprintf("%v: %s free on the disk of %s, below %s", ErrLimit, units.ByteSize(e.Have), e.Path, units.ByteSize(e.Max))
}

func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// OutOfFilesError is an output that could not be created because the
// process holds as many files as it may (EMFILE; Limit and HardLimit are
// its limits) or the system does (ENFILE; System). It matches
// ErrOutOfFiles and unwraps to the error of the system call.
type OutOfFilesError struct {
	Path             string
	Limit, HardLimit uint64
	System           bool
	Err              error
}

func (e *OutOfFilesError) Error() string {
	limit := fmt.Sprintf(" (this process may open %d; hard limit %d)", e.Limit, e.HardLimit)
	switch {
	case e.System:
		limit = " (the system's limit, fs.file-max)"
	case e.Limit == 0:
		limit = ""
	}
	return fmt.Sprintf("creating %s: %v%s: every running recording holds its file open: %v", e.Path, ErrOutOfFiles, limit, e.Err)
}

func (e *OutOfFilesError) Is(target error) bool { return target == ErrOutOfFiles }

func (e *OutOfFilesError) Unwrap() error { return e.Err }

// names lists renditions for messages: "a, b", or "none".
func names(n []string) string {
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

// formatList lists formats: "mkv or webm".
func formatList(fs []Format) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, " or ")
}

// ChapterError is returned by Recording.Chapter for a format whose files
// hold no chapters.
type ChapterError struct{ Format Format }

func (e *ChapterError) Error() string {
	return fmt.Sprintf("%s files hold no chapters (mkv, webm and mp4 do)", e.Format)
}

// ErrMalformed is what a MalformedError matches with errors.Is.
var ErrMalformed = errors.New("every frame's payload was not what its codec says")

// MalformedError ends a recording that wrote no frame because every
// payload it received was not what its track's codec says (H.264/H.265
// NAL unit lengths that do not add up, ADTS where raw AAC is expected):
// Dropped frames of Broadcast, none written. A recording that wrote some
// frames counts the others per track instead (TrackInfo.DroppedMalformed).
type MalformedError struct {
	Broadcast string
	Dropped   int64
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("broadcast %q: %v: %d frames dropped, none written", e.Broadcast, ErrMalformed, e.Dropped)
}

func (e *MalformedError) Is(target error) bool { return target == ErrMalformed }
