package export

import (
	"errors"
	"fmt"
	"slices"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/mux"
)

// Why Select does not take a rendition, besides the container's reasons.
var (
	ErrNotSelected    = errors.New("rendition not selected")             // others of its kind are named
	ErrInputContainer = errors.New("input container cannot be exported") // see catalog.ContainerKind
	// ErrDisabled: the catalog says enabled: false, no frames are
	// coming. The rendition is taken once an update enables it.
	ErrDisabled = errors.New("rendition disabled by its publisher")
)

// readable reports whether the engine reads renditions packaged in kind.
func readable(kind catalog.ContainerKind) bool {
	return kind == catalog.ContainerLegacy || kind == catalog.ContainerLOC || kind == catalog.ContainerCMAF
}

// Select is the one rule for which renditions an export takes: nil when
// an export with options o takes r while it exports taken[k] tracks of each
// kind (nil taken: no per-kind limit), else why not (ErrNotSelected,
// ErrInputContainer, ErrDisabled, mux.ErrTrackLimit or the Caps.Supports
// error). The
// engine and the CLI (--list, its check before recording) call it.
func Select(r catalog.Rendition, o Options, taken map[mux.Kind]int) error {
	t := TrackFromRendition(r, 0)
	want := o.Video
	switch t.Kind {
	case mux.Audio:
		want = o.Audio
	case mux.Text:
		want = o.Text
	}
	named := slices.Contains(want, r.Name)
	if want != nil && !named {
		return fmt.Errorf("%s rendition %q: %w", t.Kind, r.Name, ErrNotSelected)
	}
	if r.Common().Disabled() {
		return fmt.Errorf("%s rendition %q: %w", t.Kind, r.Name, ErrDisabled)
	}
	if want == nil && taken != nil {
		if err := o.Caps.CheckCount(t.Kind, taken[t.Kind]); err != nil {
			return err
		}
	}
	if kind := r.Common().ContainerKind(); !readable(kind) {
		return fmt.Errorf("rendition %q uses the %q container: %w", r.Name, kind, ErrInputContainer)
	}
	if err := r.Common().InitErr(); err != nil {
		return fmt.Errorf("rendition %q: %w", r.Name, err)
	}
	if err := o.Caps.Check(t); err != nil {
		return fmt.Errorf("rendition %q: %w", r.Name, err)
	}
	return nil
}

// named reports whether o names rendition r.
func named(r catalog.Rendition, o Options) bool {
	switch r.Kind {
	case catalog.KindAudio:
		return slices.Contains(o.Audio, r.Name)
	case catalog.KindText:
		return slices.Contains(o.Text, r.Name)
	}
	return slices.Contains(o.Video, r.Name)
}
