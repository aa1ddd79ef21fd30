package export

import (
	"errors"
	"fmt"
	"slices"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/mux"
)

// Why Select does not take a rendition (besides the container's own
// reasons, which wrap mux.ErrUnsupportedCodec or mux.ErrTrackLimit).
var (
	// ErrNotSelected means Options.Video or Options.Audio names other
	// renditions of the kind.
	ErrNotSelected = errors.New("rendition not selected")
	// ErrInputContainer means the rendition's frames are packaged in an
	// input container (catalog.ContainerKind) the engine cannot read.
	ErrInputContainer = errors.New("input container cannot be exported")
)

// Readable reports whether the engine reads renditions packaged in kind.
func Readable(kind catalog.ContainerKind) bool {
	return kind == catalog.ContainerLegacy || kind == catalog.ContainerLOC || kind == catalog.ContainerCMAF
}

// Select is the one rule for which renditions an export takes. It reports
// whether an export with options o takes rendition r while it already
// exports taken[k] tracks of each kind k: nil when it does, otherwise why
// not, wrapping ErrNotSelected, ErrInputContainer, mux.ErrTrackLimit (only
// when o names no rendition of the kind; nil taken applies no limit) or the
// o.Caps.Supports error.
//
// The engine calls it for every rendition a catalog adds; callers call it
// to tell beforehand what a recording would hold (the CLI's --list and its
// check before recording). It reads nothing but its arguments.
func Select(r catalog.Rendition, o Options, taken map[mux.Kind]int) error {
	t := TrackFromRendition(r, 0)
	want := o.Video
	if t.Kind == mux.Audio {
		want = o.Audio
	}
	named := slices.Contains(want, r.Name)
	if want != nil && !named {
		return fmt.Errorf("%s rendition %q: %w", t.Kind, r.Name, ErrNotSelected)
	}
	if want == nil && taken != nil {
		if err := o.Caps.CheckCount(t.Kind, taken[t.Kind]); err != nil {
			return err
		}
	}
	if kind := r.Common().ContainerKind(); !Readable(kind) {
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
	if r.Kind == catalog.KindAudio {
		return slices.Contains(o.Audio, r.Name)
	}
	return slices.Contains(o.Video, r.Name)
}
