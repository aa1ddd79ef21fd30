package service

import (
	"context"
	"errors"
	"github.com/moq-export/moq-export/internal/overload"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/moq-export/moq-export/record"
)

// Options configure a Service.
type Options struct {
	// Logger receives what the service does (default slog.Default()).
	Logger *slog.Logger
	// Token, when set, is the bearer token every request but /health
	// must carry (Authorization: Bearer TOKEN). Serve refuses an address
	// that is not loopback without one.
	Token string
	// Root is the directory the recordings are written under: API output
	// templates must stay in it, /files/ serves its finished files, and
	// retention deletes in it. Default ".".
	Root string
	// Base are the record options of the recordings the API starts (the
	// command's: Delay, limits, Logger, ...); a request sets Output,
	// Format, Duration, Segment, Video and Audio.
	Base record.Options
	// Webhooks receive every event (see Event); WebhookSecret signs them.
	Webhooks      []string
	WebhookSecret []byte
	// WebhookQueue bounds the events waiting for each webhook (default
	// 1024): beyond it events are dropped and counted.
	WebhookQueue int
	// OnFileFinished, when set, is a shell command run for each finished
	// file with the event in environment variables (see runHook).
	OnFileFinished string
	// Retention deletes old finished files under Root.
	Retention Retention
	// Ready, when set, says why the service is not ready (a relay not
	// connected); nil when it is. /ready also checks that Root is
	// writable.
	Ready func() error
	// Reconnects, when set, counts the reconnects of the command's
	// sources, for the metrics.
	Reconnects func() int64
	// History is how many ended recordings the API lists (default 200).
	History int
	// Load, when set, is the overload monitor's state, shown in the
	// metrics (load.go). Base.Admit refuses API starts while it says no.
	Load func() overload.State
}

// Service is the HTTP face of a recorder: see the package doc.
type Service struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	hooks   *dispatcher

	sweepMu sync.Mutex // one retention sweep at a time

	mu        sync.Mutex
	nextID    int
	byRec     map[*record.Recording]*entry
	byID      map[string]*entry
	ended     []*entry // newest last, at most History
	recorders []*record.Recorder
	writing   map[string]int // files being written, by path
	packages  map[string]int // of those, the packages' (HLS/DASH) main playlists
	listen    record.Source  // the command's --listen publishers (SetListen)
	closed    bool
}

// entry is what the service keeps of one recording.
type entry struct {
	id       string
	rec      *record.Recording
	api      bool     // started through the API
	webhooks []string // of this recording only (the API's)
	stopped  bool     // stopped through the API
	release  func()   // closes what the API opened for it
}

// New returns a Service; Hooks must be installed in the command's record
// options, and Watch given the command's Recorder.
func New(opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Root == "" {
		opts.Root = "."
	}
	if opts.History <= 0 {
		opts.History = 200
	}
	if opts.WebhookQueue <= 0 {
		opts.WebhookQueue = 1024
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, err
	}
	opts.Root = root
	s := &Service{opts: opts, log: opts.Logger, byRec: map[*record.Recording]*entry{}, byID: map[string]*entry{},
		writing: map[string]int{}, packages: map[string]int{}}
	s.metrics = newMetrics(s)
	s.hooks = newDispatcher(s)
	return s, nil
}

// Hooks installs the service's hooks in o (keeping those already set), so
// that the recordings of a Recorder made with o are the service's.
func (s *Service) Hooks(o *record.Options) { s.hooksFor(o, nil) }

func (s *Service) hooksFor(o *record.Options, webhooks []string) {
	onRec, onFile, onRefused := o.OnRecording, o.OnFile, o.OnRefused
	o.OnRefused = func(broadcast string, err error) {
		if onRefused != nil {
			onRefused(broadcast, err)
		}
		reason := "other"
		if le, ok := errors.AsType[*record.LimitError](err); ok {
			reason = string(le.Limit)
		}
		s.Refused(reason)
	}
	o.OnRecording = func(rec *record.Recording) {
		if onRec != nil {
			onRec(rec)
		}
		s.recordingEvent(rec, webhooks)
	}
	o.OnFile = func(e record.FileEvent) {
		if onFile != nil {
			onFile(e)
		}
		s.fileEvent(e)
	}
}

// Watch adds r's counters to the metrics.
func (s *Service) Watch(r *record.Recorder) {
	s.mu.Lock()
	s.recorders = append(s.recorders, r)
	s.mu.Unlock()
}

func (s *Service) recordingEvent(rec *record.Recording, webhooks []string) {
	s.mu.Lock()
	e := s.byRec[rec]
	if e == nil {
		s.nextID++
		e = &entry{id: strconv.Itoa(s.nextID), rec: rec, webhooks: webhooks}
		s.byRec[rec] = e
		s.byID[e.id] = e
	}
	ended := rec.State() == record.StateEnded
	if ended {
		delete(s.byRec, rec)
		s.ended = append(s.ended, e)
		if len(s.ended) > s.opts.History {
			old := s.ended[0]
			s.ended = s.ended[1:]
			delete(s.byID, old.id)
		}
	}
	s.mu.Unlock()
	if !ended {
		s.metrics.started.Inc()
		s.hooks.send(e, EventRecordingStarted, nil)
		return
	}
	result := e.result()
	s.metrics.ended.WithLabelValues(result).Inc()
	s.hooks.send(e, EventRecordingEnded, nil)
	if e.release != nil {
		e.release()
	}
}

// result names how an ended recording ended: ok, stopped or error.
func (e *entry) result() string {
	switch {
	case e.rec.Err() != nil:
		return "error"
	case e.stopped:
		return "stopped"
	}
	return "ok"
}

func (s *Service) fileEvent(ev record.FileEvent) {
	path := ev.File.Path
	pkg := record.Format(ev.File.Format).Package()
	s.mu.Lock()
	if ev.Finished {
		if s.writing[path]--; s.writing[path] <= 0 {
			delete(s.writing, path)
		}
		if s.packages[path]--; s.packages[path] <= 0 {
			delete(s.packages, path)
		}
	} else {
		s.writing[path]++
		if pkg {
			s.packages[path]++
		}
	}
	e := s.byRec[ev.Recording]
	s.mu.Unlock()
	if e == nil {
		return
	}
	if !ev.Finished {
		s.hooks.send(e, EventFileOpened, &ev)
		return
	}
	s.metrics.files.Inc()
	s.hooks.send(e, EventFileFinished, &ev)
}

// isWriting reports whether path is a file being written now.
func (s *Service) isWriting(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return lookup(s.writing, path) > 0
}

// hidden reports whether /files/ must not serve path yet: a file being
// written, unless it is a package's playlist. A package is served while
// it is recorded: its segments are complete before a playlist names them,
// and its manifests are replaced whole (EVENT playlists).
func (s *Service) hidden(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return lookup(s.writing, path) > lookup(s.packages, path)
}

// lookup returns the count of path in m, whose keys may be relative.
func lookup(m map[string]int, path string) int {
	if n, ok := m[path]; ok {
		return n
	}
	for p, n := range m {
		if abs, err := filepath.Abs(p); err == nil && abs == path {
			return n
		}
	}
	return 0
}

// entries returns the recordings running, then the ended ones kept,
// oldest first.
func (s *Service) entries() []*entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := make([]*entry, 0, len(s.byRec))
	for _, e := range s.byRec {
		live = append(live, e)
	}
	slices.SortFunc(live, func(a, b *entry) int { return a.rec.Started().Compare(b.rec.Started()) })
	return append(live, s.ended...)
}

func (s *Service) lookup(id string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

// Close stops the recordings the API started (their files finished, at
// most until ctx ends) and delivers the webhooks' queued events until ctx
// ends. The command stops its own recordings.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	var api []*entry
	for _, e := range s.byRec {
		if e.api {
			api = append(api, e)
		}
	}
	s.mu.Unlock()
	for _, e := range api {
		e.rec.Stop()
	}
	var err error
	for _, e := range api {
		select {
		case <-e.rec.Done():
		case <-ctx.Done():
			err = errors.Join(err, ctx.Err())
		}
	}
	s.hooks.close(ctx)
	return err
}
