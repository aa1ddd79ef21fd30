package catalog

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Track names of the catalog in a broadcast.
const (
	TrackName           = "catalog.json"
	CompressedTrackName = "catalog.json.z"
	// MSFTrackName is the MSF catalog track (draft-ietf-moq-msf-01, as the
	// Rust publishers name it).
	MSFTrackName = "catalog"
	// MSF00TrackName is the MSF draft-00 catalog track as MediaMTX serves
	// it.
	MSF00TrackName = ".catalog"
)

// IsTrackName reports whether name is one of the catalog track names.
func IsTrackName(name string) bool {
	return name == TrackName || name == CompressedTrackName || name == MSFTrackName || name == MSF00TrackName
}

// IsMSFTrackName reports whether name is an MSF catalog track name, whose
// frames ParseMSF reads.
func IsMSFTrackName(name string) bool { return name == MSFTrackName || name == MSF00TrackName }

// Catalog is one snapshot of a broadcast's catalog.
type Catalog struct {
	Video VideoSection `json:"video"`
	Audio AudioSection `json:"audio"`
	Text  TextSection  `json:"text,omitzero"`
	// Clock maps media time to wall time (the root "clock"; nil when the
	// catalog has none, or one hang refuses: see ClockErr).
	Clock *Clock `json:"clock,omitempty"`
	// Archive names the broadcast's timelines and recording (root.go).
	Archive *Archive `json:"archive,omitempty"`
	// JSON and Binary list the application data tracks: no media.
	JSON   *DataSection `json:"json,omitempty"`
	Binary *DataSection `json:"binary,omitempty"`

	clockErr error
}

// VideoSection lists the video renditions by track name.
type VideoSection struct {
	Renditions map[string]VideoConfig `json:"renditions,omitempty"`
	Display    *Size                  `json:"display,omitempty"`
	Rotation   *float64               `json:"rotation,omitempty"`
	Flip       *bool                  `json:"flip,omitempty"`
}

// AudioSection lists the audio renditions by track name.
type AudioSection struct {
	Renditions map[string]AudioConfig `json:"renditions,omitempty"`
}

// Size is a width and height in pixels.
type Size struct {
	Width  uint32 `json:"width"`
	Height uint32 `json:"height"`
}

// Hex is a byte string carried as a hex string in JSON (the description
// field). Either case is accepted on input; output is lowercase.
type Hex []byte

// UnmarshalJSON implements json.Unmarshaler.
func (h *Hex) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("description: %w", err)
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	d, err := hex.DecodeString(s)
	if err != nil {
		return fmt.Errorf("description: expected hex: %w", err)
	}
	*h = d
	return nil
}

// MarshalJSON implements json.Marshaler.
func (h Hex) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h)) }

// ContainerKind names how the frames of a rendition are packaged in their
// track: the input container.
type ContainerKind string

// The container kinds hang defines.
const (
	// ContainerLegacy: a varint microsecond timestamp, then the codec
	// payload. The default when the catalog names none.
	ContainerLegacy ContainerKind = "legacy"
	// ContainerLOC: draft-ietf-moq-loc properties, then the codec payload.
	ContainerLOC ContainerKind = "loc"
	// ContainerCMAF: fMP4 fragments (moof+mdat) after an init segment.
	ContainerCMAF ContainerKind = "cmaf"
)

// Container says how frames of a rendition are packaged.
type Container struct {
	// Kind is ContainerLegacy (the default), ContainerCMAF or ContainerLOC.
	// Other kinds are kept verbatim; such renditions cannot be exported.
	Kind ContainerKind `json:"kind"`
	// Init is the base64 ftyp+moov of a cmaf rendition.
	Init string `json:"init,omitempty"`

	initErr  error // why Init cannot be read (cmaf only)
	initRead bool  // initErr is known
}

// Timeline names a rendition's companion timeline track.
type Timeline struct {
	Track     string `json:"track"`
	Timescale uint64 `json:"timescale,omitempty"` // default 1000
	Wall      *int64 `json:"wall,omitempty"`
}

// Common holds the fields video and audio renditions share.
type Common struct {
	Codec       string     `json:"codec"`
	Description Hex        `json:"description,omitempty"`
	Bitrate     *uint64    `json:"bitrate,omitempty"`
	Container   *Container `json:"container,omitempty"`
	// Jitter is the longest a ready frame waits at the publisher, in ms.
	Jitter *float64 `json:"jitter,omitempty"`
	// Broadcast is a path, relative to the catalog's broadcast, of the
	// broadcast that carries this rendition's track.
	Broadcast *string   `json:"broadcast,omitempty"`
	Timeline  *Timeline `json:"timeline,omitempty"`
	// Enabled false says no frames are coming: the rendition is not
	// selected (until a catalog update enables it again). Absent: true.
	Enabled *bool `json:"enabled,omitempty"`
	// Timescale, when set, is the units per second of a loc rendition's
	// timestamps when a frame names none (LOC Timescale property): an MSF
	// catalog's clockrate or timescale, or MediaMTX's clocks (ParseMSF).
	// Hang catalogs carry no such field: their LOC timestamps are
	// microseconds.
	Timescale *uint64 `json:"-"`
	// KeysInBitstream says the rendition's groups need not start at a
	// keyframe (MediaMTX sends each frame as its own group): a reader
	// takes the key flag from the bitstream (ParseMSF sets it for MSF-00
	// catalogs). Hang catalogs carry no such field.
	KeysInBitstream bool `json:"-"`
}

// Disabled reports whether the publisher says no frames are coming
// (enabled: false).
func (c Common) Disabled() bool { return c.Enabled != nil && !*c.Enabled }

// ContainerKind returns the rendition's container kind, ContainerLegacy
// when absent.
func (c Common) ContainerKind() ContainerKind {
	if c.Container == nil || c.Container.Kind == "" {
		return ContainerLegacy
	}
	return c.Container.Kind
}

// VideoConfig is a video rendition (WebCodecs VideoDecoderConfig plus hang's
// extensions).
type VideoConfig struct {
	Common
	CodedWidth          *uint32  `json:"codedWidth,omitempty"`
	CodedHeight         *uint32  `json:"codedHeight,omitempty"`
	DisplayAspectWidth  *uint32  `json:"displayAspectWidth,omitempty"`
	DisplayAspectHeight *uint32  `json:"displayAspectHeight,omitempty"`
	Framerate           *float64 `json:"framerate,omitempty"`
	OptimizeForLatency  *bool    `json:"optimizeForLatency,omitempty"`
	// Stalled is the older drafts' advice to avoid the rendition for
	// now; hang now says Enabled and asks consumers to ignore it. Kept
	// as read, used for nothing.
	Stalled *bool `json:"stalled,omitempty"`
}

// UnmarshalJSON accepts the older displayRatioWidth/Height names.
func (v *VideoConfig) UnmarshalJSON(b []byte) error {
	type plain VideoConfig
	var aux struct {
		plain
		DisplayRatioWidth  *uint32 `json:"displayRatioWidth,omitempty"`
		DisplayRatioHeight *uint32 `json:"displayRatioHeight,omitempty"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*v = VideoConfig(aux.plain)
	if v.DisplayAspectWidth == nil {
		v.DisplayAspectWidth = aux.DisplayRatioWidth
	}
	if v.DisplayAspectHeight == nil {
		v.DisplayAspectHeight = aux.DisplayRatioHeight
	}
	if (v.DisplayAspectWidth == nil) != (v.DisplayAspectHeight == nil) {
		return errors.New("displayAspectWidth and displayAspectHeight must come together")
	}
	return nil
}

// AudioConfig is an audio rendition.
type AudioConfig struct {
	Common
	SampleRate       uint32 `json:"sampleRate"`
	NumberOfChannels uint32 `json:"numberOfChannels"`
	// Lang (BCP 47) and Label name the rendition for a picker, as text
	// renditions and MSF tracks do; hang's audio has no such fields yet.
	Lang  string `json:"lang,omitempty"`
	Label string `json:"label,omitempty"`
}

// UnmarshalJSON enforces the required fields.
func (a *AudioConfig) UnmarshalJSON(b []byte) error {
	type plain AudioConfig
	var aux struct {
		plain
		SampleRate       *uint32 `json:"sampleRate"`
		NumberOfChannels *uint32 `json:"numberOfChannels"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	if aux.SampleRate == nil || aux.NumberOfChannels == nil {
		return errors.New("audio rendition needs sampleRate and numberOfChannels")
	}
	*a = AudioConfig(aux.plain)
	a.SampleRate, a.NumberOfChannels = *aux.SampleRate, *aux.NumberOfChannels
	return nil
}

// SyntaxError reports a catalog that is not valid JSON or does not match the
// schema.
type SyntaxError struct {
	Err error
}

func (e *SyntaxError) Error() string { return "catalog: " + e.Err.Error() }

// Unwrap returns the underlying decoding error.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Parse decodes one catalog snapshot. Unknown root sections and unknown
// fields are ignored; the old array form ([{"track":{"name"},"config"}]) of a
// section's renditions is accepted.
func Parse(data []byte) (*Catalog, error) {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, &SyntaxError{err}
	}
	c := &Catalog{}
	if raw, ok := root["video"]; ok && !isNull(raw) {
		if err := parseSection(raw, &c.Video, &c.Video.Renditions); err != nil {
			return nil, &SyntaxError{fmt.Errorf("video: %w", err)}
		}
	}
	if raw, ok := root["audio"]; ok && !isNull(raw) {
		if err := parseSection(raw, &c.Audio, &c.Audio.Renditions); err != nil {
			return nil, &SyntaxError{fmt.Errorf("audio: %w", err)}
		}
	}
	if raw, ok := root["text"]; ok && !isNull(raw) {
		if err := parseSection(raw, &c.Text, &c.Text.Renditions); err != nil {
			return nil, &SyntaxError{fmt.Errorf("text: %w", err)}
		}
	}
	c.parseRoot(root)
	c.resolveInits()
	return c, nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// parseSection decodes a section in its map form, or converts the old array
// form into the map.
func parseSection[T any](raw json.RawMessage, section any, renditions *map[string]T) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var old []struct {
			Track struct {
				Name string `json:"name"`
			} `json:"track"`
			Config json.RawMessage `json:"config"`
		}
		if err := json.Unmarshal(trimmed, &old); err != nil {
			return err
		}
		*renditions = make(map[string]T, len(old))
		for _, o := range old {
			var cfg T
			if err := json.Unmarshal(o.Config, &cfg); err != nil {
				return fmt.Errorf("rendition %q: %w", o.Track.Name, err)
			}
			(*renditions)[o.Track.Name] = cfg
		}
		return nil
	}
	return json.Unmarshal(trimmed, section)
}

// Marshal encodes the catalog in its map form.
func (c *Catalog) Marshal() ([]byte, error) { return json.Marshal(c) }

// Kind of a rendition.
type Kind string

// Rendition kinds.
const (
	KindVideo Kind = "video"
	KindAudio Kind = "audio"
	KindText  Kind = "text"
)

// Rendition is one entry of either section, flattened for callers that treat
// video and audio alike.
type Rendition struct {
	Name  string
	Kind  Kind
	Video *VideoConfig // set when Kind is video
	Audio *AudioConfig // set when Kind is audio
	Text  *TextConfig  // set when Kind is text
}

// Common returns the fields shared by both kinds.
func (r Rendition) Common() Common {
	switch {
	case r.Video != nil:
		return r.Video.Common
	case r.Text != nil:
		return r.Text.Common()
	}
	return r.Audio.Common
}

// Renditions lists every rendition, video first, then audio, then text,
// each kind sorted by name.
func (c *Catalog) Renditions() []Rendition {
	var out []Rendition
	for _, name := range sortedKeys(c.Video.Renditions) {
		v := c.Video.Renditions[name]
		out = append(out, Rendition{Name: name, Kind: KindVideo, Video: &v})
	}
	for _, name := range sortedKeys(c.Audio.Renditions) {
		a := c.Audio.Renditions[name]
		out = append(out, Rendition{Name: name, Kind: KindAudio, Audio: &a})
	}
	for _, name := range sortedKeys(c.Text.Renditions) {
		t := c.Text.Renditions[name]
		out = append(out, Rendition{Name: name, Kind: KindText, Text: &t})
	}
	return out
}

func sortedKeys[T any](m map[string]T) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
