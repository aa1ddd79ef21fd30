package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/moq-export/moq-export/catalog"
)

// listWait is how long --list waits for the first announcement.
const listWait = 3 * time.Second

// list prints the broadcasts under the URL, or with -b the renditions of
// one broadcast as a table.
func (a *app) list(ctx context.Context, src Source) error {
	// The negotiated version goes to the console, so stdout stays the list.
	if v := src.Version(); v != "" {
		fmt.Fprintf(a.con, "moq-export: protocol %s\n", v)
	}
	if a.cfg.Broadcast == "" {
		names, err := a.announced(ctx, src, listWait)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			fmt.Fprintf(a.con, "moq-export: no broadcast is announced %s\n", a.origin())
			return nil
		}
		for _, n := range names {
			fmt.Fprintln(a.env.Stdout, n)
		}
		return nil
	}
	bc := src.Broadcast(a.cfg.Broadcast)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cat, err := firstCatalog(cctx, bc)
	if err != nil {
		return fmt.Errorf("broadcast %q: reading its catalog: %w; run --list without -b to see the broadcasts", a.cfg.Broadcast, err)
	}
	return writeRenditions(a.env.Stdout, cat)
}

// writeRenditions prints the catalog's renditions as a table: name, kind,
// codec, details, and which output formats carry each one.
func writeRenditions(w io.Writer, cat *catalog.Catalog) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tCODEC\tDETAILS\tFORMATS")
	for _, r := range cat.Renditions() {
		var fs []string
		for _, f := range Formats {
			if carries(f, r) == nil {
				fs = append(fs, string(f))
			}
		}
		formats := strings.Join(fs, ",")
		if formats == "" {
			formats = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Kind, r.Common().Codec, details(r), formats)
	}
	return tw.Flush()
}

// details describes a rendition's picture or sound in a few words.
func details(r catalog.Rendition) string {
	var parts []string
	if v := r.Video; v != nil {
		if v.CodedWidth != nil && v.CodedHeight != nil {
			parts = append(parts, fmt.Sprintf("%dx%d", *v.CodedWidth, *v.CodedHeight))
		}
		if v.Framerate != nil && *v.Framerate > 0 {
			parts = append(parts, fmt.Sprintf("%gfps", *v.Framerate))
		}
	}
	if au := r.Audio; au != nil {
		if au.SampleRate > 0 {
			parts = append(parts, fmt.Sprintf("%dHz", au.SampleRate))
		}
		if au.NumberOfChannels > 0 {
			parts = append(parts, fmt.Sprintf("%dch", au.NumberOfChannels))
		}
	}
	c := r.Common()
	if c.Bitrate != nil && *c.Bitrate > 0 {
		parts = append(parts, fmt.Sprintf("%dkbit/s", *c.Bitrate/1000))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
