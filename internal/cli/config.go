package cli

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/objstore"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// Config is the parsed command line.
type Config struct {
	URL             string
	Broadcast       string
	Output          string
	Overwrite       bool   // -y: overwrite an existing -o file
	NoOverwrite     bool   // -n: never overwrite, never ask
	TokenFile       string // --token-file
	Format          Format // after Check: never empty
	Duration        time.Duration
	Delay           time.Duration
	MaxDelay        time.Duration
	Video, Audio    []string // nil: not given (all the container carries)
	Text            []string // like Video and Audio
	List            bool
	KeepTimestamps  bool
	TLSFingerprint  string
	TLSInsecure     bool
	TLSCert         string
	TLSKey          string
	AuthKey         string        // --auth-key: the JWK publishers' tokens are checked with
	MaxPublishers   int           // --max-publishers: sessions on --listen at once
	MaxBroadcasts   int           // --max-broadcasts: --record-all recordings at once
	MaxBytes        byteSize      // --max-bytes: one output file (0: none)
	MinFree         byteSize      // --min-free: free disk below which recordings stop
	SpoolDir        string        // --spool: where objects wait for the store
	SpoolMax        byteSize      // --spool-max: bytes waiting for the store before recordings are cut
	RecoverUploads  time.Duration // --recover-uploads: complete other recorders' uploads idle this long (0: no)
	Progress        string
	Verbose         int
	Quiet           bool
	JSON            bool   // --json: --list and the summary as JSON
	SummaryFile     string // --summary FILE: the JSON summary
	LogFormat       string // text or json
	LogTime         bool   // --log-time: text lines begin with the UTC time
	Segment         time.Duration
	Listen          string
	Wait            time.Duration // --wait: for a broadcast to be announced (0: until Ctrl-C)
	Timeout         time.Duration // --timeout: wall-clock bound of the run (0: none)
	ReconnectFor    time.Duration // --reconnect-for: give up reconnecting after this long (0: never)
	RecordAll       bool
	DemoCodecs      []string
	DemoSimulcast   bool          // --demo-simulcast: demo.Simulcast's renditions
	HLSSegment      time.Duration // --hls-segment-duration
	HLSSegmentFiles bool          // --hls-segment-files
	DemoLoops       int
	DemoFast        bool // hidden: publish the demo as fast as possible (benchmarks)
	DemoContainer   string
	DemoLate        []string      // test codecs a catalog update adds after DemoLateAfter
	DemoTo          string        // --demo-to: publish the demo into this URL instead of recording
	Retention       time.Duration // --retention: the DVR window of -f archive (0: keep all)
	From, To        string        // --from, --to: the range of an archive source
	Follow          time.Duration // --follow: read what a writer adds to the archive, looking every D
	ReplayTo        string        // --replay-to: publish an archived broadcast into this URL
	Replay          bool          // --replay: serve an archived broadcast to subscribers of --listen

	archive  string       // the directory of an archive source
	from, to archive.Time // --from, --to parsed

	formatGiven bool
	template    Template
	objectStore bool // -o is an object-store URL (s3://, gs://, az://)

	// The service face (service.go).
	HTTP              string   // --http
	HTTPTokenFile     string   // --http-token-file
	Webhooks          []string // --webhook
	WebhookSecretFile string   // --webhook-secret-file
	OnFileFinished    string   // --on-file-finished
	RetentionAge      days     // --retention-age
	RetentionSize     byteSize // --retention-size
	Shard             string   // --shard I/N
	ConfigFile        string   // --config
	shard             service.Shard
	token             string // from --token-file or MOQ_TOKEN; added to the dialled URL
}

// UsageError is a mistake on the command line: exit code 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// IsUsageError reports whether err is a command-line mistake.
func IsUsageError(err error) bool {
	var u *UsageError
	return errors.As(err, &u) || errors.Is(err, record.ErrSelection)
}

// toStdout reports whether the output is standard output.
func (c *Config) toStdout() bool { return c.Output == "" || c.Output == "-" }

// Check validates the flags together and fills in what follows from them
// (the format from the output extension).
func (c *Config) Check() error {
	if err := c.checkService(); err != nil {
		return err
	}
	if c.DemoTo != "" {
		return c.checkDemoTo()
	}
	if p, ok := archivePath(c.URL); ok && c.URL != "" {
		c.archive = p
	}
	if c.ReplayTo != "" {
		return c.checkReplayTo()
	}
	if c.Replay {
		return c.checkReplay()
	}
	if c.archive != "" {
		if c.Listen != "" {
			return usagef("--listen with an archive serves it to subscribers: add --replay (or record it into a file with -o)")
		}
	} else if c.URL != "" {
		if err := checkURL(c.URL); err != nil {
			return err
		}
		if c.Listen != "" {
			return usagef("a URL and --listen exclude each other: record from %s, or accept publishers on --listen %s", redactURL(c.URL), c.Listen)
		}
	}
	if c.Video != nil && len(c.Video) == 0 && c.Audio != nil && len(c.Audio) == 0 && !c.List {
		return usagef("--video none --audio none selects nothing to record: drop one of them (--list shows the renditions)")
	}
	if c.Overwrite && c.NoOverwrite {
		return usagef("-y (overwrite) and -n (never overwrite) exclude each other")
	}
	if c.TokenFile != "" {
		if c.URL == "" {
			return usagef("--token-file is for a relay URL; the built-in demo and --listen need no token")
		}
		if urlHasToken(c.URL) {
			return usagef("the URL already has a jwt= token: drop it from the URL (it shows in ps and the shell history), or drop --token-file")
		}
	}
	if c.URL != "" || c.Listen != "" {
		if len(c.DemoCodecs) > 0 || len(c.DemoLate) > 0 || c.DemoLoops != 0 || c.DemoFast || c.DemoContainer != "" || c.DemoSimulcast {
			return usagef("--demo-codecs, --demo-simulcast, --demo-late, --demo-container and --demo-loops only apply to the built-in demo (no URL, no --listen)")
		}
	} else if c.Broadcast != "" && c.Broadcast != demoBroadcast {
		// The demo serves one broadcast; waiting for another would never end.
		return usagef("without a URL, moq-export records its built-in demo broadcast %q: drop -b %q, or give the URL of the relay that has it", demoBroadcast, c.Broadcast)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--duration", c.Duration}, {"--segment", c.Segment}, {"--wait", c.Wait}, {"--timeout", c.Timeout}, {"--reconnect-for", c.ReconnectFor}} {
		if d.v < 0 {
			return usagef("%s must not be negative (got %v); use a duration like 30s or 1h", d.name, d.v)
		}
	}
	if c.Delay <= 0 {
		return usagef("--delay must be positive (got %v); use a duration like 500ms", c.Delay)
	}
	switch c.DemoContainer {
	case "", "legacy", "loc":
	case "cmaf":
		if c.DemoFast {
			// The in-process demo hands its frames to the export as
			// they are: only the subscriber demuxes CMAF.
			return usagef("--demo-container cmaf is served over loopback QUIC; drop --demo-fast")
		}
	default:
		return usagef("--demo-container %q: pick legacy, loc or cmaf", c.DemoContainer)
	}
	if c.DemoLoops < 0 {
		return usagef("--demo-loops must not be negative; 0 loops the demo forever")
	}
	switch c.LogFormat {
	case "", logText, logJSON:
	default:
		return usagef("--log-format takes text or json (got %q)", c.LogFormat)
	}
	if c.Quiet && c.Verbose > 0 {
		return usagef("-q and -v exclude each other")
	}
	switch c.Progress {
	case "auto", "always", "never":
	default:
		return usagef("--progress takes auto, always or never (got %q)", c.Progress)
	}
	if c.RecordAll && c.Broadcast != "" {
		return usagef("--record-all records every broadcast; drop -b %q, or drop --record-all to record just that one", c.Broadcast)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return usagef("--tls-cert and --tls-key go together: give both, or neither for a self-signed certificate")
	}
	if c.TLSCert != "" && c.Listen == "" {
		return usagef("--tls-cert and --tls-key are for --listen")
	}
	if c.MaxPublishers < 0 || c.MaxBroadcasts < 0 {
		return usagef("--max-publishers and --max-broadcasts must not be negative; 0 means no limit")
	}
	if c.AuthKey != "" && c.Listen == "" {
		return usagef("--auth-key checks the tokens of publishers on --listen; a relay URL takes a token with --token-file or ?jwt=")
	}
	if c.List && c.Listen != "" {
		return usagef("--list asks a relay what it offers, but --listen waits for publishers: give a URL instead of --listen, or drop --list")
	}
	if c.List {
		// Listing ignores the output flags.
		if c.archive == "" && (c.From != "" || c.To != "" || c.Follow > 0) {
			return usagef("--from, --to and --follow read an archive: give its directory (or file:///dir) as the URL")
		}
		return nil
	}

	// target is the path or the object key: what names the format and
	// holds the placeholders.
	target := c.Output
	switch scheme := record.URLScheme(c.Output); {
	case c.toStdout():
	case slices.Contains(objstore.Schemes, scheme):
		loc, err := objstore.ParseURL(c.Output)
		if err != nil {
			return &UsageError{Msg: err.Error()}
		}
		c.objectStore, target = true, loc.Key
	default:
		// A URL of a scheme nothing here writes is refused, never made
		// into a local directory named "s3:".
		path, err := record.LocalPath(c.Output)
		if err != nil {
			var se *record.SchemeError
			if errors.As(err, &se) {
				se.Known = objstore.Schemes
			}
			return &UsageError{Msg: err.Error()}
		}
		c.Output, target = path, path
	}
	if c.formatGiven {
		f, err := record.ParseFormat(string(c.Format))
		if err != nil {
			return usagef("unknown format %q: use -f flv, mkv, webm, ts, mp4, hls or archive", c.Format)
		}
		c.Format = f
	}
	if err := c.checkArchive(); err != nil {
		return err
	}
	if c.Format == record.Archive {
		return nil // a directory: no template
	}
	if c.formatGiven {
	} else if c.toStdout() {
		c.Format = TS
	} else if f, ok := record.FormatFromPath(target); ok {
		c.Format = f
	} else {
		return usagef("cannot tell the format from %q: end the path in .flv, .mkv, .webm, .ts, .mp4 or .m3u8, or pass -f flv|mkv|webm|ts|mp4|hls", c.Output)
	}
	if c.HLSSegment < 0 {
		return usagef("--hls-segment-duration must not be negative")
	}
	if c.Format.Package() {
		if c.toStdout() {
			return usagef("-f %s writes a directory of files (playlists and segments), which stdout cannot hold: give -o DIR/index.m3u8, or -o 'rec/{broadcast}/index.m3u8'", c.Format)
		}
		if c.Segment > 0 {
			return usagef("-f %s cuts its own segments: use --hls-segment-duration instead of --segment", c.Format)
		}
	} else if c.HLSSegment > 0 {
		return usagef("--hls-segment-duration is for -f hls; the other formats cut files with --segment")
	} else if c.HLSSegmentFiles {
		return usagef("--hls-segment-files is for -f hls")
	}

	if c.toStdout() {
		if c.Segment > 0 {
			return usagef("--segment writes several files: give -o a template such as 'rec/{broadcast}-{n}%s'", c.Format.Ext())
		}
		if c.RecordAll {
			return usagef("--record-all writes one file per broadcast: give -o a template such as 'rec/{broadcast}-{time}%s'", c.Format.Ext())
		}
		return nil
	}
	t, err := record.ParseTemplate(target)
	if err != nil {
		return &UsageError{Msg: err.Error()}
	}
	c.template = t
	if c.Segment > 0 && !t.Has("n") && !t.Has("time") {
		return usagef("--segment writes several files, but -o %q would give them one name: add {n} or {time}, e.g. 'rec/{broadcast}-{n}%s'", c.Output, c.Format.Ext())
	}
	if c.RecordAll && !t.Has("broadcast") {
		if c.Format.Package() {
			return usagef("--record-all writes one package per broadcast, but -o %q has no {broadcast}: use e.g. 'rec/{broadcast}/index.m3u8'", c.Output)
		}
		return usagef("--record-all writes one file per broadcast, but -o %q has no {broadcast}: use e.g. 'rec/{broadcast}-{time}%s'", c.Output, c.Format.Ext())
	}
	if c.RecordAll && c.Format.Package() {
		if err := t.CheckPackages(); err != nil {
			var se *record.SharedPackageError
			if errors.As(err, &se) {
				return usagef("--record-all writes one package per broadcast, but -o %q puts them all in one directory, where their files (v0.mp4, a0.mp4, v0.m3u8, ...) would overwrite each other: put {broadcast} in the directory, e.g. '%s'", c.Output, strings.Replace(c.Output, se.Template, se.Suggest, 1))
			}
			return &UsageError{Msg: err.Error()}
		}
	}
	return nil
}

// checkReplayTo checks the flags of --replay-to, which publishes an
// archived broadcast and records nothing.
func (c *Config) checkReplayTo() error {
	if c.archive == "" {
		return usagef("--replay-to publishes an archive: give its directory (or file:///dir) as the URL")
	}
	if err := checkURL(c.ReplayTo); err != nil {
		return usagef("--replay-to: %s", err.Error())
	}
	if c.Listen != "" || c.Output != "-" || c.formatGiven || c.RecordAll || c.List || c.Segment > 0 || c.Retention > 0 {
		return usagef("--replay-to publishes the archive and records nothing: drop -o, -f, --segment, --retention, --record-all, --list and --listen")
	}
	return c.checkArchive()
}

// checkReplay checks the flags of --replay, which serves an archived
// broadcast to the subscribers of --listen and records nothing.
func (c *Config) checkReplay() error {
	switch {
	case c.archive == "":
		return usagef("--replay serves an archive: give its directory (or file:///dir, s3://BUCKET/PREFIX) as the URL")
	case c.Listen == "":
		return usagef("--replay serves the archive to subscribers of --listen ADDR (e.g. --listen 127.0.0.1:4443); to push it into a relay use --replay-to URL")
	case c.Output != "-" || c.formatGiven || c.RecordAll || c.List || c.Segment > 0 || c.Retention > 0:
		return usagef("--replay serves the archive and records nothing: drop -o, -f, --segment, --retention, --record-all and --list")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return usagef("--tls-cert and --tls-key go together: give both, or neither for a self-signed certificate")
	}
	return c.checkArchive()
}

// checkDemoTo checks the flags of --demo-to, which publishes and records
// nothing: the output and selection flags have no use there.
func (c *Config) checkDemoTo() error {
	if c.URL != "" || c.Listen != "" {
		return usagef("--demo-to publishes the built-in demo into a URL; it takes no other URL and no --listen (run the recording moq-export separately)")
	}
	if err := checkURL(c.DemoTo); err != nil {
		return usagef("--demo-to: %s", err.Error())
	}
	if c.Output != "-" || c.formatGiven || c.RecordAll || c.List || c.Segment > 0 || c.Duration > 0 || c.Video != nil || c.Audio != nil || c.Text != nil {
		return usagef("--demo-to publishes the demo and records nothing: drop -o, -f, --segment, --duration, --video, --audio, --text, --record-all and --list (--demo-loops N or --timeout D end it)")
	}
	if c.TokenFile != "" {
		return usagef("--demo-to takes its token in the URL (?jwt=TOKEN), not --token-file")
	}
	switch c.DemoContainer {
	case "", "legacy", "loc", "cmaf":
	default:
		return usagef("--demo-container %q: pick legacy, loc or cmaf", c.DemoContainer)
	}
	if c.DemoLoops < 0 || c.Timeout < 0 || c.ReconnectFor < 0 {
		return usagef("--demo-loops, --timeout and --reconnect-for must not be negative")
	}
	if c.DemoFast {
		return usagef("--demo-fast is for the in-process demo; drop it with --demo-to")
	}
	return nil
}

// tokenEnv names the environment variable that holds a relay token.
const tokenEnv = "MOQ_TOKEN"

// resolveToken reads the token of --token-file, or of MOQ_TOKEN when the
// URL carries none, for dialURL.
func (c *Config) resolveToken(env Env) error {
	if c.URL == "" {
		return nil
	}
	switch {
	case c.TokenFile != "":
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return usagef("--token-file: %v", err)
		}
		c.token = strings.TrimSpace(string(b))
		if c.token == "" {
			return usagef("--token-file %s is empty: put the relay's token (JWT) in it", c.TokenFile)
		}
	case !urlHasToken(c.URL):
		c.token = strings.TrimSpace(env.getenv(tokenEnv))
	}
	return nil
}

// urlHasToken reports whether raw carries a jwt= query parameter.
func urlHasToken(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Query().Has("jwt")
}

// dialURL is the URL to dial: the URL with the token of --token-file or
// MOQ_TOKEN added as the jwt= query parameter, as relays take it.
func (c *Config) dialURL() string {
	if c.token == "" {
		return c.URL
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return c.URL
	}
	q := "jwt=" + url.QueryEscape(c.token)
	if u.RawQuery != "" {
		q = u.RawQuery + "&" + q
	}
	u.RawQuery = q
	return u.String()
}

// checkURL accepts the schemes package subscribe dials.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return usagef("cannot parse the URL %s: give one like https://relay.example/anon", redactURL(raw))
	}
	switch u.Scheme {
	case "https", "http", "moql", "moqt":
	case "":
		return usagef("the URL %s has no scheme: use https://, http:// (development relays), moql:// or moqt://", redactURL(raw))
	default:
		return usagef("unsupported URL scheme %q: use https://, http:// (development relays), moql:// or moqt://", u.Scheme)
	}
	if u.Host == "" {
		return usagef("the URL %s has no host: give one like https://relay.example/anon", redactURL(raw))
	}
	return nil
}

// redactURL returns raw with credentials replaced (see subscribe.RedactURL).
func redactURL(raw string) string { return subscribe.RedactURL(raw) }

// secrets returns the credential strings in raw (token values, decoded and
// as written, and user info), so stderr can be scrubbed of them whatever
// path they take.
func secrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	add := func(s string) {
		if len(s) >= 4 {
			out = append(out, s)
		}
	}
	for kv := range strings.SplitSeq(u.RawQuery, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if !subscribe.IsSecretParam(k) {
			continue
		}
		add(v)
		if uv, err := url.QueryUnescape(v); err == nil {
			add(uv)
			add(url.QueryEscape(uv))
		}
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		add(u.User.Username())
	}
	return out
}

// redactorFor returns a replacer of every secret in args with "REDACTED",
// or nil when there is none.
func redactorFor(args []string) *strings.Replacer {
	var pairs []string
	for _, a := range args {
		for _, s := range secrets(a) {
			pairs = append(pairs, s, "REDACTED")
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	return strings.NewReplacer(pairs...)
}
