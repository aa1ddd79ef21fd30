package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/overload"
	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// app is one run of the command.
type app struct {
	cfg *Config
	env Env
	con *console
	log *slog.Logger

	rec  *record.Recorder  // the recordings
	svc  *service.Service  // the service face, when asked for (service.go)
	load *overload.Monitor // says when the recorder falls behind; refuses new recordings then
	// retStore is the retention's view of an object-store -o (store.go).
	retStore *storeRetention

	mu         sync.Mutex
	sources    map[Source]bool // open sources, for their reconnect counts
	reconnects int64           // of the sources that closed
	listenAddr string          // the address --listen is bound to
	waitSaid   bool            // --listen said it waits for announcements

	closeListen func() // closes the API-only --listen, after its recordings
}

func run(ctx context.Context, cfg *Config, env Env, con *console) error {
	if cfg.toStdout() && !cfg.List && env.StdoutTerminal && !cfg.apiOnly() {
		return usagef("refusing to write %s media to a terminal: give -o FILE, or pipe into a player (moq-export | ffplay -)", cfg.Format)
	}
	a := &app{cfg: cfg, env: env, con: con, log: cfg.logger(con)}
	signalLog.Store(a.log)
	if err := a.checkOverwrite(); err != nil {
		return err
	}
	if cfg.List {
		return a.runList(ctx)
	}
	a.load = overload.New(a.log)
	lctx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	go a.load.Run(lctx)
	if err := a.newService(); err != nil {
		return err
	}
	if err := a.newRecorder(ctx); err != nil {
		return err
	}
	// The listener outlives the recordings, to answer while they finish.
	sctx, stopService := context.WithCancel(context.Background())
	defer stopService()
	if err := a.startService(sctx); err != nil {
		return err
	}
	rctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if cfg.Timeout > 0 {
		t := time.AfterFunc(cfg.Timeout, func() { stop(errTimeout) })
		defer t.Stop()
	}
	var err error
	if cfg.apiOnly() {
		err = a.serveAPIOnly(rctx)
	} else {
		err = a.runRecording(rctx)
	}
	a.stopService()
	if a.closeListen != nil {
		a.closeListen()
	}
	recorded := a.summary(nil).Frames > 0 || cfg.apiOnly()
	switch {
	case context.Cause(rctx) == errTimeout && ctx.Err() == nil && reportable(rctx, err) == nil:
		if recorded {
			notice(a.log, fmt.Sprintf("stopped after --timeout %v", cfg.Timeout))
			err = nil
		} else {
			err = fmt.Errorf("nothing was recorded within --timeout %v", cfg.Timeout)
		}
	case ctx.Err() != nil && !recorded && reportable(ctx, err) == nil && context.Cause(ctx) != errTerminated:
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
		a.cfg.DemoCodecs = demo.SamplesIn(catalog.ContainerKind(a.cfg.DemoContainer))
	}
	if a.cfg.archive != "" {
		return listArchive(ctx, a.cfg, a.env.Stdout)
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
	a.sessionOpened(src)
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
		return a.record(ctx, src, name)
	})
}

// newRecorder makes the recorder of the flags: the CLI is the flags of
// record.Options, and the sources, messages and exit codes around it.
func (a *app) newRecorder(ctx context.Context) error {
	c := a.cfg
	var out record.Output
	if c.Format == record.Archive {
		var err error
		if out, err = archiveOutput(c); err != nil {
			return err
		}
	} else if c.toStdout() {
		out = record.Stream(a.env.Stdout)
	} else if c.objectStore {
		var err error
		if out, err = a.openStore(ctx); err != nil {
			return err
		}
	} else {
		var err error
		if out, err = record.Files(c.Output, record.FileOptions{Overwrite: c.Overwrite}); err != nil {
			return &UsageError{Msg: err.Error()}
		}
	}
	opts := record.Options{
		Output: out, Format: c.Format, Duration: c.Duration, Segment: c.Segment, HLSSegmentDuration: c.HLSSegment, HLSSegmentFiles: c.HLSSegmentFiles, Delay: c.Delay, MaxDelay: cliMaxDelay(c.MaxDelay),
		Video: c.Video, Audio: c.Audio, Text: c.Text, KeepTimestamps: c.KeepTimestamps, Wait: c.Wait,
		Logger: a.log, Origin: a.origin(), OnWait: a.sayWaiting, OnFile: a.fileFinished,
		MaxRecordings: c.MaxBroadcasts, MaxFileBytes: int64(c.MaxBytes), MinFreeBytes: int64(c.MinFree),
		OnRecording: a.newMemoryReturner().onRecording, Admit: a.load.Err,
	}
	if a.svc != nil {
		a.svc.Hooks(&opts)
	}
	rec, err := record.New(opts)
	if err != nil {
		return &UsageError{Msg: err.Error()}
	}
	a.rec = rec
	if a.svc != nil {
		a.svc.Watch(rec)
	}
	return nil
}

// returnMemoryAfter is how long after the last recording started the
// command hands the memory their starts left back to the system
// (memoryReturner): a recorder runs for hours, mostly
// waiting, and a burst of starts should not stay in its RSS.
const returnMemoryAfter = 10 * time.Second

// checkOverwrite settles, before anything connects, whether an existing -o
// file may be overwritten: -y says yes, -n no; otherwise the user is asked
// when stdin and stderr are terminals (as ffmpeg does), and the answer is
// no when nobody can answer.
func (a *app) checkOverwrite() error {
	c := a.cfg
	if c.List || c.toStdout() || c.objectStore || c.template.IsTemplate() || c.Overwrite || c.Format.Package() {
		return nil // a package that exists is continued, never overwritten
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

// openSource dials the URL, opens the archive it names, or starts the
// built-in demo.
func (a *app) openSource(ctx context.Context) (Source, error) {
	if a.cfg.archive != "" {
		if a.cfg.Follow <= 0 {
			batchGC()
		}
		return openArchiveSource(ctx, a.cfg, false)
	}
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
		a.reconnects += s.Reconnects()
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

// snapshot sums the counters of every recording, running or ended, and
// the reconnects of every source.
func (a *app) snapshot() Snapshot {
	var st record.Stats
	if a.rec != nil {
		st = a.rec.Stats()
	}
	s := Snapshot{Media: st.Media, Recording: st.Recordings, Tracks: st.Tracks, Frames: st.Frames, Bytes: st.Bytes, Late: st.Late, Dropped: st.Dropped, Lost: st.Lost, Upload: st.Upload}
	if st.Recorded <= 1 && s.Recording == 0 {
		s.Recording = 1 // a single recording: do not say "0 recording" at its end
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s.Reconnects = a.reconnects
	for src := range a.sources {
		s.Reconnects += src.Reconnects()
	}
	return s
}

// pickBroadcast returns -b, or the only broadcast announced under the URL.
func (a *app) pickBroadcast(ctx context.Context, src Source) (string, error) {
	if a.cfg.Broadcast != "" {
		return a.cfg.Broadcast, nil
	}
	names, err := a.announced(ctx, src, a.cfg.Wait, true)
	if errors.Is(err, subscribe.ErrNoDiscovery) {
		// A server that ties a session to one stream (MediaMTX): the URL
		// path names it.
		if p := a.urlPath(); p != "" {
			a.log.Info("the server offers no discovery; recording the stream the URL path names", "stream", p)
			return "", nil
		}
		return "", fmt.Errorf("the server at %s offers no discovery of broadcasts: name the stream in the URL path (moqt://HOST:PORT/live/test records the stream live/test) or with -b", redactURL(a.cfg.URL))
	}
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

// urlPath is the path of the URL (no slashes at the ends), "" when it has
// none.
func (a *app) urlPath() string {
	u, err := url.Parse(a.cfg.URL)
	if err != nil {
		return ""
	}
	return strings.Trim(u.Path, "/")
}

// origin says where announcements come from, for messages: "under URL"
// (redacted), or the publisher on --listen.
func (a *app) origin() string {
	if a.cfg.Listen != "" {
		a.mu.Lock()
		addr := a.listenAddr
		a.mu.Unlock()
		if addr == "" {
			addr = a.cfg.Listen
		}
		return "by the publisher on --listen " + addr
	}
	return "under " + redactURL(a.cfg.URL)
}

// settle is how long announcements are gathered after the last one before
// the set is taken as complete.
const settle = 300 * time.Millisecond

// waitNotice is how long a wait lasts before the command says what it
// waits for.
const waitNotice = record.WaitNotice

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
			notice(a.log, "waiting for a broadcast to be announced "+a.origin()+" ("+waitHint(a.cfg.Wait)+"; name one with -b to skip this)")
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

// record records broadcast name of src until it ends, --duration is
// reached or ctx ends (package record does it).
func (a *app) record(ctx context.Context, src Source, name string) error {
	return a.rec.Record(ctx, src, name)
}

// recordAll records every broadcast announced by src, each to the
// template; with follow > 0 it follows announcements for that long
// (--record-all --duration), then waits for the recordings to end.
func (a *app) recordAll(ctx context.Context, src Source, follow time.Duration) error {
	return a.rec.RecordAllFor(ctx, a.cfg.shard.Source(src), follow)
}

// cliMaxDelay maps --max-delay to record.Options.MaxDelay: 0 there means
// the default, 0 on the command line means never.
func cliMaxDelay(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
