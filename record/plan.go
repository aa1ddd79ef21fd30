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
		flag  string
		kind  catalog.Kind
		names []string
	}{{"--video", catalog.KindVideo, r.opts.Video}, {"--audio", catalog.KindAudio, r.opts.Audio}} {
		for _, n := range want.names {
			rd, ok := byName[n]
			if !ok || rd.Kind != want.kind {
				return selectionErrorf("broadcast %q has no %s rendition %q (it has %s); see --list -b %s", name, want.kind, n, renditionNames(rs, want.kind), name)
			}
			if err := export.Select(rd, opts, nil); err != nil {
				if !errors.Is(err, export.ErrInputContainer) && strings.Contains(err.Error(), " instead") {
					return fmt.Errorf("%s %s: %w", want.flag, n, err) // it says what to use
				}
				return fmt.Errorf("%s %s: %w; %s", want.flag, n, err, r.advice(name, []catalog.Rendition{rd}, err))
			}
		}
	}
	var (
		codecs []string
		why    []error
	)
	for _, rd := range rs {
		err := export.Select(rd, opts, nil)
		if err == nil {
			return nil
		}
		if !errors.Is(err, export.ErrNotSelected) {
			codecs = append(codecs, rd.Name+" ("+rd.Common().Codec+")")
			why = append(why, err)
		}
	}
	if len(why) == 0 {
		// Only "none" of one kind left nothing (the other kind is absent).
		return selectionErrorf("the selection leaves nothing of %q to record: it has video %s, audio %s; see --list -b %s",
			name, renditionNames(rs, catalog.KindVideo), renditionNames(rs, catalog.KindAudio), name)
	}
	if all(why, export.ErrInputContainer) {
		return fmt.Errorf("nothing of %q can be recorded: every selected rendition uses an input container this build does not read (%s)", name, errors.Join(why...))
	}
	return fmt.Errorf("%s cannot carry any selected rendition of %q (%s): %s", r.opts.Format, name, strings.Join(codecs, ", "), r.advice(name, rs, why[0]))
}

// advice says what to do about renditions rs that the output cannot take.
func (r *Recorder) advice(name string, rs []catalog.Rendition, err error) string {
	if !errors.Is(err, export.ErrInputContainer) {
		var others []string
		for _, f := range Formats {
			if f == r.opts.Format {
				continue
			}
			for _, rd := range rs {
				if Carries(f, rd) == nil {
					others = append(others, string(f))
					break
				}
			}
		}
		if len(others) > 0 {
			return "record with -f " + strings.Join(others, " or -f ")
		}
	}
	return "pick other renditions with --video/--audio (see --list -b " + name + ")"
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

func renditionNames(rs []catalog.Rendition, kind catalog.Kind) string {
	var n []string
	for _, r := range rs {
		if r.Kind == kind {
			n = append(n, r.Name)
		}
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

// Carries returns nil when format f can carry rendition r (by the one
// selection rule, export.Select).
func Carries(f Format, r catalog.Rendition) error {
	return export.Select(r, export.Options{Caps: f.Caps()}, nil)
}
