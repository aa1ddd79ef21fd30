package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/objstore"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
	"github.com/spf13/cobra"
)

// Version and Commit are what --version and the version command print; a
// build can set them with
//
//	go build -ldflags "-X github.com/moq-export/moq-export/internal/cli.Version=v1.2.3 -X github.com/moq-export/moq-export/internal/cli.Commit=$(git rev-parse HEAD)" ./cmd/moq-export
//
// Empty means what the Go toolchain stamped into the build info: the module
// version (a tag, or a pseudo-version naming the commit, when built in a
// clone) and the VCS revision.
var Version, Commit string

// version describes the build: "v1.2.3 (commit 0123456789ab, 2026-12-01T09:40:00Z, modified)".
func version() string {
	v, commit, when, modified := Version, Commit, "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if commit == "" {
					commit = s.Value
				}
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if commit == "" {
		return v + " (" + noCommitHint(os.Getenv("GOFLAGS")) + ")"
	}
	parts := []string{"commit " + commit[:min(len(commit), 12)]}
	if when != "" {
		parts = append(parts, when)
	}
	if modified {
		parts = append(parts, "modified")
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}

// noCommitHint says why a build names no commit and how to get one. The
// go command stamps the commit only in a git clone, and not at all with
// -buildvcs=false, which GOFLAGS (the environment, or 'go env -w') often
// sets in containers and CI; the build info does not say which it was.
func noCommitHint(goflags string) string {
	if strings.Contains(goflags, "-buildvcs=false") {
		return "no commit recorded: GOFLAGS has -buildvcs=false, which turns the go command's VCS stamping off; in a clone build with 'GOFLAGS= go build ./cmd/moq-export'"
	}
	return "no commit recorded: build with 'go build ./cmd/moq-export' or 'go install ./cmd/moq-export' in a git clone; " +
		"if that was done, GOFLAGS=-buildvcs=false (see 'go env GOFLAGS') turned VCS stamping off: build with 'go build -buildvcs=true ./cmd/moq-export'"
}

// flagErrorHint adds to a flag error what an ffmpeg user meant: the URL
// is an argument (not -i), and --duration takes a unit (not -t 5).
func flagErrorHint(msg string) string {
	switch {
	case strings.Contains(msg, "unknown shorthand flag: 'i'"):
		return msg + ": moq-export takes the URL as its argument, as in 'moq-export URL -o out.mkv' (ffmpeg's -i is not needed)"
	case strings.Contains(msg, "unknown shorthand flag: 't'"):
		return msg + ": to stop after some media use --duration with a unit, e.g. --duration 5s (ffmpeg's -t)"
	case strings.Contains(msg, "missing unit in duration"):
		return msg + ": durations need a unit, e.g. 5s, 1m30s, 2h, 500ms"
	}
	return msg
}

// Exit codes.
const (
	ExitOK          = 0
	ExitRuntime     = 1
	ExitUsage       = 2
	ExitInterrupted = 130 // a second Ctrl-C: quit without finishing the output
)

// Env is what the command reads and writes besides its arguments.
type Env struct {
	Stdin  io.Reader // nil: nothing to read (no overwrite question is asked)
	Stdout io.Writer
	Stderr io.Writer
	// StdinTerminal, StdoutTerminal and StderrTerminal say whether those
	// are terminals: media is never written to a terminal, progress is
	// shown by default only on one, and whether to overwrite a file is
	// asked only when someone can answer.
	StdinTerminal, StdoutTerminal, StderrTerminal bool
	// Getenv reads the environment (MOQ_TOKEN); nil reads nothing.
	Getenv func(string) string
}

func (e Env) getenv(key string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(key)
}

// errInterrupted is the cancellation cause of Ctrl-C, errTerminated of
// SIGTERM (a supervisor stopping a service: exit 0 once the files are
// finished, even when nothing was recorded).
var (
	errInterrupted = errors.New("interrupted")
	errTerminated  = errors.New("terminated")
)

// signalLog is the logger of the running command, for what Main says on a
// signal.
var signalLog atomic.Pointer[slog.Logger]

// Main runs the command with the process's arguments, stdio and signals,
// and returns the exit code. The first SIGINT or SIGTERM stops the
// recording and finalizes the file; a second one exits at once.
func Main(args []string) int {
	setupProcess()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	// With SIGPIPE notified, a write to a closed stdout pipe returns EPIPE
	// instead of killing the process, so the recording ends cleanly.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	go func() {
		s := <-sigs
		log := signalLog.Load()
		if log == nil {
			log = newLogger(os.Stderr, logText, LevelNotice)
		}
		notice(log, fmt.Sprintf("%v: finishing the output (press Ctrl-C again to quit at once)", s))
		if s == syscall.SIGTERM {
			cancel(errTerminated)
		} else {
			cancel(errInterrupted)
		}
		select {
		case <-sigs:
			log.Warn("quitting without finishing the output")
			os.Exit(ExitInterrupted)
		case <-time.After(shutdownBound + 5*time.Second):
			log.Error(fmt.Sprintf("the output was not finished within %v of %v; quitting", shutdownBound+5*time.Second, s))
			os.Exit(ExitRuntime)
		}
	}()
	return Execute(ctx, args, Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		StdinTerminal: isTerminal(os.Stdin), StdoutTerminal: isTerminal(os.Stdout), StderrTerminal: isTerminal(os.Stderr),
		Getenv: os.Getenv,
	})
}

// Execute runs the command and returns the exit code. Cancelling ctx with
// any cause stops a recording the way Ctrl-C does (exit 0).
func Execute(ctx context.Context, args []string, env Env) int {
	con := newConsole(env.Stderr, env.StderrTerminal, redactorFor(args))
	cfg := &Config{}
	var runErr error
	cmd := newCommand(cfg, func() error {
		if cfg.ReplayTo != "" {
			runErr = publishReplayTo(ctx, cfg, cfg.logger(con))
			return runErr
		}
		if cfg.Replay {
			runErr = serveReplay(ctx, cfg, cfg.logger(con))
			return runErr
		}
		if cfg.DemoTo != "" {
			runErr = publishDemoTo(ctx, cfg, cfg.logger(con))
			return runErr
		}
		if err := cfg.resolveToken(env); err != nil {
			return err
		}
		con.addSecret(cfg.token)
		runErr = run(ctx, cfg, env, con)
		return runErr
	})
	cmd.SetArgs(args)
	cmd.SetOut(env.Stdout)
	cmd.SetErr(con)
	err := cmd.ExecuteContext(ctx)
	// A flag that did not parse may come before --log-format: look for it
	// in the arguments, so a service's usage errors are JSON too.
	format := cfg.LogFormat
	if format != logJSON && logFormatArg(args) == logJSON {
		format = logJSON
	}
	log := newStampedLogger(con, format, logLevel(cfg.Quiet, cfg.Verbose), cfg.LogTime)
	switch {
	case err == nil:
		return ExitOK
	case IsUsageError(err):
		const hint = "run 'moq-export --help' for the flags"
		if format == logJSON {
			log.Error(describe(err), "kind", "usage", "exit_code", ExitUsage, "hint", hint)
		} else {
			log.Error(describe(err) + "; " + hint)
		}
		return ExitUsage
	case isBrokenPipe(err):
		// The player or the next command in the pipe closed it: that is
		// how a pipe ends, not a failure.
		log.Info("the reader closed the output; stopped")
		return ExitOK
	case errors.Is(err, errNothingRecorded):
		log.Warn(err.Error())
		return ExitInterrupted
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return ExitOK
	}
	msg := describe(err)
	if refused, ok := errors.AsType[*subscribe.RefusedError](err); ok {
		// Nothing else of the run matters: say what the relay refused.
		msg = refusedText(refused)
	}
	if format == logJSON {
		log.Error(msg, "kind", "runtime", "exit_code", ExitRuntime)
	} else {
		log.Error(msg)
	}
	return ExitRuntime
}

// logFormatArg returns the value of --log-format in args, parsed or not.
func logFormatArg(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--log-format="); ok {
			return v
		}
		if a == "--log-format" && i+1 < len(args) {
			return args[i+1]
		}
		if a == "--" {
			break
		}
	}
	return ""
}

func newCommand(cfg *Config, run func() error) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "moq-export [URL] [flags]",
		Short: "Record a Media-over-QUIC broadcast as FLV, Matroska/WebM, MPEG-TS or MP4",
		Long: `moq-export records a live Media-over-QUIC broadcast (moq-lite or IETF
moq-transport, hang media) and writes it as FLV, Matroska/WebM, MPEG-TS or MP4
to a file or to stdout. Every flag is described in docs/cli.md.

URL is https://, http:// (development relays: the certificate pin is fetched),
moql:// or moqt:// (raw QUIC). A token goes in the query (?jwt=TOKEN), or,
kept off the command line, in --token-file FILE or the MOQ_TOKEN variable.
Without a URL, moq-export records its built-in demo broadcast, served over
loopback QUIC, so the whole path can be tried on any machine.

Output templates (-o) may use {broadcast}, {n} (segment number) and {time}
(UTC start time); broadcast names are made safe and never leave the output
directory. A plain -o file that exists is not overwritten unless -y says so
(on a terminal moq-export asks); templates never overwrite. -o
s3://BUCKET/KEY, gs://BUCKET/KEY or az://CONTAINER/KEY records into an
object store (docs/object-store.md).

Nothing waits silently: a broadcast that is not announced is waited for with
a notice (--wait bounds it), --timeout bounds the run, --reconnect-for the
reconnects.

Exit codes: 0 done (also after Ctrl-C), 1 runtime error, 2 usage error,
130 interrupted (a second Ctrl-C, or Ctrl-C before anything was recorded).`,
		Example: `  moq-export | ffplay -                          # watch the built-in demo
  moq-export -o demo.mkv --duration 10s          # record 10 s of it to a file
  moq-export 'https://relay.example/anon?jwt=TOKEN' --list
  moq-export 'https://relay.example/anon?jwt=TOKEN' -b room/alice -o alice.mkv
  moq-export 'https://relay.example/anon' --record-all -o 'rec/{broadcast}-{time}.mkv'
  moq-export --listen :4443 --record-all -o 'rec/{broadcast}-{n}.ts' --segment 10m`,
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("give at most one URL (got %d arguments: %s); quote URLs that contain '&' or '?'", len(args), strings.Join(redactAll(args), " "))
			}
			if len(args) == 1 && !strings.Contains(args[0], "://") && !strings.ContainsAny(args[0], "/.:?") {
				return usagef("%q is neither a command (help, version, completion) nor a URL (https://, http://, moql:// or moqt://)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			if len(args) == 1 {
				cfg.URL = args[0]
			}
			if cfg.ConfigFile != "" {
				if err := applyConfig(f, cfg.ConfigFile, cfg); err != nil {
					return err
				}
			}
			cfg.Format, cfg.formatGiven = Format(format), f.Changed("format")
			cfg.Video = renditionList(cfg.Video, f.Changed("video"))
			cfg.Audio = renditionList(cfg.Audio, f.Changed("audio"))
			cfg.Text = renditionList(cfg.Text, f.Changed("text"))
			cfg.DemoCodecs = renditionList(cfg.DemoCodecs, true)
			if cfg.DemoSimulcast {
				if len(cfg.DemoCodecs) > 0 {
					return usagef("--demo-simulcast chooses the demo's renditions itself: drop --demo-codecs")
				}
				cfg.DemoCodecs = demo.Simulcast
			}
			cfg.DemoLate = renditionList(cfg.DemoLate, true)
			if cfg.URL != "" && !f.Changed("max-broadcasts") {
				// Dialing a relay, the broadcasts are the ones the user
				// chose to record: the default bound is for publishers
				// that connect to --listen.
				cfg.MaxBroadcasts = 0
			}
			if err := cfg.Check(); err != nil {
				return err
			}
			return run()
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &UsageError{Msg: flagErrorHint(err.Error())}
	})
	cmd.SetVersionTemplate("moq-export {{.Version}}\n")
	cmd.SetUsageTemplate(usageTemplate)
	cmd.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version and the commit it was built from",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(c.OutOrStdout(), "moq-export %s\n", version())
			return err
		},
	})
	f := cmd.Flags()
	f.SortFlags = false
	serviceFlags(f, cfg)
	f.StringVarP(&cfg.Broadcast, "broadcast", "b", "", "broadcast `NAME` to record, relative to the URL path (default: the only one announced)")
	f.StringVarP(&cfg.Output, "output", "o", "-", "output `PATH` or template, or s3://, gs:// or az://BUCKET/KEY (a template too); - is stdout")
	f.BoolVarP(&cfg.Overwrite, "overwrite", "y", false, "overwrite an existing -o file without asking")
	f.BoolVarP(&cfg.NoOverwrite, "no-overwrite", "n", false, "never overwrite an existing -o file: exit with an error instead of asking")
	f.StringVarP(&format, "format", "f", "", "container: flv, mkv, webm, ts, mp4 or hls (an HLS+DASH package: playlists, CMAF segments, an MPD; default: from the output extension, .m3u8 is hls; ts on stdout), or archive (-o DIR: every track losslessly, in the hang Recording layout)")
	f.DurationVar(&cfg.Duration, "duration", 0, "stop after this much media and finish the file (default: until the broadcast ends)")
	f.DurationVar(&cfg.Wait, "wait", 0, "give up (exit 1) when no broadcast (or not the -b one) is announced within this time (default: wait until Ctrl-C, saying so)")
	f.DurationVar(&cfg.Timeout, "timeout", 0, "stop the whole run after this much wall-clock time, finishing the files (exit 1 if nothing was recorded)")
	f.DurationVar(&cfg.ReconnectFor, "reconnect-for", 5*time.Minute, "give up (finish the files, exit 1) when the relay cannot be reached again for this long (at most --duration); 0 retries forever")
	f.DurationVar(&cfg.Delay, "delay", 500*time.Millisecond, "how long a lagging track may hold the output back (jitter delay)")
	f.DurationVar(&cfg.MaxDelay, "max-delay", record.DefaultMaxDelay, "files: how far --delay may grow for a track that keeps lagging the others, so it is waited for instead of dropped (0: never grows)")
	f.StringSliceVar(&cfg.Video, "video", nil, "video rendition(s) to record, repeatable or comma-separated; \"none\" for no video (default: all the container carries, one for FLV)")
	f.StringSliceVar(&cfg.Audio, "audio", nil, "audio rendition(s) to record, like --video")
	f.StringSliceVar(&cfg.Text, "text", nil, "subtitle (WebVTT) rendition(s) to record, like --video (default: all, where the container carries them: mkv, webm, hls)")
	f.BoolVar(&cfg.List, "list", false, "list the broadcasts under the URL (or, with -b, the renditions of one) and exit")
	f.BoolVar(&cfg.KeepTimestamps, "keep-timestamps", false, "keep the broadcast's timestamps instead of starting the file at 0")
	f.DurationVar(&cfg.Segment, "segment", 0, "start a new file at the first keyframe after this much media (needs {n} or {time} in -o)")
	f.StringVar(&cfg.TokenFile, "token-file", "", "read the relay token (JWT) from `FILE` instead of the URL (also: the MOQ_TOKEN variable)")
	f.StringVar(&cfg.TLSFingerprint, "tls-fingerprint", "", "accept only the server certificate with this SHA-256 `HEX` fingerprint")
	f.BoolVar(&cfg.TLSInsecure, "tls-insecure", false, "do not verify the server certificate (testing only)")
	f.StringVar(&cfg.Listen, "listen", "", "accept publishers on this UDP `ADDR` (e.g. :4443) instead of dialling a URL")
	f.BoolVar(&cfg.RecordAll, "record-all", false, "record every broadcast announced (under the URL, or by --listen publishers) to the -o template")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "certificate `FILE` (PEM) for --listen (default: a self-signed one, its fingerprint printed)")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "private key `FILE` (PEM) for --tls-cert")
	cfg.MinFree = defaultMinFree
	f.IntVar(&cfg.MaxPublishers, "max-publishers", defaultMaxPublishers, "with --listen, refuse publishers beyond this many connected at once (0: no limit)")
	f.IntVar(&cfg.MaxBroadcasts, "max-broadcasts", defaultMaxBroadcasts, "with --record-all, refuse broadcasts beyond this many recorded at once (0: no limit; by default none when dialing a relay)")
	f.Var(&cfg.MaxBytes, "max-bytes", "keep every file under this `SIZE`, e.g. 20G: with {n} in -o the next file starts at a keyframe (split by size), otherwise the recording ends there (default: no limit)")
	f.StringVar(&cfg.SpoolDir, "spool", "", "with an object-store -o, the `DIR` where parts wait for the store and unfinished objects are completed from after a crash (default: moq-export/spool in the user cache directory)")
	cfg.SpoolMax = objstore.DefaultSpoolMax
	f.Var(&cfg.SpoolMax, "spool-max", "with an object-store -o, cut recordings when this `SIZE` waits in the spool for the store")
	f.DurationVar(&cfg.RecoverUploads, "recover-uploads", 0, "with an object-store -o, first complete the unfinished uploads under its prefix that took no part for this long (a recorder that died with its spool, on another machine)")
	f.Var(&cfg.MinFree, "min-free", "refuse new recordings, and finish running ones, when the output disk has less than this `SIZE` free (0: no floor)")
	f.StringVar(&cfg.AuthKey, "auth-key", "", "with --listen, admit only publishers whose token (?jwt=) verifies with this JWK `FILE` (moq-token / @moq/token format) and allows the broadcast")
	f.StringVar(&cfg.Progress, "progress", "auto", "progress on stderr: auto (when stderr is a terminal), always or never")
	f.CountVarP(&cfg.Verbose, "verbose", "v", "log more to stderr: -v for info, -vv for debug")
	f.BoolVarP(&cfg.Quiet, "quiet", "q", false, "say nothing on stderr but warnings and errors (no notices, progress or summary)")
	f.BoolVar(&cfg.JSON, "json", false, "print --list, and the summary at the end of a recording (on stderr), as JSON")
	f.StringVar(&cfg.SummaryFile, "summary", "", "write the summary of the run (files, duration, frames, drops, reconnects) as JSON to `FILE`")
	f.StringVar(&cfg.LogFormat, "log-format", logText, "stderr format: text (for people) or json (one object per line, for services)")
	f.BoolVar(&cfg.LogTime, "log-time", false, "begin each text line on stderr with the UTC time to the millisecond (json records carry it always): to read how long an outage or a recovery took")
	f.BoolVar(&cfg.DemoSimulcast, "demo-simulcast", false, "the built-in demo publishes two video renditions (H.264 640x360 and 320x180) and two audio renditions (AAC), as a simulcast broadcast; with -f hls each is a variant")
	f.DurationVar(&cfg.HLSSegment, "hls-segment-duration", 0, "-f hls: target segment length, cut at the keyframes at or after it (default 4s)")
	f.BoolVar(&cfg.HLSSegmentFiles, "hls-segment-files", false, "-f hls into a directory: a file per segment instead of one media file per rendition named by byte range")
	f.StringSliceVar(&cfg.DemoCodecs, "demo-codecs", nil, "test codecs of the built-in demo (default h264,aac; also h265, av1, vp8, vp9, opus, mp3, flac, ac3)")
	f.StringSliceVar(&cfg.DemoLate, "demo-late", nil, "test codecs the demo adds by a catalog update after 2 s of media (a rendition added mid-recording, e.g. aac with --demo-codecs h264)")
	f.StringVar(&cfg.DemoContainer, "demo-container", "", "how the built-in demo packages its frames: legacy (default), loc, or cmaf (as 'moq import fmp4' publishes ffmpeg's fMP4)")
	f.IntVar(&cfg.DemoLoops, "demo-loops", 0, "end the demo broadcast after each test sample played this many times (2-4 s each; default: never)")
	f.StringVar(&cfg.DemoTo, "demo-to", "", "publish the built-in demo into this `URL` (a --listen moq-export or a relay; pin it with --tls-fingerprint) instead of recording it")
	f.DurationVar(&cfg.Retention, "retention", 0, "with -f archive: keep this much media per track (a DVR window), deleting older records as new ones land (default: keep all)")
	f.StringVar(&cfg.From, "from", "", "reading an archive: start at this media `TIME` (1h2m3s) or wall-clock time (2026-12-01T10:00:00Z), from the keyframe at or before it")
	f.StringVar(&cfg.To, "to", "", "reading an archive: end at this media or wall-clock `TIME`")
	f.DurationVar(&cfg.Follow, "follow", 0, "reading an archive: keep reading the records a concurrent writer adds, looking every `D`")
	f.StringVar(&cfg.ReplayTo, "replay-to", "", "publish the archived broadcast (-b) in real time from --from into this `URL` (a relay, or a --listen moq-export) instead of recording it")
	f.BoolVar(&cfg.Replay, "replay", false, "serve the archived broadcast (-b) in real time from --from to the subscribers of --listen (a player, a relay or a recorder dialling in) instead of recording it")
	f.BoolVar(&cfg.DemoFast, "demo-fast", false, "publish the demo as fast as possible instead of in real time (benchmarks)")
	_ = f.MarkHidden("demo-fast")
	return cmd
}

// renditionList normalizes a --video/--audio value: nil when the flag was
// not given, empty for "none", names trimmed otherwise.
func renditionList(v []string, given bool) []string {
	if !given {
		return nil
	}
	out := []string{}
	for _, s := range v {
		s = strings.TrimSpace(s)
		if s == "" || strings.EqualFold(s, "none") {
			continue
		}
		out = append(out, s)
	}
	return out
}

func redactAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = redactURL(a)
	}
	return out
}
