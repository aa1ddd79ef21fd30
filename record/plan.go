package record

import (
	"errors"
	"fmt"
	"strings"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/export"
)

// Plan checks, before any file is created, that a recording of the
// broadcast name with catalog cat has something to record: the renditions
// named exist and the container can carry each of them, and at least one
// rendition is selected and recordable. Its errors blame what is wrong:
// the selection (wrapping ErrSelection), the input container or the
// output format (naming formats that would carry it).
func (r *Recorder) Plan(name string, cat *catalog.Catalog) error {
	rs := cat.Renditions()
	if len(rs) == 0 {
		return fmt.Errorf("broadcast %q has no renditions in its catalog; nothing to record", name)
	}
	byName := map[string]catalog.Rendition{}
	for _, rd := range rs {
		byName[rd.Name] = rd
	}
	opts := r.exportOptions()
	for _, want := range []struct {
		kind  catalog.Kind
		names []string
	}{{catalog.KindVideo, r.opts.Video}, {catalog.KindAudio, r.opts.Audio}, {catalog.KindText, r.opts.Text}} {
		for _, n := range want.names {
			rd, ok := byName[n]
			if !ok || rd.Kind != want.kind {
				return &SelectionError{Broadcast: name, Kind: want.kind, Name: n,
					Video: renditionNames(rs, catalog.KindVideo), Audio: renditionNames(rs, catalog.KindAudio), Text: renditionNames(rs, catalog.KindText)}
			}
			if err := export.Select(rd, opts, nil); err != nil {
				re := &RenditionError{Broadcast: name, Kind: want.kind, Name: n, Format: r.opts.Format, Err: err}
				if !errors.Is(err, export.ErrInputContainer) && !strings.Contains(err.Error(), " instead") {
					re.Others = r.others([]catalog.Rendition{rd})
				}
				return re
			}
		}
	}
	var (
		codecs []string
		why    []error
	)
	for _, rd := range rs {
		err := export.Select(rd, opts, nil)
		if err == nil && rd.Kind != catalog.KindText {
			return nil
		}
		if err == nil || rd.Kind == catalog.KindText {
			// Subtitles alone make no recording; a container without
			// them skips them.
			continue
		}
		if !errors.Is(err, export.ErrNotSelected) {
			codecs = append(codecs, rd.Name+" ("+rd.Common().Codec+")")
			why = append(why, err)
		}
	}
	if len(why) == 0 {
		// Only "none" of one kind left nothing (the other kind is absent).
		return &SelectionError{Broadcast: name, Video: renditionNames(rs, catalog.KindVideo), Audio: renditionNames(rs, catalog.KindAudio)}
	}
	if all(why, export.ErrInputContainer) {
		return fmt.Errorf("nothing of %q can be recorded: every selected rendition uses an input container this build does not read (%s)", name, errors.Join(why...))
	}
	fe := &FormatError{Broadcast: name, Format: r.opts.Format, Renditions: codecs, Err: why[0]}
	if !errors.Is(why[0], export.ErrInputContainer) {
		fe.Others = r.others(rs)
	}
	return fe
}

// others returns the formats but the Recorder's that carry one of rs.
func (r *Recorder) others(rs []catalog.Rendition) []Format {
	var out []Format
	for _, f := range Formats {
		if f == r.opts.Format {
			continue
		}
		for _, rd := range rs {
			if Carries(f, rd) == nil {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// all reports whether every error in errs wraps target.
func all(errs []error, target error) bool {
	for _, e := range errs {
		if !errors.Is(e, target) {
			return false
		}
	}
	return true
}

func renditionNames(rs []catalog.Rendition, kind catalog.Kind) []string {
	var n []string
	for _, r := range rs {
		if r.Kind == kind {
			n = append(n, r.Name)
		}
	}
	return n
}

// Carries returns nil when format f can carry rendition r (by the one
// selection rule, export.Select).
func Carries(f Format, r catalog.Rendition) error {
	return export.Select(r, export.Options{Caps: f.Caps()}, nil)
}
