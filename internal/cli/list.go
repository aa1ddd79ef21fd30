package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
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
		names, err := a.announced(ctx, src, listWait, false)
		if errors.Is(err, subscribe.ErrNoDiscovery) {
			notice(a.log, "the server offers no discovery of broadcasts, so there is nothing to list: name the stream in the URL path (moqt://HOST:PORT/live/test records the stream live/test) or with -b")
			return nil
		}
		if err != nil {
			return err
		}
		if len(names) == 0 {
			notice(a.log, "no broadcast is announced "+a.origin())
		}
		if a.cfg.JSON {
			return writeJSON(a.env.Stdout, append([]string{}, names...))
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
	if a.cfg.JSON {
		return writeJSON(a.env.Stdout, listRenditions(cat))
	}
	return writeRenditions(a.env.Stdout, cat)
}

// renditionInfo is one row of --list -b, and its --json form.
type renditionInfo struct {
	Name       string   `json:"name"`
	Kind       string   `json:"kind"`
	Codec      string   `json:"codec"`
	Width      uint32   `json:"width,omitempty"`
	Height     uint32   `json:"height,omitempty"`
	Framerate  float64  `json:"framerate,omitempty"`
	SampleRate uint32   `json:"sample_rate,omitempty"`
	Channels   uint32   `json:"channels,omitempty"`
	Bitrate    uint64   `json:"bitrate,omitempty"`
	Formats    []string `json:"formats"` // the containers that carry it
	// EnhancedFLV: FLV carries it only as Enhanced FLV (E-RTMP), which
	// ffmpeg reads from version 7.
	EnhancedFLV bool   `json:"enhanced_flv,omitempty"`
	details     string // the DETAILS column
}

func listRenditions(cat *catalog.Catalog) []renditionInfo {
	out := []renditionInfo{}
	for _, r := range cat.Renditions() {
		c := r.Common()
		ri := renditionInfo{Name: r.Name, Kind: string(r.Kind), Codec: c.Codec, Formats: []string{}, details: details(r)}
		if v := r.Video; v != nil {
			if v.CodedWidth != nil && v.CodedHeight != nil {
				ri.Width, ri.Height = *v.CodedWidth, *v.CodedHeight
			}
			if v.Framerate != nil {
				ri.Framerate = *v.Framerate
			}
		}
		if au := r.Audio; au != nil {
			ri.SampleRate, ri.Channels = au.SampleRate, au.NumberOfChannels
		}
		if c.Bitrate != nil {
			ri.Bitrate = uint64(*c.Bitrate)
		}
		for _, f := range record.Formats {
			if record.Carries(f, r) == nil {
				ri.Formats = append(ri.Formats, string(f))
				if f == FLV && record.EnhancedFLV(c.Codec) {
					ri.EnhancedFLV = true
				}
			}
		}
		out = append(out, ri)
	}
	return out
}

// writeRenditions prints the catalog's renditions as a table: name, kind,
// codec, details, and which output formats carry each one; flv* marks
// Enhanced FLV, explained below the table.
func writeRenditions(w io.Writer, cat *catalog.Catalog) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tCODEC\tDETAILS\tFORMATS")
	star := false
	for _, r := range listRenditions(cat) {
		fs := slices.Clone(r.Formats)
		if r.EnhancedFLV {
			fs[slices.Index(fs, string(FLV))] += "*"
			star = true
		}
		if i := slices.Index(fs, string(HLS)); i >= 0 {
			fs[i] = "hls/dash" // one package holds both manifests
		}
		formats := strings.Join(fs, ",")
		if formats == "" {
			formats = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Kind, r.Codec, r.details, formats)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if star {
		_, err := fmt.Fprintln(w, "\nflv*: "+enhancedFLVNote)
		return err
	}
	return nil
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
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
	if x := r.Text; x != nil {
		for _, p := range []string{x.Lang, x.Label, x.Role} {
			if p != "" {
				parts = append(parts, p)
			}
		}
	}
	c := r.Common()
	if c.Bitrate != nil && *c.Bitrate > 0 {
		parts = append(parts, fmt.Sprintf("%dkbit/s", *c.Bitrate/1000))
	}
	if k := c.ContainerKind(); k != catalog.ContainerLegacy {
		parts = append(parts, "in "+string(k)) // the input container
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
