package export

import (
	"log/slog"
	"time"

	"github.com/moq-export/moq-export/jitter"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// Options configures an Export. The zero value exports every rendition the
// muxer accepts with a 500 ms jitter delay.
type Options struct {
	// CatalogTrack is the catalog's track name; empty means the names
	// catalog.TracksFor the broadcast's name, in order (catalog.Watch).
	CatalogTrack string
	// Delay bounds how long a lagging track holds the output (see package
	// jitter). Zero means jitter.DefaultDelay.
	Delay time.Duration
	// MaxDelay is how far late frames may grow Delay, so that a track
	// that keeps lagging the others is waited for instead of dropped from
	// then on (jitter.Options.MaxDelay). Zero: Delay stays fixed.
	MaxDelay time.Duration
	// Latency is how far a newer group must be ahead before a track gives up
	// on a stalled group (see model.Track.Subscribe). Zero means Delay, or
	// MaxDelay when it is longer and MediaTimeOnly is set (a file waits
	// for a group on its way, as for a track that lags).
	Latency time.Duration
	// Late is the policy for frames that arrive after later ones left.
	Late jitter.LatePolicy
	// MediaTimeOnly makes the Delay bound count media time only: when
	// nothing flows at all (a network outage), the output waits for every
	// track instead of moving on after Delay of wall time, so the missed
	// groups a reconnect fetches are not late. For files (see
	// jitter.Options.MediaTimeOnly).
	MediaTimeOnly bool
	// CheckPayloads drops every frame whose payload is not what its
	// track's codec says (H.264/H.265 NAL unit lengths that do not add up,
	// ADTS on raw AAC; see TrackStats.DroppedMalformed) instead of handing
	// it to the muxer. Package record always sets it; tests that feed
	// placeholder payloads leave it off.
	CheckPayloads bool
	// Video, Audio and Text name the renditions to export; nil: all the
	// container carries, empty: none (see Select). A named rendition it
	// cannot carry is an error. Text renditions are recorded where the
	// container carries them; elsewhere they are skipped with a warning.
	Video, Audio, Text []string
	// Caps is what the muxer's container carries (flv.Caps, ...); zero
	// leaves it to AddTrack.
	Caps mux.Caps
	// MaxDuration stops the export after this much media time; 0 means no
	// limit.
	MaxDuration time.Duration
	// Resolve returns the broadcast a rendition's "broadcast" reference
	// names; nil skips such renditions with a warning.
	Resolve func(ref string) (*model.Broadcast, error)
	// Logger receives warnings; nil logs nothing.
	Logger *slog.Logger
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time
}
