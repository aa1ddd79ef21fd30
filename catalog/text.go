package catalog

// TextSection lists the text (subtitle and caption) renditions by track
// name: the catalog root's "text" section of newer hang publishers.
type TextSection struct {
	Renditions map[string]TextConfig `json:"renditions,omitempty"`
}

// The text formats hang names (TextConfig.Format). Each frame of a text
// track is one cue, timed by the frame's timestamp: a "vtt" payload is a
// self-contained WebVTT segment whose cues carry their own end times, a
// "ttml" payload an IMSC fragment, a "utf8" payload plain text shown until
// the next cue (an empty payload clears it).
const (
	TextVTT  = "vtt"
	TextTTML = "ttml"
	TextUTF8 = "utf8"
)

// TextConfig is a text rendition. Unlike video and audio it names a format
// rather than a codec.
type TextConfig struct {
	// Format is TextVTT, TextTTML or TextUTF8; others are kept verbatim
	// (such renditions cannot be recorded).
	Format string `json:"format"`
	// Role is "subtitle" (the default) or "caption"; others are kept.
	Role string `json:"role,omitempty"`
	// Lang is the BCP 47 language tag ("en", "es-419"), when known.
	Lang string `json:"lang,omitempty"`
	// Label is a name for a track picker ("English (SDH)").
	Label     string     `json:"label,omitempty"`
	Container *Container `json:"container,omitempty"`
	// Jitter is the longest the publisher holds a cue back, in ms.
	Jitter *float64 `json:"jitter,omitempty"`
	// Broadcast is a path, relative to the catalog's broadcast, of the
	// broadcast that carries this rendition's track.
	Broadcast *string `json:"broadcast,omitempty"`
}

// Common returns the fields a text rendition shares with the media ones;
// its Codec is the Format.
func (t TextConfig) Common() Common {
	return Common{Codec: t.Format, Container: t.Container, Jitter: t.Jitter, Broadcast: t.Broadcast}
}
