package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/record"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// serviceFlags are the flags of the service face (docs/service.md).
func serviceFlags(f *pflag.FlagSet, cfg *Config) {
	f.StringVar(&cfg.HTTP, "http", "", "serve /metrics, /health, /ready, the control API and a status page on this TCP `ADDR` (loopback unless --http-token-file)")
	f.StringVar(&cfg.HTTPTokenFile, "http-token-file", "", "require the bearer token in `FILE` on every --http request but /health (needed for a non-loopback --http)")
	f.StringArrayVar(&cfg.Webhooks, "webhook", nil, "POST every recording and file event as JSON to this `URL` (repeatable)")
	f.StringVar(&cfg.WebhookSecretFile, "webhook-secret-file", "", "sign the webhooks with HMAC-SHA256 keyed with the secret in `FILE`")
	f.StringVar(&cfg.OnFileFinished, "on-file-finished", "", "run this shell `COMMAND` for each finished file, the event in MOQ_EXPORT_* variables")
	f.Var(&cfg.RetentionAge, "retention-age", "delete finished recordings under the output directory (or object-store key prefix) older than this `AGE` (e.g. 36h, 7d)")
	f.Var(&cfg.RetentionSize, "retention-size", "delete the oldest finished recordings while those under the output directory hold more than this `SIZE`")
	f.StringVar(&cfg.Shard, "shard", "", "with --record-all, record only the broadcasts of shard `I/N` (FNV-1a of the name mod N): N recorders split a relay")
	f.StringVar(&cfg.ConfigFile, "config", "", "read flags from this YAML `FILE` (keys are flag names; flags on the command line win)")
}

// serviceGroup is the --help group of serviceFlags.
var serviceGroup = struct {
	title string
	names []string
}{"Service (docs/service.md)", []string{"http", "http-token-file", "webhook", "webhook-secret-file", "on-file-finished",
	"retention-age", "retention-size", "shard", "config"}}

// days is a duration flag that also takes days ("7d", "1d12h").
type days time.Duration

func (d *days) String() string {
	if *d == 0 {
		return "0"
	}
	return time.Duration(*d).String()
}

func (d *days) Type() string { return "AGE" }

func (d *days) Set(s string) error {
	v, err := parseAge(s)
	if err != nil {
		return err
	}
	*d = days(v)
	return nil
}

// parseAge reads a Go duration with an optional leading count of days.
func parseAge(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	var total time.Duration
	if i := strings.IndexByte(t, 'd'); i > 0 {
		n, err := strconv.Atoi(t[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not an age: use e.g. 36h, 7d or 1d12h", s)
		}
		total = time.Duration(n) * 24 * time.Hour
		t = t[i+1:]
	}
	if t != "" {
		v, err := time.ParseDuration(t)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%q is not an age: use e.g. 36h, 7d or 1d12h", s)
		}
		total += v
	}
	return total, nil
}

// checkService checks the service flags together with the others.
func (c *Config) checkService() error {
	if c.Shard != "" {
		sh, err := service.ParseShard(c.Shard)
		if err != nil {
			return usagef("--shard: %v", err)
		}
		if !c.RecordAll {
			return usagef("--shard splits the broadcasts --record-all records: add --record-all")
		}
		c.shard = sh
	}
	if c.HTTP == "" {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--http-token-file", c.HTTPTokenFile != ""}} {
			if f.set {
				return usagef("%s is for --http", f.name)
			}
		}
	}
	for _, h := range c.Webhooks {
		u, err := url.Parse(h)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--webhook %s: give an http:// or https:// URL", redactURL(h))
		}
	}
	if c.WebhookSecretFile != "" && len(c.Webhooks) == 0 && c.HTTP == "" {
		return usagef("--webhook-secret-file signs the --webhook requests: add --webhook URL")
	}
	if (c.RetentionAge > 0 || c.RetentionSize > 0) && c.toStdout() {
		return usagef("--retention-age and --retention-size delete old files under the -o directory: give -o a template such as 'rec/{broadcast}-{time}.mkv'")
	}
	return nil
}

// apiOnly reports whether the command serves the API without a recording
// of its own: --http with no URL and no -o (with --listen, the API records
// its publishers: "listen": true).
func (c *Config) apiOnly() bool {
	return c.HTTP != "" && c.URL == "" && c.toStdout() && !c.RecordAll
}

// readSecret reads a token or key file, trimmed; empty is an error.
func readSecret(flag, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", usagef("%s: %v", flag, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", usagef("%s %s is empty", flag, path)
	}
	return s, nil
}

// newService makes the service face when --http, a webhook, the
// on-file-finished command or retention asks for it.
func (a *app) newService() error {
	c := a.cfg
	if c.HTTP == "" && len(c.Webhooks) == 0 && c.OnFileFinished == "" && c.RetentionAge == 0 && c.RetentionSize == 0 {
		return nil
	}
	ret := service.Retention{Age: time.Duration(c.RetentionAge), Size: int64(c.RetentionSize)}
	if c.objectStore {
		// The objects under the key's prefix, once the store is open.
		a.retStore = &storeRetention{}
		ret.Store = a.retStore
	}
	opts := service.Options{Logger: a.log, Webhooks: c.Webhooks, OnFileFinished: c.OnFileFinished,
		Retention:  ret,
		Reconnects: func() int64 { return a.snapshot().Reconnects }, Ready: a.ready}
	if c.HTTPTokenFile != "" {
		tok, err := readSecret("--http-token-file", c.HTTPTokenFile)
		if err != nil {
			return err
		}
		opts.Token = tok
		a.con.addSecret(tok)
	}
	if c.WebhookSecretFile != "" {
		key, err := readSecret("--webhook-secret-file", c.WebhookSecretFile)
		if err != nil {
			return err
		}
		opts.WebhookSecret = []byte(key)
		a.con.addSecret(key)
	}
	opts.Root = "."
	if c.template.IsTemplate() || !c.toStdout() && !c.objectStore {
		opts.Root = c.template.Dir()
	}
	opts.Base = record.Options{Delay: c.Delay, MaxDelay: cliMaxDelay(c.MaxDelay), KeepTimestamps: c.KeepTimestamps, Wait: c.Wait,
		Logger: a.log, MaxFileBytes: int64(c.MaxBytes), MinFreeBytes: int64(c.MinFree), OnWait: a.sayWaiting, Origin: "by the relay",
		Admit: a.load.Err}
	opts.Load = a.load.State
	svc, err := service.New(opts)
	if err != nil {
		return err
	}
	a.svc = svc
	return nil
}

// startService serves --http and runs the retention until ctx ends.
func (a *app) startService(ctx context.Context) error {
	if a.svc == nil {
		return nil
	}
	if a.cfg.HTTP != "" {
		addr, err := a.svc.Serve(ctx, a.cfg.HTTP)
		if errors.Is(err, service.ErrNeedsToken) {
			return usagef("--http %s is reachable from other hosts: give --http-token-file FILE (a bearer token), or listen on 127.0.0.1", a.cfg.HTTP)
		}
		if err != nil {
			return fmt.Errorf("--http %s: %w; pick a free TCP address such as 127.0.0.1:8080", a.cfg.HTTP, err)
		}
		notice(a.log, fmt.Sprintf("serving metrics, the API and the status page on http://%s", addr))
	}
	go a.svc.RunRetention(ctx)
	return nil
}

// ready is /ready's view of the command: the relay session is up (not
// reconnecting); always, for --listen and the API alone.
func (a *app) ready() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cfg.URL == "" {
		return nil
	}
	if len(a.sources) == 0 {
		return errors.New("not connected to the relay yet")
	}
	for src := range a.sources {
		if e, ok := src.(record.EndingSource); ok && e.Err() != nil {
			return fmt.Errorf("the relay session ended: %v", e.Err())
		}
	}
	return nil
}

// sessionOpened counts a session in the metrics.
func (a *app) sessionOpened(src Source) {
	if a.svc == nil {
		return
	}
	a.svc.SessionOpened(src.Version())
}

// serveAPIOnly waits, serving the API, until ctx ends: the recordings are
// the ones the API starts.
func (a *app) serveAPIOnly(ctx context.Context) error {
	if a.cfg.Listen == "" {
		notice(a.log, "no URL, --listen or -o: recording only what the API starts (POST /api/v1/recordings)")
		<-ctx.Done()
		return nil
	}
	srv, err := a.openServer()
	if err != nil {
		return err
	}
	src := record.NewServerSource(srv)
	// Closed after the API's recordings are finished (run's stopService):
	// their sessions stay open until then.
	a.closeListen = func() {
		src.Close()
		srv.Close()
	}
	feed, err := src.Announced(ctx) // starts accepting
	if err != nil {
		return err
	}
	defer feed.Close()
	a.svc.SetListen(src)
	notice(a.log, "no -o: recording only what the API starts from the publishers of --listen (POST /api/v1/recordings with \"listen\": true)")
	for {
		an, err := feed.Next(ctx)
		if err != nil {
			break
		}
		if an.Active {
			a.log.Info("publisher announced a broadcast", "broadcast", an.Path)
		} else {
			a.log.Info("broadcast ended", "broadcast", an.Path)
		}
	}
	// Stopping: GOAWAY first, so that the publishers move to wherever they
	// reconnect while the API's recordings are finished.
	if n := srv.GoAway(""); n > 0 {
		a.log.Info("stopping: asked the publishers to reconnect (GOAWAY)", "sessions", n)
	}
	return nil
}

// stopService finishes the recordings the API started and delivers the
// queued webhooks, within shutdownBound.
func (a *app) stopService() {
	if a.svc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownBound)
	defer cancel()
	if err := a.svc.Close(ctx); err != nil {
		a.log.Warn("stopping the service", "err", err)
	}
}

// shutdownBound bounds how long a stop (Ctrl-C, SIGTERM) waits for the
// files to be finished and the webhooks delivered before the process
// exits anyway.
const shutdownBound = 30 * time.Second

// applyConfig sets, from the YAML file at path, every flag the command
// line did not set: keys are flag names (url: for the URL), values
// scalars or lists (for the repeatable flags).
func applyConfig(fs *pflag.FlagSet, path string, cfg *Config) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return usagef("--config: %v", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return usagef("--config %s: %v", path, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := m[k]
		if k == "url" {
			if cfg.URL == "" {
				s, ok := v.(string)
				if !ok {
					return usagef("--config %s: url must be a string", path)
				}
				cfg.URL = s
			}
			continue
		}
		fl := fs.Lookup(k)
		if fl == nil || k == "config" {
			return usagef("--config %s: %q is not a flag (keys are flag names without --, and url)", path, k)
		}
		if fl.Changed {
			continue // the command line wins
		}
		vals := []any{v}
		if l, ok := v.([]any); ok {
			vals = l
		}
		for _, x := range vals {
			s := fmt.Sprint(x)
			if x == nil {
				s = ""
			}
			if err := fs.Set(k, s); err != nil {
				return usagef("--config %s: %s: %v", path, k, err)
			}
		}
	}
	return nil
}
