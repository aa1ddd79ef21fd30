package record

import (
	"context"
	"log/slog"
	"time"

	"github.com/moq-export/moq-export/model"
)

// The optional capabilities of an Output, a File and a Source. A Recorder
// asks for them by these interfaces, never by concrete type, so that an
// Output of one's own (an object store) has them by having the methods.

// LiveOutput is an Output a player reads while it is written (Stream):
// its recordings never wait out an outage (no MaxDelay growth) and take
// what arrives in time.
type LiveOutput interface {
	Output
	Live() bool
}

// TemplatedOutput is an Output that names its files from a Template: a
// recording goes on in a next file (segments, Recording.Split, a late
// track) only when the template tells the files apart ({n}, {time}), and
// the limits look at the template's directory.
type TemplatedOutput interface {
	Output
	Template() Template
}

// PackageTemplateOutput is a PackageOutput whose packages a Template
// names (Files; an object store's key): RecordAll refuses one whose
// packages of different broadcasts would share a directory
// (Template.CheckPackages), before it records anything.
type PackageTemplateOutput interface {
	PackageOutput
	PackageTemplate() Template
}

// LocalFile is a File that is a file of this machine at LocalPath: MP4
// finishes it in place into a regular MP4.
type LocalFile interface {
	File
	LocalPath() string
}

// SizedFile is a File that knows its size, once closed, better than the
// bytes written through it (one finished in place, an object).
type SizedFile interface {
	File
	Size() int64
}

// SelfFlushingFile is a File that sends what is written to it on by
// itself, in blocks of its own size and within a bound of time, as
// FileOutput does (blocks up to 1 MB, within 500 ms of a write): a
// muxer's Flush is not passed on to it. MP4 asks for a flush after each
// fragment so that a plain buffered writer never splits one; passed on to
// a file that flushes itself it would only cut its writes to a fragment's
// size (tens of kB for 2 s of video), which costs the kernel about twice
// the CPU per byte of megabyte writes. A File with a Flush method that
// does not implement this (or says false) gets every muxer flush.
type SelfFlushingFile interface {
	File
	// FlushesItself reports whether the file sends its writes on by
	// itself.
	FlushesItself() bool
}

// BroadcastOutput is an Output that takes a recording's broadcast whole,
// every track as the Source delivers it, instead of a container's bytes:
// ArchiveOutput keeps the objects in an archive. A Recorder hands it the
// broadcast at once, with no catalog wait, plan, muxer or File (Create is
// not called); Duration still ends the recording, and a broadcast that
// ended with an error still fails it.
type BroadcastOutput interface {
	Output
	// Objects reports whether the output wants each track's objects as
	// they arrived rather than frames (subscribe.Options.Objects, which
	// Run then asks for when it dials).
	Objects() bool
	// WriteBroadcast writes w.Broadcast until it ends or ctx does, and
	// reports what it wrote through w.Wrote.
	WriteBroadcast(ctx context.Context, w BroadcastWrite) error
}

// BroadcastWrite is what a BroadcastOutput is handed for one recording.
type BroadcastWrite struct {
	// Name is the broadcast's name (untrusted, as in Output.Create).
	Name      string
	Broadcast *model.Broadcast
	// Logger is the recorder's, never nil.
	Logger *slog.Logger
	// Wrote counts what was written into the recording's stats: frames,
	// their payload bytes, and the media time reached (the latest end of
	// a written frame). It may be called from several goroutines.
	Wrote func(frames int, bytes int64, end time.Duration)
}

// EndingSource is a Source that tells why it ended (a session that gave
// up reconnecting), so that a recording it ends reports it.
type EndingSource interface {
	Source
	Err() error
}

// PeerSource is a Source that names who publishes its broadcasts (the
// remote address of an accepted session), for the logs of refusals.
type PeerSource interface {
	Source
	Peer() string
}

// flushesItself reports whether w is a SelfFlushingFile that flushes
// itself.
func flushesItself(w any) bool {
	f, ok := w.(SelfFlushingFile)
	return ok && f.FlushesItself()
}

// wantsObjects reports whether out is a BroadcastOutput that wants the
// objects as they arrived.
func wantsObjects(out Output) bool {
	b, ok := out.(BroadcastOutput)
	return ok && b.Objects()
}

// live reports whether out is a LiveOutput that is live.
func live(out Output) bool {
	l, ok := out.(LiveOutput)
	return ok && l.Live()
}

// templateOf returns the Template of a TemplatedOutput.
func templateOf(out Output) (Template, bool) {
	t, ok := out.(TemplatedOutput)
	if !ok {
		return Template{}, false
	}
	return t.Template(), true
}
