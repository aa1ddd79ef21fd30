package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	moqsettle "github.com/moq-export/moq-export/internal/moq/settle"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
	"github.com/moq-export/moq-export/token"
)

// dialTimeout bounds the first connection to a relay.
const dialTimeout = 15 * time.Second

// dial connects to the URL.
func dial(ctx context.Context, cfg *Config, log *slog.Logger) (Source, error) {
	opts := subscribe.Options{
		TLSFingerprint: cfg.TLSFingerprint,
		TLSInsecure:    cfg.TLSInsecure,
		Logger:         log,
		Reconnect:      subscribe.Backoff{GiveUp: reconnectFor(cfg)},
		// The recordings are the tracks' only readers.
		ReleaseRead: true,
		// An archive keeps the objects as received.
		Objects: cfg.Format == record.Archive,
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	log.Info("connecting", "url", redactURL(cfg.dialURL()))
	sess, err := subscribe.Dial(dctx, cfg.dialURL(), opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("connecting to %s: %w; %s", redactURL(cfg.URL), err, dialAdvice(cfg, err))
	}
	log.Info("connected", "version", sess.Version())
	return newSessionSource(sess), nil
}

// reconnectFor is how long reconnects are tried before giving up:
// --reconnect-for, at most --duration. A live broadcast's media time goes on
// while the relay cannot be reached, so an outage longer than --duration
// leaves nothing of the recording to come.
func reconnectFor(cfg *Config) time.Duration {
	d := cfg.ReconnectFor
	if cfg.Duration > 0 && (d == 0 || d > cfg.Duration) {
		d = cfg.Duration
	}
	return d
}

// dialAdvice suggests what to try after a failed first connection.
func dialAdvice(cfg *Config, err error) string {
	var ce *tls.CertificateVerificationError
	switch {
	case errors.As(err, &ce) || containsAny(err.Error(), "certificate", "x509", "fingerprint"):
		return "check the relay's certificate, or pin it with --tls-fingerprint (--tls-insecure for testing)"
	case errors.Is(err, subscribe.ErrUnsupportedURL):
		return "use an https://, http://, moql:// or moqt:// URL"
	case errors.Is(err, subscribe.ErrVersion):
		return "the relay speaks no protocol version moq-export does (" + strings.Join(subscribe.Versions(), ", ") + ")"
	case errors.Is(err, context.DeadlineExceeded) || containsAny(err.Error(), "timeout", "no recent network activity"):
		return "check the host and port, and that UDP reaches it"
	}
	return "check the URL, the token and that the relay is up"
}

// containsAny reports whether s contains any of subs.
func containsAny(s string, subs ...string) bool {
	return slices.ContainsFunc(subs, func(x string) bool { return strings.Contains(s, x) })
}

// sessionSource is a moq-lite session: dialled, or accepted by --listen.
type sessionSource struct {
	record.Source
	s *subscribe.Session
}

func newSessionSource(s *subscribe.Session) *sessionSource {
	return &sessionSource{Source: record.SessionSource(s), s: s}
}

func (s *sessionSource) Reconnects() int64 { return s.s.Reconnects() }

// Settle parks the session's waits afresh when the recordings stopped
// starting (memoryReturner): the command's choice, so reached through
// internal/moq/settle rather than subscribe's API.
func (s *sessionSource) Settle(ctx context.Context) { moqsettle.Session(ctx, s.s) }

func (s *sessionSource) Version() string { return s.s.Version() }

// Peer is the publisher's address on --listen, for the limits' refusals.
func (s *sessionSource) Peer() string { return s.s.Remote() }

func (s *sessionSource) Close() error { return s.s.Close() }

// Err returns why the session ended: record tells a session that gave up
// from a broadcast that ended.
func (s *sessionSource) Err() error { return s.s.Err() }

// serveDemo publishes the demo broadcast on a loopback QUIC listener with a
// self-signed certificate and dials it with the certificate pinned: the
// same path a relay recording takes.
func serveDemo(ctx context.Context, cfg *Config, con *console, log *slog.Logger) (Source, error) {
	pctx, cancel := context.WithCancel(context.Background())
	bc, wait := newDemoBroadcast(pctx, cfg, log)
	srv, url, pin, err := subscribe.ServeLoopback(bc, subscribe.ServerOptions{Logger: log.With("side", "demo publisher"), DisableWebTransport: true})
	if err != nil {
		cancel()
		wait()
		return nil, fmt.Errorf("starting the demo publisher on loopback: %w; the demo needs UDP on 127.0.0.1 (or pass a URL)", err)
	}
	stop := func() {
		cancel()
		wait()
		srv.Close()
	}
	notice(log, demoNotice(cfg, fmt.Sprintf("served over loopback QUIC at %s (SHA-256 fingerprint %s: another moq-export records it with %s --tls-fingerprint %s)", url, pin, url, pin)))
	dctx, dcancel := context.WithTimeout(ctx, dialTimeout)
	defer dcancel()
	sess, err := subscribe.Dial(dctx, url, subscribe.Options{TLSFingerprint: pin, Logger: log, ReleaseRead: true, Objects: cfg.Format == record.Archive})
	if err != nil {
		stop()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("connecting to the demo publisher: %w; the demo needs UDP on 127.0.0.1 (or pass a URL)", err)
	}
	return &closingSource{Source: newSessionSource(sess), stop: stop}, nil
}

// openServer listens on --listen with the command's certificate, token key
// and limits, and says where.
func (a *app) openServer() (*subscribe.Server, error) {
	cert, pin, err := listenCert(a.cfg)
	if err != nil {
		return nil, err
	}
	opts := subscribe.ServerOptions{Certificates: []tls.Certificate{cert}, Logger: a.log, FingerprintHTTP: pin != "", MaxSessions: a.cfg.MaxPublishers,
		ReleaseRead: true, Objects: a.cfg.Format == record.Archive}
	if a.svc != nil {
		opts.OnRefused = a.svc.Refused // moq_export_publishers_refused_total{reason}
	}
	if a.cfg.AuthKey != "" {
		if opts.AuthKey, err = token.LoadKey(a.cfg.AuthKey); err != nil {
			return nil, fmt.Errorf("--auth-key: %w; give the JWK file of the key that signs the publishers' tokens (e.g. made by 'npx @moq/token generate')", err)
		}
	}
	srv, err := subscribe.Listen(a.cfg.Listen, opts)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w; pick a free UDP address such as :4443", a.cfg.Listen, err)
	}
	addr := srv.Addr().String()
	a.mu.Lock()
	a.listenAddr = addr // the bound port, for messages (--listen 127.0.0.1:0)
	a.mu.Unlock()
	switch {
	case opts.AuthKey != nil:
		a.log.Info("publishers need a token (?jwt=) signed with --auth-key that allows publishing their broadcast", "key", a.cfg.AuthKey, "algorithm", opts.AuthKey.Algorithm())
	case !loopbackOnly(srv.Addr()):
		a.log.Warn(fmt.Sprintf("--listen %s is reachable from other hosts and does not authenticate: anyone who reaches it can publish and fill the disk; give --auth-key, or listen on 127.0.0.1 for local publishers", a.cfg.Listen))
	}
	if pin != "" {
		notice(a.log, fmt.Sprintf("listening on moql://%s and https://%s (self-signed certificate, SHA-256 fingerprint %s; publishers pin it, or use http://%s)", addr, addr, pin, addr))
	} else {
		notice(a.log, fmt.Sprintf("listening on moql://%s and https://%s (certificate %s, SHA-256 fingerprint %s)", addr, addr, a.cfg.TLSCert, srv.Fingerprint()))
	}
	return srv, nil
}

// listen accepts publishers on --listen and records what they announce:
// every broadcast with --record-all, otherwise the first one (or -b).
func (a *app) listen(ctx context.Context) error {
	srv, err := a.openServer()
	if err != nil {
		return err
	}
	defer srv.Close()
	// Asked to stop with publishers connected: GOAWAY first, so that they
	// move to wherever they reconnect (this address once a restarted
	// recorder listens again) instead of learning of it from a dead
	// connection.
	goneAway := make(chan struct{})
	stopGoAway := context.AfterFunc(ctx, func() {
		defer close(goneAway)
		if n := srv.GoAway(""); n > 0 {
			a.log.Info("stopping: asked the publishers to reconnect (GOAWAY)", "sessions", n)
		}
	})
	defer stopGoAway()
	// drain, when stopping, lets a publisher read its GOAWAY and leave
	// before its session is closed under it: closing at once would drop
	// the GOAWAY unsent with the connection.
	drain := func(sess *subscribe.Session) {
		if ctx.Err() == nil {
			return
		}
		t := time.NewTimer(drainWait)
		defer t.Stop()
		select {
		case <-goneAway:
		case <-t.C:
			return
		}
		select {
		case <-sess.Done():
		case <-t.C:
		}
	}

	actx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg      sync.WaitGroup
		once    sync.Once
		firstMu sync.Mutex
		first   error
	)
	setFirst := func(err error) {
		firstMu.Lock()
		if first == nil {
			first = err
		}
		firstMu.Unlock()
		stop()
	}
	if a.cfg.Wait > 0 {
		// --wait: a publisher must announce something in time.
		t := time.AfterFunc(a.cfg.Wait, func() {
			a.mu.Lock()
			none := a.rec.Stats().Recorded == 0
			a.mu.Unlock()
			if none {
				setFirst(fmt.Errorf("no publisher announced a broadcast on --listen %s within --wait %v", a.cfg.Listen, a.cfg.Wait))
			}
		})
		defer t.Stop()
	}
	for {
		sess, err := srv.Accept(actx)
		if err != nil {
			break
		}
		src := newSessionSource(sess)
		a.sessionOpened(src)
		remove := a.addSource(src)
		a.log.Info("publisher connected", "path", sess.Path(), "version", sess.Version())
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer remove()
			defer src.Close()
			defer drain(sess)
			if a.cfg.RecordAll {
				// --duration bounds each recording; the listener goes on.
				if err := a.recordAll(actx, src, 0); err != nil && actx.Err() == nil {
					if ce, ok := errors.AsType[*subscribe.CloseError](err); ok && ce.Remote && ce.Code == 0 {
						// The publisher closed its session: how a publisher leaves.
						a.log.Info("publisher disconnected", "path", sess.Path())
					} else {
						a.log.Warn("publisher session ended", "err", err)
					}
				}
				return
			}
			// One recording: the first publisher's broadcast, then exit.
			once.Do(func() {
				name, err := a.pickBroadcast(actx, src)
				if err == nil {
					err = a.record(actx, src, name)
				}
				setFirst(err)
			})
		}()
	}
	wg.Wait()
	firstMu.Lock()
	defer firstMu.Unlock()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// drainWait bounds how long a stopping --listen waits for each publisher
// to leave after its GOAWAY (it closes its session once it has dialled
// where it reconnects).
const drainWait = 2 * time.Second

// listenCert is the certificate of --listen: --tls-cert/--tls-key, or a
// self-signed one whose pin (SHA-256 fingerprint) it returns.
func listenCert(c *Config) (cert tls.Certificate, pin string, err error) {
	if c.TLSCert != "" {
		cert, err = tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return cert, "", fmt.Errorf("loading --tls-cert/--tls-key: %w; give PEM files of a certificate and its key", err)
		}
		return cert, "", nil
	}
	if cert, pin, err = subscribe.SelfSignedCert(); err != nil {
		return cert, "", fmt.Errorf("making a self-signed certificate: %w; give one with --tls-cert and --tls-key", err)
	}
	return cert, pin, nil
}

// loopbackOnly reports whether a listener at addr is reachable from this
// host only (a loopback IP; not the unspecified address, which is every
// interface).
func loopbackOnly(addr net.Addr) bool {
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// refusedText says, for people, why the relay ended the session for good:
// the refusal in words, and what to check.
func refusedText(r *subscribe.RefusedError) string {
	switch {
	case errors.Is(r, subscribe.ErrUnauthorized):
		return "the relay refused the token (unauthorized)"
	case errors.Is(r, subscribe.ErrPathRefused):
		return "the relay refused the path (" + closeWords(r) + "); check the URL's path"
	case errors.Is(r, subscribe.ErrVersion):
		return "the relay refused the session (" + closeWords(r) + "); it speaks no protocol version moq-export does (" + strings.Join(subscribe.Versions(), ", ") + ")"
	}
	return "the relay refused the session (" + closeWords(r) + ")"
}

// closeWords is the refusal and the relay's own reason, when it gave one.
func closeWords(r *subscribe.RefusedError) string {
	if r.Close != nil && r.Close.Reason != "" && r.Close.Reason != r.Why {
		return r.Why + ": " + r.Close.Reason
	}
	return r.Why
}
