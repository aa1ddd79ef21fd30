package cli

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testmedia"
	"github.com/moq-export/moq-export/model"
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
			return usagef("%s %s: unknown test codec; pick from %s", l.flag, strings.Join(l.names, ","), strings.Join(testmedia.SampleNames(), ", "))
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
	bc := model.NewBroadcast(demoBroadcast)
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
