package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
	"github.com/moq-export/moq-export/token"
)

// serveReplay serves an archived broadcast on --listen (--replay): the
// server role, as the reference's `import archive` republishes a
// recording. The broadcast is announced to every session that connects;
// its replay, paced in real time from --from, starts when the first
// subscriber asks for a track, so later subscribers join it live. It
// returns when the replay ended and its last groups had time to leave
// (or, with --follow, at --timeout or Ctrl-C).
func serveReplay(ctx context.Context, c *Config, log *slog.Logger) error {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	src, err := openArchiveSource(ctx, c, true)
	if err != nil {
		return err
	}
	defer src.Close()
	name, err := replayName(ctx, c, src)
	if err != nil {
		return err
	}
	bc := src.Broadcast(name)
	if err := bc.Err(); err != nil {
		return err
	}
	cert, pin, err := listenCert(c)
	if err != nil {
		return err
	}
	opts := subscribe.ServerOptions{Certificates: []tls.Certificate{cert}, Logger: log, FingerprintHTTP: pin != "",
		Publish: []*model.Broadcast{bc}}
	if c.AuthKey != "" {
		if opts.AuthKey, err = token.LoadKey(c.AuthKey); err != nil {
			return fmt.Errorf("--auth-key: %w; give the JWK file of the key that signs the subscribers' tokens (e.g. made by 'npx @moq/token generate')", err)
		}
	}
	srv, err := subscribe.Listen(c.Listen, opts)
	if err != nil {
		return fmt.Errorf("listening on %s: %w; pick a free UDP address such as :4443", c.Listen, err)
	}
	defer srv.Close()
	addr := srv.Addr().String()
	switch {
	case opts.AuthKey != nil:
		log.Info("subscribers need a token (?jwt=) signed with --auth-key that allows subscribing to the broadcast", "key", c.AuthKey, "algorithm", opts.AuthKey.Algorithm())
	case !loopbackOnly(srv.Addr()):
		log.Warn(fmt.Sprintf("--listen %s is reachable from other hosts and does not authenticate: anyone who reaches it can watch %q; give --auth-key, or listen on 127.0.0.1", c.Listen, name))
	}
	fp := pin
	if fp == "" {
		fp = srv.Fingerprint()
	}
	notice(log, fmt.Sprintf("serving the archived broadcast %q on moql://%s and https://%s (SHA-256 fingerprint %s); the replay starts, in real time, when the first subscriber asks for a track", name, addr, addr, fp))
	// The sessions are served by the server; taking them here only logs
	// who came.
	go func() {
		for {
			sess, err := srv.Accept(ctx)
			if err != nil {
				return
			}
			log.Info("subscriber connected", "path", sess.Path(), "version", sess.Version())
		}
	}()
	select {
	case <-bc.Done():
		if err := bc.Err(); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("replaying %q: %w", name, err)
		}
		notice(log, "the replay ended")
		// The subscribers receive the last groups and the ends of the
		// tracks before the server closes.
		select {
		case <-ctx.Done():
		case <-time.After(replayToGrace):
		}
		return nil
	case <-ctx.Done():
		return nil
	}
}
