package record

import (
	"log/slog"
	"time"

	"github.com/moq-export/moq-export/subscribe"
)

// LevelNotice is the level of what a recording says a person wants to
// know at the default verbosity: that it waits, and for what. Above Info,
// below Warn.
const LevelNotice = slog.LevelInfo + 2

// WaitNotice is how long a wait lasts before it is logged at LevelNotice.
const WaitNotice = 2 * time.Second

// Options configure a Recorder. Each field is named like the moq-export
// flag that sets it; the zero value of each is the flag's default.
type Options struct {
	// URL, Dial and Session say what Run records from: a Session (not
	// closed by Run), or else the URL dialled with the Dial options (a
	// token goes in the query: ?jwt=TOKEN). Record and RecordAll take their
	// Source as an argument instead.
	URL     string
	Dial    subscribe.Options
	Session *subscribe.Session
	// Broadcast is the broadcast Run records, relative to the URL path.
	Broadcast string
	// RecordAll makes Run record every broadcast announced instead.
	RecordAll bool

	// Output is where the files go: Files("rec/{broadcast}-{n}.mkv", ...)
	// or Stream(w). Required.
	Output Output
	// Format is the container. Empty: from the extension of a Files
	// template; TS for a Stream.
	Format Format
	// Container, when set, is the container of Format: a muxer of the
	// service's own (Format then names it, e.g. "myfmt"), instead of a
	// built-in one.
	Container *Container
	// Duration stops each recording after this much media time (0: when
	// the broadcast ends). With RecordAll it also ends the following of
	// announcements after this much wall-clock time.
	Duration time.Duration
	// Segment starts a new file (output number n+1) at the first keyframe
	// after this much media time; the template needs {n} or {time}.
	// Whatever Segment is, a template with {n} also starts the next file
	// at the next keyframe when a catalog update adds a rendition that the
	// current file cannot add (FLV or MP4 after their header).
	Segment time.Duration
	// HLSSegmentDuration is the target length of the segments of an HLS
	// package (Format HLS), cut at keyframes (default 4s). HLS cuts its
	// own segments: Segment does not apply to it.
	HLSSegmentDuration time.Duration
	// HLSSegmentFiles writes each segment of an HLS package as a file of
	// its own, even into a directory, where each rendition is otherwise
	// one media file whose segments the playlists name by byte range
	// (hls.Options.SegmentFiles). An object store always gets a file per
	// segment.
	HLSSegmentFiles bool
	// Delay bounds how long a lagging track may hold the output back
	// (default 500ms).
	Delay time.Duration
	// MaxDelay is how far a file's delay may grow when a track keeps
	// lagging the others by more than Delay (a link that carries the video
	// slower than the audio): the file then loses one stretch of that
	// track, not everything after it (see jitter.Options.MaxDelay).
	// Default DefaultMaxDelay; negative: the delay stays fixed. A Stream
	// keeps Delay: a player waits for nothing longer.
	MaxDelay time.Duration
	// Video, Audio and Text name the renditions to record: nil records
	// every rendition the container carries (one of each kind for FLV), an
	// empty list none of that kind. Text (subtitle) renditions go into the
	// containers that carry them (MKV, WebM, HLS); the others skip them
	// with a warning.
	Video, Audio, Text []string
	// KeepTimestamps keeps the broadcast's timestamps instead of starting
	// each file at 0.
	KeepTimestamps bool
	// Wait bounds how long a recording waits for its broadcast's catalog
	// (a broadcast that is not announced sends none), and RecordAll for the
	// first announcement. 0 waits until ctx ends; a wait longer than 2 s is
	// logged at LevelNotice either way.
	Wait time.Duration
	// Logger receives what happens; nil logs nothing (a library stays
	// silent in its host's default logger). Files opened and finished are
	// logged at Info. Run's session logs to it too unless Dial.Logger is
	// set.
	Logger *slog.Logger
	// OnFile, when set, is called when a file is opened and when it is
	// finished (closed and playable: upload or index it then). Calls come
	// from the recording goroutines; keep them short or hand off.
	OnFile func(FileEvent)
	// OnWait, when set, is told of a wait that lasts WaitNotice (for a
	// broadcast's catalog, or for announcements), instead of the notice
	// logged: the command says it in its own words.
	OnWait func(Waiting)
	// OnRefused, when set, is told of a broadcast RecordAll refused at a
	// limit (err is a *LimitError).
	OnRefused func(broadcast string, err error)
	// OnRecording, when set, is called when a recording is started (its
	// State is StateStarting) and when it ended (StateEnded, Done closed,
	// Err its outcome): a service keeps the ended ones it wants to show.
	// Calls come from the recording goroutines; keep them short.
	OnRecording func(*Recording)
	// Progress, when set, is called with the Stats every
	// ProgressInterval (default 1 s) while Record, RecordAll or Run runs,
	// and once more when it returns.
	Progress         func(Stats)
	ProgressInterval time.Duration
	// Origin says where broadcasts come from, for messages ("under
	// https://relay.example/anon"). Default: "by the source".
	Origin string
	// CatalogFetches bounds how many recordings wait for their
	// broadcast's first catalog at once (default 16): a thousand
	// broadcasts announced together are asked for their catalogs 16 at a
	// time, not in one burst at the relay. A broadcast that sends no
	// catalog within 5 s gives its place up and goes on waiting.
	CatalogFetches int

	// Limits (limits.go; 0 means none). MaxRecordings bounds the
	// recordings RecordAll runs at once: a broadcast announced beyond it
	// is refused and logged. MaxFileBytes keeps every file under
	// that size (checked before each frame, the finish included): with {n}
	// in a Files template the next file starts at a keyframe (split by
	// size), otherwise the recording is cut there. MinFreeBytes refuses new recordings while the output's disk
	// has less free space, and cuts running ones when it falls below
	// (looked at when a recording starts and every 4 MiB written). A cut
	// recording is finished and playable, and logged with the reason.
	MaxRecordings int
	MaxFileBytes  int64
	MinFreeBytes  int64
	// FreeSpace reports the free bytes of the disk holding a path
	// (default: the FreeSpace function).
	FreeSpace func(path string) (int64, error)
	// Admit, when set, is asked before RecordAll starts a recording: an
	// error refuses the broadcast for now (a *LimitError of LimitOverload
	// wrapping it, logged and given to OnRefused once), and RecordAll asks
	// again every second while the broadcast is announced, starting it
	// when Admit says yes. The command gives its overload monitor's
	// check: no new recording while the recorder is too busy to keep the
	// ones it has.
	Admit func() error
}

// DefaultMaxDelay is the default of Options.MaxDelay: a file waits up to
// 5 s for a track that lags (what the start of a stretch at 4 Mb/s holds
// in memory: ~2.5 MB).
const DefaultMaxDelay = 5 * time.Second

// DefaultCatalogFetches is the default of Options.CatalogFetches.
const DefaultCatalogFetches = 16
