package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	moqexport "github.com/moq-export/moq-export"
	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// app is one run of the command.
type app struct {
	cfg *Config
	env Env
	con *console
	log *slog.Logger

	mu       sync.Mutex
	sources  map[Source]bool         // open sources, for their reconnect counts
	active   map[*export.Export]bool // running recordings
	done     Snapshot                // counters of the recordings and sources that ended
	recorded int
	files    []FileSummary  // outputs finished
	tracks   []TrackSummary // accounting of the tracks of ended recordings
}

func run(ctx context.Context, cfg *Config, env Env, con *console) error {
	if cfg.toStdout() && !cfg.List && env.StdoutTerminal {
		return usagef("refusing to write %s media to a terminal: give -o FILE, or pipe into a player (moq-export | ffplay -)", cfg.Format)
	}
	a := &app{cfg: cfg, env: env, con: con, log: newLogger(con, cfg.LogFormat, logLevel(cfg.Quiet, cfg.Verbose)), active: map[*export.Export]bool{}}
	signalLog.Store(a.log)
	if err := a.checkOverwrite(); err != nil {
		return err
	}
	if cfg.List {
		return a.runList(ctx)
	}
	rctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if cfg.Timeout > 0 {
		t := time.AfterFunc(cfg.Timeout, func() { stop(errTimeout) })
		defer t.Stop()
	}
	err := a.runRecording(rctx)
	recorded := a.summary(nil).Frames > 0
	switch {
	case context.Cause(rctx) == errTimeout && ctx.Err() == nil && reportable(rctx, err) == nil:
		if recorded {
			notice(a.log, fmt.Sprintf("stopped after --timeout %v", cfg.Timeout))
			err = nil
		} else {
			err = fmt.Errorf("nothing was recorded within --timeout %v", cfg.Timeout)
		}
	case ctx.Err() != nil && !recorded && reportable(ctx, err) == nil:
		err = errNothingRecorded
	}
	if rerr := a.report(reportable(ctx, err)); err == nil {
		err = rerr
	}
	return err
}

// errTimeout is the cancellation cause of --timeout.
var errTimeout = errors.New("--timeout reached")

// errNothingRecorded ends a run that Ctrl-C stopped before anything was
// recorded: exit 130, not the 0 of a finished recording.
var errNothingRecorded = errors.New("interrupted before anything was recorded")

// reportable is the error a summary names: none for a run that Ctrl-C or
// a closed pipe ended, as Execute sees it.
func reportable(ctx context.Context, err error) error {
	if err == nil || isBrokenPipe(err) || errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// runList lists what the source offers: for the built-in demo without
// --demo-codecs, every test codec it has.
func (a *app) runList(ctx context.Context) error {
	if a.cfg.URL == "" && len(a.cfg.DemoCodecs) == 0 {
		a.cfg.DemoCodecs = moqexport.SampleNames()
	}
	src, err := a.openSource(ctx)
	if err != nil {
		return err
	}
	defer src.Close()
	return a.list(ctx, src)
}

// runRecording records what the flags say until it ends.
func (a *app) runRecording(ctx context.Context) error {
	if a.cfg.Listen != "" {
		return a.withProgress(ctx, a.listen)
	}
	src, err := a.openSource(ctx)
	if err != nil {
		return err
	}
	// Closed before the summary: its reconnects count.
	defer a.addSource(src)()
	defer src.Close()
	if a.cfg.RecordAll {
		return a.withProgress(ctx, func(ctx context.Context) error { return a.recordAll(ctx, src, a.cfg.Duration) })
	}
	name, err := a.pickBroadcast(ctx, src)
	if err != nil {
		return err
	}
	return a.withProgress(ctx, func(ctx context.Context) error {
		return a.record(ctx, src, src.Broadcast(name))
	})
}

// checkOverwrite settles, before anything connects, whether an existing -o
// file may be overwritten: -y says yes, -n no; otherwise the user is asked
// when stdin and stderr are terminals (as ffmpeg does), and the answer is
// no when nobody can answer.
func (a *app) checkOverwrite() error {
	c := a.cfg
	if c.List || c.toStdout() || c.template.IsTemplate() || c.Overwrite {
		return nil
	}
	st, err := os.Stat(c.Output)
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	refuse := fmt.Errorf("%s already exists: pass -y to overwrite it, or give -o another name", c.Output)
	if c.NoOverwrite || !a.env.StdinTerminal || !a.env.StderrTerminal || a.env.Stdin == nil {
		return refuse
	}
	fmt.Fprintf(a.con, "moq-export: %s already exists. Overwrite? [y/N] ", c.Output)
	line, _ := bufio.NewReader(a.env.Stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		c.Overwrite = true
		return nil
	}
	return fmt.Errorf("not overwriting %s: pass -y to overwrite it, or give -o another name", c.Output)
}

// openSource dials the URL, or starts the built-in demo.
func (a *app) openSource(ctx context.Context) (Source, error) {
	if a.cfg.URL == "" {
		if a.cfg.Broadcast == "" {
			a.cfg.Broadcast = demoBroadcast
		}
		return startDemo(ctx, a.cfg, a.con, a.log)
	}
	return dial(ctx, a.cfg, a.log)
}

// addSource counts the reconnects of s in the progress line until the
// returned function is called (when s closed), which keeps its count but
// not s: a --listen service must not hold every session it accepted.
func (a *app) addSource(s Source) (remove func()) {
	a.mu.Lock()
	if a.sources == nil {
		a.sources = map[Source]bool{}
	}
	a.sources[s] = true
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		delete(a.sources, s)
		a.done.Reconnects += s.Reconnects()
		a.mu.Unlock()
	}
}

// withProgress runs fn with the progress line on stderr when wanted.
func (a *app) withProgress(ctx context.Context, fn func(context.Context) error) error {
	show := a.cfg.Progress == "always" || a.cfg.Progress == "auto" && a.env.StderrTerminal && !a.cfg.Quiet
	if !show {
		return fn(ctx)
	}
	pctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		interval := time.Second
		if a.env.StderrTerminal {
			interval = 250 * time.Millisecond
		}
		if a.cfg.LogFormat == logJSON {
			logProgress(pctx, a.log, interval, a.snapshot)
			return
		}
		runProgress(pctx, a.con, interval, a.snapshot)
	}()
	err := fn(ctx)
	stop()
	<-done
	return err
}

// snapshot sums the counters of every recording, running or ended.
func (a *app) snapshot() Snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.done
	if len(a.active) > 0 {
		// While recording: the tracks being recorded now; after: the
		// tracks the ended recordings had.
		s.Tracks = 0
	}
	s.Recording = len(a.active)
	if a.recorded <= 1 && s.Recording == 0 {
		s.Recording = 1 // a single recording: do not say "0 recording" at its end
	}
	for ex := range a.active {
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
	for src := range a.sources {
		s.Reconnects += src.Reconnects()
	}
	return s
}

// fileWritten adds a finished output to the summary.
func (a *app) fileWritten(f FileSummary) {
	a.mu.Lock()
	a.files = append(a.files, f)
	a.mu.Unlock()
}

func (a *app) started(ex *export.Export) {
	a.mu.Lock()
	a.active[ex] = true
	a.recorded++
	a.mu.Unlock()
}

func (a *app) ended(name string, ex *export.Export, tracks int) {
	st := ex.Stats()
	a.mu.Lock()
	delete(a.active, ex)
	for _, ts := range ex.TrackStats() {
		a.done.Lost = max(a.done.Lost, ts.LostToGaps)
		a.tracks = append(a.tracks, trackSummary(name, ts))
	}
	a.done.Tracks += tracks
	a.done.Frames += st.Frames
	a.done.Bytes += st.Bytes
	a.done.Late += st.Late
	a.done.Dropped += st.Dropped
	a.done.Media = max(a.done.Media, st.MediaTime)
	a.mu.Unlock()
}

// pickBroadcast returns -b, or the only broadcast announced under the URL.
func (a *app) pickBroadcast(ctx context.Context, src Source) (string, error) {
	if a.cfg.Broadcast != "" {
		return a.cfg.Broadcast, nil
	}
	names, err := a.announced(ctx, src, a.cfg.Wait, true)
	if err != nil {
		return "", err
	}
	switch len(names) {
	case 1:
		a.log.Info("recording the only broadcast announced", "broadcast", names[0])
		return names[0], nil
	case 0:
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return "", fmt.Errorf("no broadcast was announced %s within --wait %v; check the URL and the token, or wait longer", a.origin(), a.cfg.Wait)
	}
	return "", usagef("%d broadcasts are announced %s (%s): pick one with -b NAME, or record them all with --record-all -o 'rec/{broadcast}%s'",
		len(names), a.origin(), strings.Join(names, ", "), a.cfg.Format.Ext())
}

// origin says where announcements come from, for messages: "under URL"
// (redacted), or the publisher on --listen.
func (a *app) origin() string {
	if a.cfg.Listen != "" {
		return "by the publisher on --listen " + a.cfg.Listen
	}
	return "under " + redactURL(a.cfg.URL)
}

// settle is how long announcements are gathered after the last one before
// the set is taken as complete.
const settle = 300 * time.Millisecond

// waitNotice is how long a wait lasts before the command says what it
// waits for.
const waitNotice = 2 * time.Second

// announced waits for broadcasts to be announced under the URL and returns
// them once no new one arrived for settle. With wait > 0 it returns an
// empty list when nothing was announced after wait; otherwise it waits
// until ctx ends. With say, a wait longer than waitNotice is announced once
// on stderr.
func (a *app) announced(ctx context.Context, src Source, wait time.Duration, say bool) ([]string, error) {
	feed, err := src.Announced(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing broadcasts: %w; check the URL and the token, or name the broadcast with -b", err)
	}
	defer feed.Close()
	active := map[string]bool{}
	first := true
	if say {
		t := time.AfterFunc(waitNotice, func() {
			notice(a.log, "waiting for a broadcast to be announced "+a.origin()+" ("+a.waitHint()+"; name one with -b to skip this)")
		})
		defer t.Stop()
	}
	for {
		limit := settle
		if first {
			limit = wait
		}
		nctx, cancel := ctx, context.CancelFunc(func() {})
		if limit > 0 {
			nctx, cancel = context.WithTimeout(ctx, limit)
		}
		an, err := feed.Next(nctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				break
			}
			return nil, fmt.Errorf("listing broadcasts: %w; check the URL and the token, or name the broadcast with -b", err)
		}
		first = false
		if an.Active {
			active[an.Path] = true
		} else {
			delete(active, an.Path)
		}
	}
	return slices.Sorted(maps.Keys(active)), nil
}

// waitHint says how long a wait lasts, for the waiting notices.
func (a *app) waitHint() string {
	if a.cfg.Wait > 0 {
		return fmt.Sprintf("giving up after --wait %v", a.cfg.Wait)
	}
	return "until Ctrl-C; --wait DURATION gives up after DURATION"
}

// waitCatalog waits for the first catalog of bc: at most --wait, saying
// once what it waits for when that takes longer than waitNotice (a -b
// broadcast that is not announced sends none).
func (a *app) waitCatalog(ctx context.Context, bc *model.Broadcast) (*catalog.Catalog, error) {
	name := bc.Name()
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if a.cfg.Wait > 0 {
		wctx, cancel = context.WithTimeout(ctx, a.cfg.Wait)
	}
	defer cancel()
	t := time.AfterFunc(waitNotice, func() {
		notice(a.log, fmt.Sprintf("waiting for broadcast %q to be announced %s (%s; --list shows what is announced)", name, a.origin(), a.waitHint()))
	})
	defer t.Stop()
	cat, err := firstCatalog(wctx, bc)
	switch {
	case err == nil:
		return cat, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case wctx.Err() != nil:
		return nil, fmt.Errorf("broadcast %q was not announced %s within --wait %v (or sent no catalog); --list shows what is announced", name, a.origin(), a.cfg.Wait)
	}
	return nil, fmt.Errorf("broadcast %q: reading its catalog: %w; check the name with --list", name, err)
}

// record exports one broadcast to the output (or output template) until
// it ends, --duration is reached or ctx ends.
func (a *app) record(ctx context.Context, src Source, bc *model.Broadcast) error {
	name := bc.Name()
	cat, err := a.waitCatalog(ctx, bc)
	if err != nil {
		return err
	}
	if err := a.plan(name, cat); err != nil {
		return err
	}
	opts := a.exportOptions()
	opts.MaxDuration = a.cfg.Duration
	opts.Logger = a.log.With("broadcast", name)
	opts.Resolve = func(ref string) (*model.Broadcast, error) { return src.Resolve(bc, ref) }
	m, err := a.openOutput(name, 0)
	if err != nil {
		return err
	}
	// The first output counts the tracks it accepted, for the final
	// progress line (the engine's own count drops to 0 as tracks end).
	first := &countTracks{Muxer: m}
	m = first
	if a.cfg.Segment > 0 {
		opts.Segment = a.cfg.Segment
		opts.NextMuxer = func(n int) (mux.Muxer, error) { return a.openOutput(name, n) }
	}
	ex := export.New(bc, m, opts)
	a.started(ex)
	defer func() { a.ended(name, ex, first.n) }()
	if err := ex.Run(ctx); err != nil {
		if we, ok := errors.AsType[*writeError](err); ok {
			return fmt.Errorf("recording %q: %w", name, we)
		}
		// Execute tells Ctrl-C and a closed pipe from failures.
		return fmt.Errorf("recording %q: %w", name, err)
	}
	if berr := bc.Err(); berr != nil {
		return fmt.Errorf("broadcast %q ended with an error: %w (what arrived before is in the output)", name, berr)
	}
	return nil
}

// plan checks, before any file is created, that the recording has
// something to record: the renditions named exist and the container can
// carry each of them, and at least one rendition is selected and
// recordable. Its errors blame what is wrong: the selection, the input
// container or the output format.
func (a *app) plan(name string, cat *catalog.Catalog) error {
	rs := cat.Renditions()
	if len(rs) == 0 {
		return fmt.Errorf("broadcast %q has no renditions in its catalog; nothing to record", name)
	}
	byName := map[string]catalog.Rendition{}
	for _, r := range rs {
		byName[r.Name] = r
	}
	opts := a.exportOptions()
	for _, want := range []struct {
		flag  string
		kind  catalog.Kind
		names []string
	}{{"--video", catalog.KindVideo, a.cfg.Video}, {"--audio", catalog.KindAudio, a.cfg.Audio}} {
		for _, n := range want.names {
			r, ok := byName[n]
			if !ok || r.Kind != want.kind {
				return usagef("broadcast %q has no %s rendition %q (it has %s); see --list -b %s", name, want.kind, n, renditionNames(rs, want.kind), name)
			}
			if err := export.Select(r, opts, nil); err != nil {
				if !errors.Is(err, export.ErrInputContainer) && strings.Contains(err.Error(), " instead") {
					return fmt.Errorf("%s %s: %w", want.flag, n, err) // it says what to use
				}
				return fmt.Errorf("%s %s: %w; %s", want.flag, n, err, a.advice(name, []catalog.Rendition{r}, err))
			}
		}
	}
	var (
		codecs []string
		why    []error
	)
	for _, r := range rs {
		err := export.Select(r, opts, nil)
		if err == nil {
			return nil
		}
		if !errors.Is(err, export.ErrNotSelected) {
			codecs = append(codecs, r.Name+" ("+r.Common().Codec+")")
			why = append(why, err)
		}
	}
	if len(why) == 0 {
		// Only --video/--audio none left nothing (the other kind is absent).
		return usagef("the selection leaves nothing of %q to record: it has %s; see --list -b %s", name, renditionSummary(rs), name)
	}
	if all(why, export.ErrInputContainer) {
		return fmt.Errorf("nothing of %q can be recorded: every selected rendition uses an input container this build does not read (%s)", name, errors.Join(why...))
	}
	return fmt.Errorf("%s cannot carry any selected rendition of %q (%s): %s", a.cfg.Format, name, strings.Join(codecs, ", "), a.advice(name, rs, why[0]))
}

// advice says what to do about renditions rs that the output cannot take.
func (a *app) advice(name string, rs []catalog.Rendition, err error) string {
	if errors.Is(err, export.ErrInputContainer) {
		return "pick other renditions with --video/--audio (see --list -b " + name + ")"
	}
	var others []string
	for _, f := range Formats {
		if f == a.cfg.Format {
			continue
		}
		for _, r := range rs {
			if carries(f, r) == nil {
				others = append(others, string(f))
				break
			}
		}
	}
	if len(others) > 0 {
		return "record with -f " + strings.Join(others, " or -f ")
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

// renditionSummary names the renditions of each kind, for messages.
func renditionSummary(rs []catalog.Rendition) string {
	return "video " + renditionNames(rs, catalog.KindVideo) + ", audio " + renditionNames(rs, catalog.KindAudio)
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

// exportOptions returns the engine options that select renditions: the
// ones named with --video/--audio that the output format carries.
func (a *app) exportOptions() export.Options {
	// Files wait out a network outage, so the groups a reconnect fetches
	// are not late; a player on stdout gets what there is.
	return export.Options{Delay: a.cfg.Delay, Video: a.cfg.Video, Audio: a.cfg.Audio, Caps: a.cfg.Format.Caps(),
		MediaTimeOnly: !a.cfg.toStdout()}
}

// carries returns nil when format f can carry rendition r (export.Select
// with no renditions named and no count).
func carries(f Format, r catalog.Rendition) error {
	return export.Select(r, export.Options{Caps: f.Caps()}, nil)
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

// output is a muxer with the file under it: closing it finalizes the
// container, then closes the file.
type output struct {
	mux.Muxer
	out  io.Closer
	path string
	log  *slog.Logger
	// Set by openOutput: the file summary's fields, and where it goes.
	info   FileSummary
	size   func() int64
	count  counted
	closed func(FileSummary)
}

// AddTrack warns, when FLV takes a codec only as Enhanced FLV, that older
// players cannot read it.
func (o *output) AddTrack(t mux.Track) error {
	err := o.Muxer.AddTrack(t)
	if err == nil && o.info.Format == string(FLV) && o.info.Segment == 0 && enhancedFLV(t.Codec) {
		o.log.Warn(fmt.Sprintf("writing %s as Enhanced FLV: ffmpeg >= 7 plays it, Debian 12's ffmpeg 5.1 cannot read it; -f mkv plays everywhere", t.Codec), "output", o.path)
	}
	return err
}

func (o *output) WriteFrame(f mux.Frame) error {
	err := o.Muxer.WriteFrame(f)
	if err == nil {
		o.count.frame(f)
	}
	return err
}

func (o *output) Close() error {
	err := o.Muxer.Close()
	if cerr := o.out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing %s: %w", o.path, cerr)
	}
	o.log.Info("output finished", "path", o.path)
	if o.closed != nil {
		fs := o.info
		fs.Frames, fs.Media = o.count.frames, o.count.media()
		if o.size != nil {
			fs.Size = o.size()
		}
		o.closed(fs)
	}
	return err
}

// openOutput opens output number n of broadcast name: stdout, the -o file,
// or the template expanded.
func (a *app) openOutput(name string, n int) (mux.Muxer, error) {
	var (
		w    io.Writer
		c    io.Closer
		path = "stdout"
		file string // the output file, "" for stdout
		size func() int64
	)
	switch {
	case a.cfg.toStdout():
		cw := &countWriter{w: a.env.Stdout}
		so := newStreamOutput(cw, 50*time.Millisecond)
		w, c = so, so
		size = func() int64 { return cw.n }
	case !a.cfg.template.IsTemplate():
		path = a.cfg.Output
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("creating the output directory: %w; check the path and its permissions", err)
			}
		}
		f, err := createFile(path, a.cfg.Overwrite)
		if errors.Is(err, errExists) {
			return nil, fmt.Errorf("%s already exists: pass -y to overwrite it, or give -o another name", path)
		}
		if err != nil {
			return nil, fmt.Errorf("creating the output: %w; check the path and its permissions", err)
		}
		fo := newFileOutput(f)
		w, c, file = fo, fo, path
	default:
		p, err := a.cfg.template.Expand(name, n, time.Now())
		if err != nil {
			return nil, err
		}
		f, p, err := createUnique(a.cfg.template.Dir(), p)
		if err != nil {
			return nil, fmt.Errorf("creating the output: %w; check the path and its permissions", err)
		}
		path = p
		fo := newFileOutput(f)
		w, c, file = fo, fo, p
	}
	m, err := a.cfg.Format.NewMuxer(w, MuxOptions{Path: file, KeepTimestamps: a.cfg.KeepTimestamps, Logger: a.log.With("output", path)})
	if err != nil {
		c.Close()
		return nil, err
	}
	a.log.Info("writing", "path", path, "format", a.cfg.Format, "broadcast", name, "segment", n)
	info := FileSummary{Path: path, Broadcast: name, Segment: n, Format: string(a.cfg.Format)}
	if path == "stdout" {
		info.Path = "-"
	} else {
		size = func() int64 {
			st, err := os.Stat(path)
			if err != nil {
				return 0
			}
			return st.Size()
		}
	}
	return &output{Muxer: m, out: c, path: path, log: a.log, info: info, size: size, closed: a.fileWritten}, nil
}

// recordAll records every broadcast announced by src, each to the
// template, until ctx ends or the source does. With follow > 0 it records
// what is announced during the first follow of wall-clock time, then waits
// for those recordings to end (--record-all --duration). It gives up when
// nothing is announced within --wait.
func (a *app) recordAll(ctx context.Context, src Source, follow time.Duration) error {
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
	if a.cfg.Wait > 0 {
		t := time.AfterFunc(a.cfg.Wait, waitStop)
		defer t.Stop()
	}
	t := time.AfterFunc(waitNotice, func() {
		if !firstSeen.Load() {
			notice(a.log, "waiting for broadcasts to be announced "+a.origin()+" ("+a.waitHint()+")")
		}
	})
	defer t.Stop()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		running = map[string]bool{}
		again   = map[string]bool{} // restarted while its recording ran
		// writeFailed is the first output write error: that recording
		// stopped, the others went on, and the run exits 1 at its end.
		writeFailed error
	)
	var start func(path string)
	start = func(path string) {
		mu.Lock()
		defer mu.Unlock()
		if running[path] {
			again[path] = true
			return
		}
		running[path] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				a.log.Info("recording", "broadcast", path)
				err := a.record(ctx, src, src.Broadcast(path))
				if err != nil && ctx.Err() == nil {
					a.log.Error("recording failed", "broadcast", path, "err", err)
				}
				mu.Lock()
				if _, ok := errors.AsType[*writeError](err); ok && writeFailed == nil {
					writeFailed = err
				}
				if again[path] && ctx.Err() == nil {
					delete(again, path)
					mu.Unlock()
					continue
				}
				delete(running, path)
				mu.Unlock()
				return
			}
		}()
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
				ferr = fmt.Errorf("no broadcast was announced %s within --wait %v; check the URL and the token, or wait longer", a.origin(), a.cfg.Wait)
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
	if ferr != nil && !errors.Is(ferr, errSourceClosed) {
		return fmt.Errorf("following announcements: %w; the relay or publisher went away: start again to record what it announces next", ferr)
	}
	return ctx.Err()
}
