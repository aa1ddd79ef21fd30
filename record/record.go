package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/segment"
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
	// Video and Audio name the renditions to record: nil records every
	// rendition the container carries (one of each kind for FLV), an empty
	// list none of that kind.
	Video, Audio []string
	// KeepTimestamps keeps the broadcast's timestamps instead of starting
	// each file at 0.
	KeepTimestamps bool
	// Wait bounds how long a recording waits for its broadcast's catalog
	// (a broadcast that is not announced sends none), and RecordAll for the
	// first announcement. 0 waits until ctx ends; a wait longer than 2 s is
	// logged at LevelNotice either way.
	Wait time.Duration
	// Logger receives what happens (default slog.Default()). Files opened
	// and finished are logged at Info.
	Logger *slog.Logger
	// OnFile, when set, is called when a file is opened and when it is
	// finished (closed and playable: upload or index it then). Calls come
	// from the recording goroutines; keep them short or hand off.
	OnFile func(FileEvent)
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
	// ReturnMemoryAfter, when set, hands the memory that starting
	// recordings left behind back to the operating system
	// (runtime/debug.FreeOSMemory, two garbage collections) once no
	// recording has started for that long. A fleet that starts many
	// recordings at once peaks its heap with what their starts allocate
	// (TLS, catalogs, first groups); the Go runtime returns freed memory
	// only as a collection lowers its goal, which an idle recorder runs
	// at most every 2 minutes, and even then keeps 10% above its goal:
	// 1,000 idle recordings held ~77 MB of such memory. Before, the
	// sources that can (a subscribe.Session, through SessionSource) park
	// their subscriptions' waits afresh on the smaller stacks new
	// goroutines get once the start is over (subscribe.Session.Settle).
	// The command sets 10 s; 0 leaves it to the runtime.
	ReturnMemoryAfter time.Duration

	// Limits (limits.go; 0 means none). MaxRecordings bounds the
	// recordings RecordAll runs at once: a broadcast announced beyond it
	// is refused and logged. MaxFileBytes cuts a recording once its
	// current file (the whole recording, or one segment) reaches that
	// size. MinFreeBytes refuses new recordings while the output's disk
	// has less free space, and cuts running ones when it falls below
	// (looked at when a recording starts and every 4 MiB written). A cut
	// recording is finished and playable, and logged with the reason.
	MaxRecordings int
	MaxFileBytes  int64
	MinFreeBytes  int64
	// FreeSpace reports the free bytes of the disk holding a path
	// (default: the FreeSpace function).
	FreeSpace func(path string) (int64, error)
}

// DefaultMaxDelay is the default of Options.MaxDelay: a file waits up to
// 5 s for a track that lags (what the start of a stretch at 4 Mb/s holds
// in memory: ~2.5 MB).
const DefaultMaxDelay = 5 * time.Second

// DefaultCatalogFetches is the default of Options.CatalogFetches.
const DefaultCatalogFetches = 16

// catalogSlotHold is how long a recording keeps its catalog fetch place
// while no catalog comes.
const catalogSlotHold = 5 * time.Second

// Run records what the options say (Broadcast, or every broadcast with
// RecordAll, from the Session or the URL) until it ends or ctx does, and
// returns the files it wrote. Cancelling ctx finishes the files first.
func Run(ctx context.Context, opts Options) ([]FileInfo, error) {
	if opts.Broadcast == "" && !opts.RecordAll {
		return nil, errors.New("record: Options.Broadcast is empty: name the broadcast to record, or set RecordAll")
	}
	sess := opts.Session
	if sess == nil {
		if opts.URL == "" {
			return nil, errors.New("record: Run needs Options.URL or Options.Session")
		}
		var err error
		if sess, err = subscribe.Dial(ctx, opts.URL, opts.Dial); err != nil {
			return nil, fmt.Errorf("record: connecting to %s: %w", subscribe.RedactURL(opts.URL), err)
		}
		defer sess.Close()
		if opts.Origin == "" {
			opts.Origin = "under " + subscribe.RedactURL(opts.URL)
		}
	}
	r, err := New(opts)
	if err != nil {
		return nil, err
	}
	src := SessionSource(sess)
	if opts.RecordAll {
		err = r.RecordAll(ctx, src)
	} else {
		err = r.Record(ctx, src, opts.Broadcast)
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil // stopped as asked, files finished
	}
	return r.Files(), err
}

// withProgress runs fn, calling Options.Progress meanwhile.
func (r *Recorder) withProgress(ctx context.Context, fn func() error) error {
	if r.opts.Progress == nil {
		return fn()
	}
	interval := r.opts.ProgressInterval
	if interval <= 0 {
		interval = time.Second
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				r.opts.Progress(r.Stats())
			}
		}
	}()
	err := fn()
	close(stop)
	<-done
	r.opts.Progress(r.Stats())
	return err
}

// FileEvent is a file opened or finished.
type FileEvent struct {
	Finished bool     // false: just opened (Size, Frames and Media are 0)
	File     FileInfo // what was written
	Err      error    // finishing it failed (the file may be incomplete)
}

// FileInfo describes one output a Recorder wrote.
type FileInfo struct {
	Path      string  `json:"path"` // "-" for a Stream
	Broadcast string  `json:"broadcast"`
	Segment   int     `json:"segment"`
	Format    string  `json:"format"`
	Size      int64   `json:"size"`          // bytes written
	Frames    int64   `json:"frames"`        // frames written to it
	Media     float64 `json:"media_seconds"` // from its first to its last frame
}

// Stats sums the counters of a Recorder's recordings, running and ended.
type Stats struct {
	Recordings int           // recordings running now
	Recorded   int           // recordings started so far
	Media      time.Duration // media time written (the longest recording)
	Tracks     int           // tracks recorded now, or by the ended recordings
	Frames     int64
	Bytes      int64 // payload bytes
	Late       int64
	Dropped    int64
	Lost       time.Duration // the most media time one track lost to gaps (outages)
}

// TrackInfo accounts for the frames of one recorded track: received =
// written + dropped late + dropped by the muxer (+ what was still buffered
// when a recording was cut short); Lost is the media time its gaps
// skipped (see export.TrackStats).
type TrackInfo struct {
	Broadcast      string  `json:"broadcast"`
	Track          string  `json:"track"`
	Kind           string  `json:"kind"`
	Received       int64   `json:"received"`
	Written        int64   `json:"written"`
	DroppedLate    int64   `json:"dropped_late"`
	DroppedByMuxer int64   `json:"dropped_by_muxer"`
	Gaps           int64   `json:"gaps"`
	Lost           float64 `json:"lost_seconds"`
}

func trackInfo(broadcast string, ts export.TrackStats) TrackInfo {
	return TrackInfo{Broadcast: broadcast, Track: ts.Name, Kind: ts.Kind.String(), Received: ts.Received, Written: ts.Written,
		DroppedLate: ts.DroppedLate, DroppedByMuxer: ts.DroppedByMuxer, Gaps: ts.Gaps, Lost: ts.LostToGaps.Seconds()}
}

// ErrSelection is what errors about the Video and Audio selection (a
// rendition that does not exist, a selection of nothing) match with
// errors.Is: the command's usage errors (exit 2).
var ErrSelection = errors.New("nothing selected that the broadcast has")

// selectionError is an error of the selection; it matches ErrSelection.
type selectionError struct{ msg string }

func (e *selectionError) Error() string        { return e.msg }
func (e *selectionError) Is(target error) bool { return target == ErrSelection }

func selectionErrorf(format string, args ...any) error {
	return &selectionError{msg: fmt.Sprintf(format, args...)}
}

// ErrSourceClosed is returned by a Feed whose source ended.
var ErrSourceClosed = errors.New("the source ended")

// Source is where broadcasts come from: a relay session (SessionSource),
// publishers that connected to a listener, or broadcasts in this process.
type Source interface {
	// Broadcast returns the broadcast at path (relative to the source's
	// root).
	Broadcast(path string) *model.Broadcast
	// Announced follows the broadcasts announced.
	Announced(ctx context.Context) (Feed, error)
	// Resolve returns the broadcast a rendition's "broadcast" reference in
	// b's catalog names.
	Resolve(b *model.Broadcast, ref string) (*model.Broadcast, error)
}

// Feed is a live list of announcements.
type Feed interface {
	// Next waits for the next change.
	Next(ctx context.Context) (Announcement, error)
	Close()
}

// Announcement is one broadcast starting (Active) or ending.
type Announcement struct {
	Path   string
	Active bool
}

// SessionSource is the Source of a moq-lite session (dialled with
// subscribe.Dial, or accepted by a subscribe.Server).
func SessionSource(s *subscribe.Session) Source { return sessionSource{s} }

type sessionSource struct{ s *subscribe.Session }

func (s sessionSource) Broadcast(path string) *model.Broadcast { return s.s.Broadcast(path) }

// Settle parks the session's waits afresh (subscribe.Session.Settle).
func (s sessionSource) Settle(ctx context.Context) { s.s.Settle(ctx) }

func (s sessionSource) Announced(ctx context.Context) (Feed, error) {
	a, err := s.s.Announced(ctx, "")
	if err != nil {
		return nil, err
	}
	return sessionFeed{a}, nil
}

func (s sessionSource) Resolve(b *model.Broadcast, ref string) (*model.Broadcast, error) {
	path, ok := subscribe.ResolveBroadcast(b.Name(), ref)
	if !ok {
		return nil, fmt.Errorf("broadcast reference %q leaves the session root", ref)
	}
	return s.s.Broadcast(path), nil
}

type sessionFeed struct{ a *subscribe.Announcements }

func (f sessionFeed) Next(ctx context.Context) (Announcement, error) {
	an, err := f.a.Next(ctx)
	if errors.Is(err, subscribe.ErrClosed) {
		err = ErrSourceClosed
	}
	return Announcement{Path: an.Path, Active: an.Active}, err
}

func (f sessionFeed) Close() { f.a.Close() }

// Err returns why the session ended (nil while it runs).
func (s sessionSource) Err() error { return s.s.Err() }

// Peer is the address of the publisher of an accepted session.
func (s sessionSource) Peer() string { return s.s.Remote() }

// Recorder records broadcasts as the Options say: one (Record) or every
// one a source announces (RecordAll), each to its own files. It is safe
// for concurrent use; Stats and Files can be read while it records.
type Recorder struct {
	opts Options
	log  *slog.Logger

	// catalogSlots bounds the first-catalog fetches running at once (see
	// Options.CatalogFetches); slotHold is catalogSlotHold but in tests.
	catalogSlots chan struct{}
	slotHold     time.Duration
	slotWaiters  atomic.Int64 // waiting for a place now

	mu     sync.Mutex
	active map[*export.Export]string // running recordings: their broadcast
	done   Stats
	files  []FileInfo
	tracks []TrackInfo // of the ended recordings
	// reserved counts the recordings RecordAll runs (MaxRecordings).
	reserved int
	// settle fires ReturnMemoryAfter after the newest start; freeMemory
	// is debug.FreeOSMemory but in tests.
	settle     *time.Timer
	freeMemory func()
	// sources are those Record and RecordAll record from now, by a
	// number of their own (a Source need not be comparable).
	sources    map[int]Source
	nextSource int
}

// New checks the options and returns a Recorder.
func New(opts Options) (*Recorder, error) {
	if opts.Output == nil {
		return nil, errors.New("record: Options.Output is nil: use record.Files(template, ...) or record.Stream(w)")
	}
	if opts.Format == "" {
		opts.Format = opts.Output.DefaultFormat()
	}
	if opts.Format == "" {
		return nil, fmt.Errorf("record: no Format, and the output does not tell one: end the path in .flv, .mkv, .webm, .ts or .mp4, or set Format")
	}
	if _, ok := muxers[opts.Format]; !ok {
		return nil, fmt.Errorf("record: unknown format %q", opts.Format)
	}
	if err := opts.Output.Check(opts); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Origin == "" {
		opts.Origin = "by the source"
	}
	if opts.CatalogFetches <= 0 {
		opts.CatalogFetches = DefaultCatalogFetches
	}
	return &Recorder{opts: opts, log: opts.Logger, active: map[*export.Export]string{},
		catalogSlots: make(chan struct{}, opts.CatalogFetches), slotHold: catalogSlotHold,
		freeMemory: debug.FreeOSMemory}, nil
}

// Options returns the options in use (with the defaults New filled in).
func (r *Recorder) Options() Options { return r.opts }

// Stats sums the counters of every recording, running or ended.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.done
	if len(r.active) > 0 {
		// While recording: the tracks being recorded now; after: the
		// tracks the ended recordings had.
		s.Tracks = 0
	}
	s.Recordings = len(r.active)
	for ex := range r.active {
		st := ex.Stats()
		s.Tracks += st.Tracks
		s.Frames += st.Frames
		s.Bytes += st.Bytes
		s.Late += st.Late
		s.Dropped += st.Dropped
		s.Media = max(s.Media, st.MediaTime)
		for _, ts := range ex.TrackStats() {
			s.Lost = max(s.Lost, ts.LostToGaps)
		}
	}
	return s
}

// Tracks returns the accounting of every track recorded so far: those of
// the ended recordings, then those running.
func (r *Recorder) Tracks() []TrackInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]TrackInfo{}, r.tracks...)
	for ex, name := range r.active {
		for _, ts := range ex.TrackStats() {
			out = append(out, trackInfo(name, ts))
		}
	}
	return out
}

// Files returns the files finished so far, in the order they finished.
func (r *Recorder) Files() []FileInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]FileInfo{}, r.files...)
}

func (r *Recorder) notice(msg string) { r.log.Log(context.Background(), LevelNotice, msg) }

// WaitHint says how long a wait lasts, for notices of a wait: until Wait,
// or until Ctrl-C (the command's words).
func (r *Recorder) WaitHint() string {
	if r.opts.Wait > 0 {
		return fmt.Sprintf("giving up after --wait %v", r.opts.Wait)
	}
	return "until Ctrl-C; --wait DURATION gives up after DURATION"
}

// waitCatalog waits for the first catalog of bc: at most Wait, saying once
// what it waits for when that takes longer than WaitNotice.
func (r *Recorder) waitCatalog(ctx context.Context, bc *model.Broadcast) (*catalog.Catalog, error) {
	name := bc.Name()
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if r.opts.Wait > 0 {
		wctx, cancel = context.WithTimeout(ctx, r.opts.Wait)
	}
	defer cancel()
	t := time.AfterFunc(WaitNotice, func() {
		r.notice(fmt.Sprintf("waiting for broadcast %q to be announced %s (%s; --list shows what is announced)", name, r.opts.Origin, r.WaitHint()))
	})
	defer t.Stop()
	var cat *catalog.Catalog
	release, err := r.catalogSlot(wctx)
	if err == nil {
		cat, err = firstCatalogWithRenditions(wctx, bc, func() {
			release() // a catalog came, without renditions yet
			r.notice(fmt.Sprintf("broadcast %q has no renditions in its catalog yet; waiting up to %v for them (a browser publisher adds them once its encoders run)", name, emptyCatalogWait))
		})
		release()
	}
	switch {
	case err == nil:
		return cat, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case wctx.Err() != nil:
		return nil, fmt.Errorf("broadcast %q was not announced %s within --wait %v (or sent no catalog); --list shows what is announced", name, r.opts.Origin, r.opts.Wait)
	}
	return nil, fmt.Errorf("broadcast %q: reading its catalog: %w; check the name with --list", name, err)
}

// catalogSlot waits for a place among the first-catalog fetches and
// returns the function that gives it back (safe to call more than once).
// The place is given back by itself after slotHold, so that broadcasts
// that never send a catalog cannot hold every place.
func (r *Recorder) catalogSlot(ctx context.Context) (release func(), err error) {
	r.slotWaiters.Add(1)
	select {
	case r.catalogSlots <- struct{}{}:
		r.slotWaiters.Add(-1)
	case <-ctx.Done():
		r.slotWaiters.Add(-1)
		return nil, ctx.Err()
	}
	var once sync.Once
	give := func() { once.Do(func() { <-r.catalogSlots }) }
	t := time.AfterFunc(r.slotHold, give)
	return func() {
		t.Stop()
		give()
	}, nil
}

// emptyCatalogWait bounds the wait for renditions after a catalog without
// any: a browser publisher (@moq/publish) publishes its catalog before its
// camera and encoders run, then adds them.
const emptyCatalogWait = 15 * time.Second

// firstCatalogWithRenditions returns the first catalog snapshot of b that
// lists a rendition. After one that lists none it says so (empty) and
// waits at most emptyCatalogWait for a better one, then returns the empty
// one (Plan refuses it, saying why).
func firstCatalogWithRenditions(ctx context.Context, b *model.Broadcast, empty func()) (*catalog.Catalog, error) {
	w, err := catalog.Watch(b, catalog.WatchOptions{})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	cat, err := w.Next(ctx)
	if err != nil || len(cat.Renditions()) > 0 {
		return cat, err
	}
	empty()
	wctx, cancel := context.WithTimeout(ctx, emptyCatalogWait)
	defer cancel()
	for {
		next, err := w.Next(wctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return cat, nil
		}
		if cat = next; len(cat.Renditions()) > 0 {
			return cat, nil
		}
	}
}

// FirstCatalog waits for the first catalog snapshot of b (catalog.json, or
// the MSF catalog for .msf names) and returns it.
func FirstCatalog(ctx context.Context, b *model.Broadcast) (*catalog.Catalog, error) {
	w, err := catalog.Watch(b, catalog.WatchOptions{})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	return w.Next(ctx)
}

// exportOptions are the engine options of a recording.
func (r *Recorder) exportOptions() export.Options {
	// Files wait out a network outage, so the groups a reconnect fetches
	// are not late; a player on a Stream gets what there is.
	_, live := r.opts.Output.(*stream)
	maxDelay := r.opts.MaxDelay
	switch {
	case live || maxDelay < 0:
		maxDelay = 0
	case maxDelay == 0:
		maxDelay = DefaultMaxDelay
	}
	return export.Options{Delay: r.opts.Delay, MaxDelay: maxDelay, Video: r.opts.Video, Audio: r.opts.Audio, Caps: r.opts.Format.Caps(),
		MediaTimeOnly: !live}
}

// Record records broadcast path of src to the output until the broadcast
// ends, Duration is reached or ctx ends; cancelling ctx finishes the files
// (cues, duration, index) before Record returns. Before any file is
// created it checks that the broadcast has something the selection and
// the container allow (see Plan).
func (r *Recorder) Record(ctx context.Context, src Source, path string) error {
	defer r.recordingFrom(src)()
	return r.withProgress(ctx, func() error { return r.record(ctx, src, path) })
}

// record records broadcast path of src until it ends (see Record) and
// returns the outcome.
func (r *Recorder) record(ctx context.Context, src Source, path string) error {
	ended := make(chan error, 1)
	r.startRecording(ctx, src, path, func(err error) { ended <- err })
	return <-ended
}

// startRecording records broadcast path of src, and calls done with the
// outcome when the recording ended. It prepares the recording in the
// calling goroutine (the first catalog, the file, the export), then starts
// the export with export.Export.Go and returns once it waits: a recording
// whose broadcast sends nothing holds no goroutine (a goroutine blocked
// under this setup would keep the 8 KB of stack the setup grew). done runs
// in the goroutine that ended the recording.
func (r *Recorder) startRecording(ctx context.Context, src Source, path string, done func(error)) {
	// A limit cuts the recording by ending its context with the reason:
	// the files are finished as on any stop (limits.go).
	if err := r.lowOnSpace(r.outputDir()); err != nil {
		done(fmt.Errorf("recording %q refused: %w", path, err))
		return
	}
	rctx, cut := context.WithCancelCause(ctx)
	end := func(err error) {
		if cause := context.Cause(rctx); errors.Is(cause, ErrLimit) && ctx.Err() == nil {
			r.log.Warn("recording cut", "broadcast", path, "publisher", peerOf(src), "reason", cause)
			err = nil
		}
		cut(nil)
		done(err)
	}
	rec, err := r.prepare(rctx, src, path, cut)
	if err != nil {
		end(err)
		return
	}
	rec.ex.Go(rctx, func(err error) { end(rec.result(err)) })
}

// peerOf names who publishes src's broadcasts, when the source knows.
func peerOf(src Source) string {
	if p, ok := src.(interface{ Peer() string }); ok {
		return p.Peer()
	}
	return ""
}

// recording is a recording prepared and running: its export, and what
// its end accounts for.
type recording struct {
	r      *Recorder
	src    Source
	bc     *model.Broadcast
	name   string
	ex     *export.Export
	tracks *countTracks
}

// prepare waits for the first catalog of broadcast path, checks that it
// has something to record (Plan), opens the first output and returns the
// recording with its export, not started yet.
func (r *Recorder) prepare(ctx context.Context, src Source, path string, cut func(error)) (*recording, error) {
	bc := src.Broadcast(path)
	name := bc.Name()
	cat, err := r.waitCatalog(ctx, bc)
	if err != nil {
		return nil, err
	}
	if err := r.Plan(name, cat); err != nil {
		return nil, err
	}
	opts := r.exportOptions()
	opts.MaxDuration = r.opts.Duration
	opts.Logger = r.log.With("broadcast", name)
	opts.Resolve = func(ref string) (*model.Broadcast, error) { return src.Resolve(bc, ref) }
	m, err := r.open(name, 0, cut)
	if err != nil {
		return nil, err
	}
	// A late track the file cannot add starts the next one when the
	// template numbers them.
	split := r.numbersFiles()
	if r.opts.Segment > 0 || split {
		m = segment.New(m, segment.Options{Duration: r.opts.Segment, SplitForLateTracks: split, Logger: opts.Logger,
			Next: func(n int) (mux.Muxer, error) { return r.open(name, n, cut) }})
	}
	// Count the tracks accepted, for the stats of an ended recording (the
	// engine's own count drops to 0 as tracks end).
	first := &countTracks{Muxer: m}
	ex := export.New(bc, first, opts)
	r.started(name, ex)
	return &recording{r: r, src: src, bc: bc, name: name, ex: ex, tracks: first}, nil
}

// result accounts for the ended recording and returns its outcome, given
// what its export returned.
func (rec *recording) result(err error) error {
	defer rec.r.ended(rec.name, rec.ex, rec.tracks.n)
	name := rec.name
	if err != nil {
		if we, ok := errors.AsType[*WriteError](err); ok {
			return fmt.Errorf("recording %q: %w", name, we)
		}
		return fmt.Errorf("recording %q: %w", name, err)
	}
	if berr := rec.bc.Err(); berr != nil {
		return fmt.Errorf("broadcast %q ended with an error: %w (what arrived before is in the output)", name, berr)
	}
	// A session that gave up ends its tracks before it closes their
	// broadcast with its error: ask the session too.
	if se, ok := rec.src.(interface{ Err() error }); ok {
		if serr := se.Err(); serr != nil && !errors.Is(serr, subscribe.ErrClosed) {
			return fmt.Errorf("broadcast %q ended with its connection: %w (what arrived before is in the output)", name, serr)
		}
	}
	return nil
}

func (r *Recorder) started(name string, ex *export.Export) {
	r.mu.Lock()
	r.active[ex] = name
	r.done.Recorded++
	if d := r.opts.ReturnMemoryAfter; d > 0 {
		// One timer for all recordings, pushed back by every start.
		if r.settle == nil {
			r.settle = time.AfterFunc(d, r.returnMemory)
		} else {
			r.settle.Reset(d)
		}
	}
	r.mu.Unlock()
}

// returnMemory hands the memory freed since the recordings started back
// to the operating system (Options.ReturnMemoryAfter).
//
// First the sources that can settle do (subscribe.Session.Settle parks its
// subscriptions' waits afresh, on the smaller stacks new goroutines get
// once the start is over), so that the stacks they leave are returned too.
// The runtime sizes new goroutines at a collection, by the stacks it saw:
// one runs first, so that the size is the waiting recordings' and not the
// start's.
func (r *Recorder) returnMemory() {
	r.log.Debug("recordings started: returning the memory their start left to the system")
	r.freeMemory()
	r.mu.Lock()
	srcs := make([]Source, 0, len(r.sources))
	for _, src := range r.sources {
		srcs = append(srcs, src)
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	for _, src := range srcs {
		if st, ok := src.(interface{ Settle(context.Context) }); ok {
			st.Settle(ctx)
		}
	}
	r.freeMemory()
}

// settleTimeout bounds how long returnMemory waits for the sources to
// settle.
const settleTimeout = 5 * time.Second

// recordingFrom notes that src is recorded from until the returned func
// runs (returnMemory settles it).
func (r *Recorder) recordingFrom(src Source) (done func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sources == nil {
		r.sources = map[int]Source{}
	}
	id := r.nextSource
	r.nextSource++
	r.sources[id] = src
	return func() {
		r.mu.Lock()
		delete(r.sources, id)
		r.mu.Unlock()
	}
}

func (r *Recorder) ended(name string, ex *export.Export, tracks int) {
	st := ex.Stats()
	r.mu.Lock()
	delete(r.active, ex)
	for _, ts := range ex.TrackStats() {
		r.done.Lost = max(r.done.Lost, ts.LostToGaps)
		r.tracks = append(r.tracks, trackInfo(name, ts))
	}
	r.done.Tracks += tracks
	r.done.Frames += st.Frames
	r.done.Bytes += st.Bytes
	r.done.Late += st.Late
	r.done.Dropped += st.Dropped
	r.done.Media = max(r.done.Media, st.MediaTime)
	r.mu.Unlock()
}

// Plan checks, before any file is created, that a recording of the
// broadcast name with catalog cat has something to record: the renditions
// named exist and the container can carry each of them, and at least one
// rendition is selected and recordable. Its errors blame what is wrong:
// the selection (wrapping ErrSelection), the input container or the
// output format (naming formats that would carry it).
func (r *Recorder) Plan(name string, cat *catalog.Catalog) error {
	rs := cat.Renditions()
	if len(rs) == 0 {
		return fmt.Errorf("broadcast %q has no renditions in its catalog; nothing to record", name)
	}
	byName := map[string]catalog.Rendition{}
	for _, rd := range rs {
		byName[rd.Name] = rd
	}
	opts := r.exportOptions()
	for _, want := range []struct {
		flag  string
		kind  catalog.Kind
		names []string
	}{{"--video", catalog.KindVideo, r.opts.Video}, {"--audio", catalog.KindAudio, r.opts.Audio}} {
		for _, n := range want.names {
			rd, ok := byName[n]
			if !ok || rd.Kind != want.kind {
				return selectionErrorf("broadcast %q has no %s rendition %q (it has %s); see --list -b %s", name, want.kind, n, renditionNames(rs, want.kind), name)
			}
			if err := export.Select(rd, opts, nil); err != nil {
				if !errors.Is(err, export.ErrInputContainer) && strings.Contains(err.Error(), " instead") {
					return fmt.Errorf("%s %s: %w", want.flag, n, err) // it says what to use
				}
				return fmt.Errorf("%s %s: %w; %s", want.flag, n, err, r.advice(name, []catalog.Rendition{rd}, err))
			}
		}
	}
	var (
		codecs []string
		why    []error
	)
	for _, rd := range rs {
		err := export.Select(rd, opts, nil)
		if err == nil {
			return nil
		}
		if !errors.Is(err, export.ErrNotSelected) {
			codecs = append(codecs, rd.Name+" ("+rd.Common().Codec+")")
			why = append(why, err)
		}
	}
	if len(why) == 0 {
		// Only "none" of one kind left nothing (the other kind is absent).
		return selectionErrorf("the selection leaves nothing of %q to record: it has video %s, audio %s; see --list -b %s",
			name, renditionNames(rs, catalog.KindVideo), renditionNames(rs, catalog.KindAudio), name)
	}
	if all(why, export.ErrInputContainer) {
		return fmt.Errorf("nothing of %q can be recorded: every selected rendition uses an input container this build does not read (%s)", name, errors.Join(why...))
	}
	return fmt.Errorf("%s cannot carry any selected rendition of %q (%s): %s", r.opts.Format, name, strings.Join(codecs, ", "), r.advice(name, rs, why[0]))
}

// advice says what to do about renditions rs that the output cannot take.
func (r *Recorder) advice(name string, rs []catalog.Rendition, err error) string {
	if !errors.Is(err, export.ErrInputContainer) {
		var others []string
		for _, f := range Formats {
			if f == r.opts.Format {
				continue
			}
			for _, rd := range rs {
				if Carries(f, rd) == nil {
					others = append(others, string(f))
					break
				}
			}
		}
		if len(others) > 0 {
			return "record with -f " + strings.Join(others, " or -f ")
		}
	}
	return "pick other renditions with --video/--audio (see --list -b " + name + ")"
}

// all reports whether every error in errs wraps target.
func all(errs []error, target error) bool {
	for _, e := range errs {
		if !errors.Is(e, target) {
			return false
		}
	}
	return true
}

func renditionNames(rs []catalog.Rendition, kind catalog.Kind) string {
	var n []string
	for _, r := range rs {
		if r.Kind == kind {
			n = append(n, r.Name)
		}
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

// Carries returns nil when format f can carry rendition r (by the one
// selection rule, export.Select).
func Carries(f Format, r catalog.Rendition) error {
	return export.Select(r, export.Options{Caps: f.Caps()}, nil)
}

// numbersFiles reports whether the output is files named with {n}, so
// that a late track the current file cannot add can start the next one.
func (r *Recorder) numbersFiles() bool {
	f, ok := r.opts.Output.(*files)
	return ok && f.t.Has("n")
}

// countTracks counts the tracks its muxer accepted.
type countTracks struct {
	mux.Muxer
	n int
}

func (c *countTracks) AddTrack(t mux.Track) error {
	err := c.Muxer.AddTrack(t)
	if err == nil {
		c.n++
	}
	return err
}

// RecordAll records every broadcast src announces, each to its own files,
// until ctx ends or the source does. With Duration it follows the
// announcements for that much wall-clock time, then waits for those
// recordings to end. With Wait it gives up when nothing is announced in
// that time. A broadcast announced again while its recording runs is
// recorded again after it.
func (r *Recorder) RecordAll(ctx context.Context, src Source) error {
	return r.withProgress(ctx, func() error { return r.recordAll(ctx, src, r.opts.Duration) })
}

// recordAll is RecordAll following announcements for follow (0: until ctx
// ends).
func (r *Recorder) recordAll(ctx context.Context, src Source, follow time.Duration) error {
	defer r.recordingFrom(src)()
	fctx, stop := ctx, context.CancelFunc(func() {})
	if follow > 0 {
		fctx, stop = context.WithTimeout(ctx, follow)
	}
	defer stop()
	feed, err := src.Announced(fctx)
	if err != nil {
		return fmt.Errorf("following announcements: %w; check the URL and the token, and that the relay is up", err)
	}
	defer feed.Close()
	var firstSeen atomic.Bool
	waitCtx, waitStop := context.WithCancel(fctx)
	defer waitStop()
	if r.opts.Wait > 0 {
		t := time.AfterFunc(r.opts.Wait, waitStop)
		defer t.Stop()
	}
	t := time.AfterFunc(WaitNotice, func() {
		if !firstSeen.Load() {
			r.notice("waiting for broadcasts to be announced " + r.opts.Origin + " (" + r.WaitHint() + ")")
		}
	})
	defer t.Stop()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		running = map[string]bool{}
		again   = map[string]bool{} // restarted while its recording ran
		// writeFailed is the first output write error: that recording
		// stopped, the others went on, and RecordAll returns it at its end.
		writeFailed error
	)
	start := func(path string) {
		mu.Lock()
		defer mu.Unlock()
		if running[path] {
			again[path] = true
			return
		}
		release, err := r.reserve()
		if err != nil {
			r.log.Warn("refused a broadcast", "broadcast", path, "publisher", peerOf(src), "reason", err)
			return
		}
		running[path] = true
		wg.Add(1)
		// Each recording (and each again) is started in a goroutine of
		// its own, which ends once the recording waits for media; the
		// recording's end runs in the goroutine that ended it.
		var launch func()
		launch = func() {
			r.log.Info("recording", "broadcast", path)
			r.startRecording(ctx, src, path, func(err error) {
				if err != nil && ctx.Err() == nil {
					r.log.Error("recording failed", "broadcast", path, "err", err)
				}
				mu.Lock()
				if _, ok := errors.AsType[*WriteError](err); ok && writeFailed == nil {
					writeFailed = err
				}
				if again[path] && ctx.Err() == nil {
					delete(again, path)
					mu.Unlock()
					go launch()
					return
				}
				delete(running, path)
				mu.Unlock()
				release()
				wg.Done()
			})
		}
		go launch()
	}
	var ferr error
	for {
		nctx := fctx
		if !firstSeen.Load() {
			nctx = waitCtx
		}
		an, err := feed.Next(nctx)
		if err != nil {
			if fctx.Err() == nil && waitCtx.Err() != nil {
				ferr = fmt.Errorf("no broadcast was announced %s within --wait %v; check the URL and the token, or wait longer", r.opts.Origin, r.opts.Wait)
			} else if fctx.Err() == nil {
				ferr = err
			}
			break
		}
		firstSeen.Store(true)
		if an.Active {
			start(an.Path)
		}
	}
	wg.Wait()
	if writeFailed != nil {
		return fmt.Errorf("%w (the other recordings went on)", writeFailed)
	}
	if ferr != nil && waitCtx.Err() != nil && fctx.Err() == nil {
		return ferr
	}
	if ferr != nil && !errors.Is(ferr, ErrSourceClosed) {
		return fmt.Errorf("following announcements: %w; the relay or publisher went away: start again to record what it announces next", ferr)
	}
	return ctx.Err()
}

// RecordAllFor is RecordAll following announcements for follow instead of
// Duration (0: until ctx ends): a listener that keeps accepting publishers
// uses 0.
func (r *Recorder) RecordAllFor(ctx context.Context, src Source, follow time.Duration) error {
	return r.withProgress(ctx, func() error { return r.recordAll(ctx, src, follow) })
}

// open opens output number n of broadcast name: a File of the Output with
// a muxer of the Format over it; cut ends the recording when the file
// reaches a limit.
func (r *Recorder) open(name string, n int, cut func(error)) (mux.Muxer, error) {
	f, err := r.opts.Output.Create(name, n, time.Now())
	if err != nil {
		return nil, err
	}
	path := ""
	if fo, ok := f.(*FileOutput); ok {
		path = fo.Name() // MP4 finishes a real file in place
	}
	cw := &countWriter{w: f}
	var w io.Writer = cw
	if s, ok := f.(io.Seeker); ok {
		w = &countWriteSeeker{countWriter: cw, s: s}
	}
	m, err := r.opts.Format.NewMuxer(w, MuxOptions{Path: path, KeepTimestamps: r.opts.KeepTimestamps, Logger: r.log.With("output", f.Name())})
	if err != nil {
		f.Close()
		return nil, err
	}
	info := FileInfo{Path: f.Name(), Broadcast: name, Segment: n, Format: string(r.opts.Format)}
	r.log.Info("writing", "path", info.Path, "format", r.opts.Format, "broadcast", name, "segment", n)
	if r.opts.OnFile != nil {
		r.opts.OnFile(FileEvent{File: info})
	}
	return &output{Muxer: m, file: f, count: cw, info: info, r: r, cut: cut}, nil
}

// output is a muxer with its File under it: closing it finalizes the
// container, then closes the file and reports it finished.
type output struct {
	mux.Muxer
	file   File
	count  *countWriter
	info   FileInfo
	r      *Recorder
	frames int64
	first  int64
	last   int64
	have   bool
	// cut ends the recording at a limit; checkedAt is the size at the
	// last look at the free space (limits.go).
	cut       func(error)
	checkedAt int64
}

// AddTrack warns, when FLV takes a codec only as Enhanced FLV, that older
// players cannot read it.
func (o *output) AddTrack(t mux.Track) error {
	err := o.Muxer.AddTrack(t)
	if err == nil && o.info.Format == string(FLV) && o.info.Segment == 0 && EnhancedFLV(t.Codec) {
		o.r.log.Warn(fmt.Sprintf("writing %s as Enhanced FLV: ffmpeg >= 7 plays it, Debian 12's ffmpeg 5.1 cannot read it; -f mkv plays everywhere", t.Codec), "output", o.info.Path)
	}
	return err
}

func (o *output) WriteFrame(f mux.Frame) error {
	err := o.Muxer.WriteFrame(f)
	if err == nil {
		o.frames++
		if !o.have || f.Timestamp < o.first {
			o.first = f.Timestamp
		}
		if !o.have || f.Timestamp > o.last {
			o.last = f.Timestamp
		}
		o.have = true
		o.checkOutput()
	}
	return err
}

func (o *output) Close() error {
	err := o.Muxer.Close()
	if cerr := o.file.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing %s: %w", o.info.Path, cerr)
	}
	o.r.log.Info("output finished", "path", o.info.Path)
	info := o.info
	info.Frames = o.frames
	if o.have {
		info.Media = float64(o.last-o.first) / 1e6
	}
	info.Size = o.count.n
	if sz, ok := o.file.(interface{ Size() int64 }); ok {
		info.Size = sz.Size()
	}
	o.r.mu.Lock()
	o.r.files = append(o.r.files, info)
	o.r.mu.Unlock()
	if o.r.opts.OnFile != nil {
		o.r.opts.OnFile(FileEvent{Finished: true, File: info, Err: err})
	}
	return err
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Flush passes a muxer's Flush on (MP4 hands each whole fragment to the
// file at once), when the output has one.
func (c *countWriter) Flush() error {
	if f, ok := c.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

// countWriteSeeker is a countWriter that passes Seek on, so that muxers
// still finalize.
type countWriteSeeker struct {
	*countWriter
	s io.Seeker
}

func (c *countWriteSeeker) Seek(offset int64, whence int) (int64, error) {
	return c.s.Seek(offset, whence)
}

// EnhancedFLVNote explains the flv* of --list and the warning of a recording.
const EnhancedFLVNote = "Enhanced FLV (H.265, AV1, VP9, Opus in FLV) needs ffmpeg >= 7 to play; Debian 12's ffmpeg 5.1 cannot read it: prefer -f mkv"

// EnhancedFLV reports whether FLV carries codec only in its Enhanced
// (E-RTMP) form: everything but H.264, AAC and MP3.
func EnhancedFLV(codec string) bool {
	switch mux.CodecFamily(codec) {
	case "h264", "aac", "mp3":
		return false
	}
	return true
}
