package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/objstore"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// This file is the command's side of archives: -f archive -o DIR writes
// one (record.ArchiveOutput), an archive given as the URL is a source
// (record.ArchiveSource) that --from/--to cut and --list describes, and
// --replay-to publishes one in real time.

// archivePath returns the directory a source URL names when it is an
// archive: a file:// URL, or a path to an existing directory.
func archivePath(raw string) (string, bool) {
	switch scheme := record.URLScheme(raw); {
	case slices.Contains(objstore.Schemes, scheme):
		return raw, true // an archive in a bucket
	case scheme == "file":
		p, err := record.LocalPath(raw)
		return p, err == nil
	case scheme == "":
		st, err := os.Stat(raw)
		return raw, err == nil && st.IsDir()
	}
	return "", false
}

// checkArchive checks the archive flags: --retention for -f archive,
// --from, --to and --follow for an archive source.
func (c *Config) checkArchive() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--retention", c.Retention}, {"--follow", c.Follow}} {
		if d.v < 0 {
			return usagef("%s must not be negative (got %v)", d.name, d.v)
		}
	}
	if c.Retention > 0 && c.Format != record.Archive {
		return usagef("--retention keeps a window of an archive: it goes with -f archive -o DIR")
	}
	if c.archive == "" && (c.From != "" || c.To != "" || c.Follow > 0) {
		return usagef("--from, --to and --follow read an archive: give its directory (or file:///dir) as the URL")
	}
	for _, t := range []struct {
		name string
		v    string
		dst  *archive.Time
	}{{"--from", c.From, &c.from}, {"--to", c.To, &c.to}} {
		if t.v == "" {
			continue
		}
		v, err := archive.ParseTime(t.v)
		if err != nil {
			return usagef("%s: %v", t.name, err)
		}
		*t.dst = v
	}
	if c.from.Wall.IsZero() == c.to.Wall.IsZero() && c.To != "" && c.From != "" {
		if c.from.Wall.IsZero() && c.to.Media <= c.from.Media || !c.from.Wall.IsZero() && !c.to.Wall.After(c.from.Wall) {
			return usagef("--to %s is not after --from %s", c.To, c.From)
		}
	}
	if c.Format == record.Archive {
		switch {
		case c.toStdout():
			return usagef("-f archive writes a directory of objects: give -o DIR")
		case c.Segment > 0:
			return usagef("--segment does not apply to -f archive: the archive cuts its own records (2-10 s)")
		case c.archive != "":
			return usagef("the source is an archive already: export it into a container (-o clip.mp4)")
		}
		if c.DemoFast {
			return usagef("-f archive keeps the objects as received: drop --demo-fast (the demo is then served over loopback QUIC)")
		}
	}
	return nil
}

// archiveOutput is the output of -f archive: a directory of objects.
func archiveOutput(c *Config) (record.Output, error) {
	st, err := archiveStore(context.Background(), c.Output)
	if err != nil {
		return nil, err
	}
	return record.ArchiveOutput(st, record.ArchiveOptions{Retention: c.Retention}), nil
}

// bucketCheck bounds the first request to a bucket that holds an archive.
const bucketCheck = 30 * time.Second

// archiveStore is the store an archive location names: a directory, or
// a bucket prefix (s3://BUCKET/PREFIX, see objstore.ArchiveStore).
func archiveStore(ctx context.Context, loc string) (archive.Store, error) {
	if slices.Contains(objstore.Schemes, record.URLScheme(loc)) {
		cctx, cancel := context.WithTimeout(ctx, bucketCheck)
		defer cancel()
		st, err := objstore.ArchiveStore(cctx, loc, nil)
		if err != nil {
			return nil, fmt.Errorf("the archive at %s: %w", loc, err)
		}
		return st, nil
	}
	return archive.Dir(loc)
}

// archiveSource serves the archive given as the URL.
type archiveSource struct{ *record.ArchiveSource }

func (archiveSource) Reconnects() int64 { return 0 }
func (archiveSource) Version() string   { return "" }

func openArchive(ctx context.Context, c *Config) (*archive.Archive, error) {
	st, err := archiveStore(ctx, c.archive)
	if err != nil {
		return nil, err
	}
	return archive.Open(st, ""), nil
}

func openArchiveSource(ctx context.Context, c *Config, pace bool) (Source, error) {
	a, err := openArchive(ctx, c)
	if err != nil {
		return nil, err
	}
	return archiveSource{record.NewArchiveSource(a, record.ArchiveSourceOptions{From: c.from, To: c.to, Pace: pace, Follow: c.Follow})}, nil
}

// archiveListing is what --list says of one archived broadcast.
type archiveListing struct {
	Broadcast  string          `json:"broadcast"`
	Version    int             `json:"version"`
	Renditions []archivedTrack `json:"renditions"`
}

type archivedTrack struct {
	Name  string         `json:"name"`
	Kind  string         `json:"kind"`
	Codec string         `json:"codec"`
	Spans []archive.Span `json:"spans"`
	// Wall is the wall-clock time of the first span's start, when the
	// catalog has a clock.
	Wall string `json:"wall,omitempty"`
}

// listArchive lists the archive's broadcasts (or the -b one) with their
// renditions and the time spans held.
func listArchive(ctx context.Context, c *Config, w io.Writer) error {
	a, err := openArchive(ctx, c)
	if err != nil {
		return err
	}
	names := []string{c.Broadcast}
	if c.Broadcast == "" {
		if names, err = a.Broadcasts(ctx); err != nil {
			return err
		}
	}
	var out []archiveListing
	for _, n := range names {
		rec, err := a.Recording(ctx, n)
		if err != nil {
			return err
		}
		cat, _, err := rec.Catalog(ctx, 0)
		if err != nil {
			return err
		}
		l := archiveListing{Broadcast: n, Version: rec.Version()}
		for _, r := range cat.Renditions() {
			spans, err := rec.Spans(ctx, r.Name)
			if err != nil {
				return err
			}
			t := archivedTrack{Name: r.Name, Kind: string(r.Kind), Codec: r.Common().Codec, Spans: spans}
			if len(spans) > 0 {
				if wt, ok := rec.WallTime(ctx, spans[0].Start.Microseconds()); ok {
					t.Wall = wt.UTC().Format(time.RFC3339)
				}
			}
			l.Renditions = append(l.Renditions, t)
		}
		out = append(out, l)
	}
	if c.JSON {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(out)
	}
	for _, l := range out {
		fmt.Fprintf(w, "%s (archive v%d)\n", l.Broadcast, l.Version)
		for _, t := range l.Renditions {
			var spans []string
			for _, s := range t.Spans {
				spans = append(spans, s.Start.String()+"-"+s.End.String())
			}
			held := "nothing held"
			if len(spans) > 0 {
				held = strings.Join(spans, ", gap, ")
			}
			wall := ""
			if t.Wall != "" {
				wall = " (from " + t.Wall + ")"
			}
			fmt.Fprintf(w, "  %-6s %-12s %-20s %s%s\n", t.Kind, t.Name, t.Codec, held, wall)
		}
	}
	return nil
}

// replayName is the broadcast a replay serves: -b, or the archive's only
// one.
func replayName(ctx context.Context, c *Config, src Source) (string, error) {
	if c.Broadcast != "" {
		return c.Broadcast, nil
	}
	names, err := src.(archiveSource).ArchiveSource.Names(ctx)
	if err != nil {
		return "", err
	}
	if len(names) != 1 {
		return "", usagef("the archive holds %d broadcasts (%s): pick one with -b NAME", len(names), strings.Join(names, ", "))
	}
	return names[0], nil
}

// replayToGrace is how long --replay-to keeps its session open after the
// replay ended, so the peer receives the last groups.
const replayToGrace = 3 * time.Second

// publishReplayTo publishes an archived broadcast into --replay-to, in
// real time from --from, until it ends (or, with --follow, until
// --timeout or Ctrl-C).
func publishReplayTo(ctx context.Context, c *Config, log *slog.Logger) error {
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
	target := redactURL(c.ReplayTo)
	dctx, dcancel := context.WithTimeout(ctx, dialTimeout)
	sess, err := subscribe.Dial(dctx, c.ReplayTo, subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: c.TLSFingerprint,
		TLSInsecure: c.TLSInsecure, Logger: log, Reconnect: subscribe.Backoff{Disabled: true}})
	dcancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("connecting to %s: %w; %s", target, err, dialAdvice(c, err))
	}
	defer sess.Close()
	bc := src.Broadcast(name)
	if err := bc.Err(); err != nil {
		return err
	}
	if err := sess.Publish(bc); err != nil {
		return fmt.Errorf("publishing %q to %s: %w", name, target, err)
	}
	notice(log, fmt.Sprintf("replaying the archived broadcast %q into %s in real time", name, target))
	select {
	case <-bc.Done():
		if err := bc.Err(); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("replaying %q: %w", name, err)
		}
		notice(log, "the replay ended")
		select {
		case <-sess.Done():
		case <-ctx.Done():
		case <-time.After(replayToGrace):
		}
		return nil
	case <-sess.Done():
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s closed the session", target)
	case <-ctx.Done():
		return nil
	}
}
