package record

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
