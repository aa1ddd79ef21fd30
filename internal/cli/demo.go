package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// demoBroadcast is the name of the built-in demo broadcast.
const demoBroadcast = "demo"

// demoKeepGroups holds every group of a --demo-fast broadcast, which is
// published faster than it is read.
const demoKeepGroups = 1 << 30

// demoLateAfter is when the --demo-late codecs join the demo broadcast.
const demoLateAfter = 2 * time.Second

// checkDemoCodecs refuses sample names that do not exist, or that have no
// form in the demo's container, and late ones the demo has from the start.
func checkDemoCodecs(names, late []string, container string) error {
	for _, l := range []struct {
		flag  string
		names []string
	}{{"--demo-codecs", names}, {"--demo-late", late}} {
		if _, err := demo.Catalog(l.names); err != nil {
			return usagef("%s %s: unknown test codec; pick from %s", l.flag, strings.Join(l.names, ","), strings.Join(samples.SampleNames(), ", "))
		}
	}
	if len(names) == 0 {
		names = demo.DefaultRenditions
	}
	for _, n := range late {
		if slices.Contains(names, n) {
			return usagef("--demo-late %s: the demo has %s from the start; pick a codec --demo-codecs does not list", n, n)
		}
	}
	all := append(append([]string(nil), names...), late...)
	if _, err := demo.CatalogIn(all, catalog.ContainerKind(container)); err != nil {
		return usagef("--demo-container %s: %v; pick other --demo-codecs", container, err)
	}
	return nil
}

// newDemoBroadcast starts publishing the demo into a model broadcast. The
// returned wait function blocks until publishing stopped.
func newDemoBroadcast(ctx context.Context, cfg *Config, log *slog.Logger) (*model.Broadcast, func()) {
	name := cfg.Broadcast
	if name == "" {
		name = demoBroadcast
	}
	bc := model.NewBroadcast(name)
	opts := demo.Options{Renditions: cfg.DemoCodecs, Late: cfg.DemoLate, LateAfter: demoLateAfter, Loops: cfg.DemoLoops, Realtime: !cfg.DemoFast, Container: catalog.ContainerKind(cfg.DemoContainer)}
	if cfg.DemoFast {
		opts.KeepGroups = demoKeepGroups
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := demo.Publish(ctx, bc, opts); err != nil && ctx.Err() == nil {
			log.Error("demo publisher stopped", "err", err)
		}
	}()
	return bc, func() { <-done }
}

// demoNotice is what the command says on stderr when it records the demo.
func demoNotice(cfg *Config, via string) string {
	codecs := cfg.DemoCodecs
	if len(codecs) == 0 {
		codecs = demo.DefaultRenditions
	}
	if len(cfg.DemoLate) > 0 {
		codecs = append(append([]string(nil), codecs...), fmt.Sprintf("%s after %v", strings.Join(cfg.DemoLate, "+"), demoLateAfter))
	}
	verb := "recording"
	if cfg.List {
		verb = "listing"
	}
	return fmt.Sprintf("no URL given: %s the built-in demo broadcast %q (%s test media) %s; pass a URL to record a relay", verb, demoBroadcast, strings.Join(codecs, "+"), via)
}

// startDemo starts the demo publisher and returns a source serving it:
// over loopback QUIC (see serveDemo), or in process for --demo-fast, where
// the benchmark measures the export rather than the transport.
func startDemo(ctx context.Context, cfg *Config, con *console, log *slog.Logger) (Source, error) {
	if err := checkDemoCodecs(cfg.DemoCodecs, cfg.DemoLate, cfg.DemoContainer); err != nil {
		return nil, err
	}
	if cfg.DemoFast {
		return startLocalDemo(ctx, cfg, con, log)
	}
	return serveDemo(ctx, cfg, con, log)
}

// startLocalDemo publishes the demo into a model broadcast in process.
func startLocalDemo(ctx context.Context, cfg *Config, con *console, log *slog.Logger) (Source, error) {
	pctx, cancel := context.WithCancel(context.Background())
	bc, wait := newDemoBroadcast(pctx, cfg, log)
	src := newLocalSource(bc)
	notice(log, demoNotice(cfg, "published in process"))
	return &closingSource{Source: src, stop: func() { cancel(); wait() }}, nil
}

// closingSource runs stop when the source closes.
type closingSource struct {
	Source
	stop func()
}

func (s *closingSource) Close() error {
	err := s.Source.Close()
	s.stop()
	return err
}

// demoToGrace is how long --demo-to keeps its session open after the demo
// ended, so the peer receives the last groups (closing a QUIC connection
// drops what it has not delivered) and the "ended" announcement.
const demoToGrace = 3 * time.Second

// publishDemoTo publishes the built-in demo into --demo-to: a --listen
// moq-export, or a relay. It runs until the demo ends (--demo-loops),
// --timeout, Ctrl-C, or the peer closes the session.
func publishDemoTo(ctx context.Context, cfg *Config, log *slog.Logger) error {
	if err := checkDemoCodecs(cfg.DemoCodecs, cfg.DemoLate, cfg.DemoContainer); err != nil {
		return err
	}
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	target := redactURL(cfg.DemoTo)
	dctx, dcancel := context.WithTimeout(ctx, dialTimeout)
	sess, err := subscribe.Dial(dctx, cfg.DemoTo, subscribe.Options{
		Role:           subscribe.RolePublisher,
		TLSFingerprint: cfg.TLSFingerprint,
		TLSInsecure:    cfg.TLSInsecure,
		Logger:         log,
		// A publisher that lost its peer has nobody to publish to: the
		// run ends, and the peer's close is how a --listen moq-export
		// that recorded the broadcast says it is done.
		Reconnect: subscribe.Backoff{Disabled: true},
	})
	dcancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("connecting to %s: %w; %s", target, err, dialAdvice(cfg, err))
	}
	defer sess.Close()
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	bc, wait := newDemoBroadcast(pctx, cfg, log)
	defer wait()
	if err := sess.Publish(bc); err != nil {
		return fmt.Errorf("publishing the demo to %s: %w", target, err)
	}
	notice(log, fmt.Sprintf("publishing the built-in demo broadcast %q into %s (%s, until %s)", bc.Name(), target, sess.Version(), demoToEnd(cfg)))
	select {
	case <-bc.Done():
		notice(log, "the demo broadcast ended")
		select {
		case <-sess.Done():
		case <-ctx.Done():
		case <-time.After(demoToGrace):
		}
		return nil
	case <-sess.Done():
		if ctx.Err() != nil {
			return nil
		}
		if err := sess.Err(); err != nil {
			return fmt.Errorf("%s closed the session: %w", target, err)
		}
		return fmt.Errorf("%s closed the session", target)
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			notice(log, fmt.Sprintf("stopped after --timeout %v", cfg.Timeout))
		}
		return nil
	}
}

// demoToEnd says what ends a --demo-to run.
func demoToEnd(cfg *Config) string {
	switch {
	case cfg.DemoLoops > 0 && cfg.Timeout > 0:
		return fmt.Sprintf("--demo-loops %d or --timeout %v", cfg.DemoLoops, cfg.Timeout)
	case cfg.DemoLoops > 0:
		return fmt.Sprintf("each sample played %d %s", cfg.DemoLoops, plural(cfg.DemoLoops, "time", "times"))
	case cfg.Timeout > 0:
		return fmt.Sprintf("--timeout %v", cfg.Timeout)
	}
	return "Ctrl-C"
}
