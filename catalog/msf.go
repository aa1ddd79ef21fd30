package catalog

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// msfTrack is the part of an MSF (draft-ietf-moq-msf-01, and draft-00 as
// MediaMTX writes it) track entry the conversion reads. Unknown fields are
// ignored.
type msfTrack struct {
	Name       string        `json:"name"`
	Packaging  ContainerKind `json:"packaging"`
	Role       string        `json:"role"`
	Codec      string        `json:"codec"`
	Width      *uint32       `json:"width"`
	Height     *uint32       `json:"height"`
	Framerate  *float64      `json:"framerate"`
	Samplerate *uint32       `json:"samplerate"`
	// ChannelConfig is MSF-01's channel count (a string there; a number
	// is taken too), Channels MSF-00's (MediaMTX).
	ChannelConfig msfNumber `json:"channelConfig"`
	Channels      msfNumber `json:"channels"`
	// ClockRate (MSF-00) and Timescale are the units per second of the
	// track's LOC timestamps.
	ClockRate msfNumber `json:"clockrate"`
	Timescale msfNumber `json:"timescale"`
	Bitrate   *uint64   `json:"bitrate"`
	InitData  string    `json:"initData"`
	InitRef   string    `json:"initRef"`
	Jitter    *float64  `json:"jitter"`
	// Lang (BCP 47) and Label name an audio or subtitle track for a
	// picker.
	Lang  string `json:"lang"`
	Label string `json:"label"`
}

// msfNumber is a non-negative integer written as a JSON number or a
// string of digits; anything else reads as 0 (absent).
type msfNumber uint64

// UnmarshalJSON implements json.Unmarshaler.
func (n *msfNumber) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*n = 0
	switch x := v.(type) {
	case float64:
		if x > 0 && x < 1<<53 && x == float64(uint64(x)) {
			*n = msfNumber(x)
		}
	case string:
		if u, err := strconv.ParseUint(x, 10, 64); err == nil {
			*n = msfNumber(u)
		}
	}
	return nil
}

// msfRole returns the role of an MSF track: its role field, else the one
// its codec implies (MSF-00 as MediaMTX writes it has no role), "" when
// neither says.
func msfRole(t msfTrack) string {
	if t.Role != "" {
		return t.Role
	}
	return RoleOfCodec(t.Codec)
}

// RoleOfCodec returns "video" or "audio" for a WebCodecs codec string of a
// known family, "" otherwise.
func RoleOfCodec(codec string) string {
	family, _, _ := strings.Cut(strings.ToLower(codec), ".")
	switch family {
	case "avc1", "avc3", "hev1", "hvc1", "av01", "vp8", "vp09", "vp9", "h264", "h265":
		return "video"
	case "mp4a", "opus", "flac", "ulaw", "alaw", "pcm-u8", "pcm-s16", "pcm-s24", "pcm-s32", "pcm-f32", "ac-3", "ec-3", "mp3":
		return "audio"
	}
	return ""
}

// MediaMTX's LOC timestamps when its catalog names no clock: 90 kHz for
// video, the sample rate for audio (its RTP clocks).
const msf00VideoClock = 90_000

// ParseMSF decodes an MSF catalog (draft-ietf-moq-msf-01, or draft-00) and
// converts it to the hang shape: tracks without a known role (given, or
// implied by the codec) or packaging are skipped, legacy/loc initData is
// the description (base64 here, unlike hang's hex). A loc track's
// timestamp timescale (Common.Timescale) is its clockrate or timescale;
// in a draft-00 catalog (a numeric version, as MediaMTX writes) without
// either, MediaMTX's clocks: 90 kHz video, the sample rate for audio. The
// groups of a draft-00 catalog's legacy/loc tracks are not GOPs (MediaMTX
// sends a group per frame): Common.KeysInBitstream.
func ParseMSF(raw []byte) (*Catalog, error) {
	var m struct {
		Version      any        `json:"version"`
		Tracks       []msfTrack `json:"tracks"`
		InitDataList []struct {
			ID   string `json:"id"`
			Data string `json:"data"`
		} `json:"initDataList"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &SyntaxError{Err: fmt.Errorf("msf: %w", err)}
	}
	_, draft00 := m.Version.(float64)
	inits := map[string]string{}
	for _, d := range m.InitDataList {
		inits[d.ID] = d.Data
	}
	c := &Catalog{}
	for _, t := range m.Tracks {
		switch t.Packaging {
		case ContainerLegacy, ContainerLOC, ContainerCMAF:
		default:
			continue
		}
		role := msfRole(t)
		init := t.InitData
		if init == "" && t.InitRef != "" {
			init = inits[t.InitRef]
		}
		cm := Common{Codec: t.Codec, Bitrate: t.Bitrate, Jitter: t.Jitter,
			Container: &Container{Kind: t.Packaging}}
		if t.Packaging == ContainerCMAF {
			if init == "" {
				return nil, &SyntaxError{Err: fmt.Errorf("msf: cmaf track %q without initData", t.Name)}
			}
			cm.Container.Init = init
		} else if init != "" {
			d, err := base64.StdEncoding.DecodeString(init)
			if err != nil {
				return nil, &SyntaxError{Err: fmt.Errorf("msf: track %q initData: %w", t.Name, err)}
			}
			cm.Description = d
		}
		// MSF-00 as MediaMTX writes it puts each frame in its own group.
		cm.KeysInBitstream = draft00 && t.Packaging != ContainerCMAF
		if t.Packaging == ContainerLOC {
			scale := uint64(t.ClockRate)
			if scale == 0 {
				scale = uint64(t.Timescale)
			}
			if scale == 0 && draft00 {
				switch {
				case role == "video":
					scale = msf00VideoClock
				case role == "audio" && t.Samplerate != nil:
					scale = uint64(*t.Samplerate)
				}
			}
			if scale > 0 {
				cm.Timescale = &scale
			}
		}
		switch role {
		case "video":
			if c.Video.Renditions == nil {
				c.Video.Renditions = map[string]VideoConfig{}
			}
			c.Video.Renditions[t.Name] = VideoConfig{Common: cm, CodedWidth: t.Width, CodedHeight: t.Height, Framerate: t.Framerate}
		case "audio":
			ch := uint64(t.ChannelConfig)
			if ch == 0 {
				ch = uint64(t.Channels)
			}
			if (t.Samplerate == nil || ch == 0) && t.Packaging == "cmaf" {
				// Like the reference: from the init's sample entry.
				if in, err := parseInit(cm.Container); err == nil {
					if t.Samplerate == nil && in.SampleRate > 0 {
						r := uint32(in.SampleRate)
						t.Samplerate = &r
					}
					if ch == 0 {
						ch = uint64(max(in.Channels, 0))
					}
				}
			}
			if t.Samplerate == nil || *t.Samplerate == 0 || ch == 0 || ch > 255 {
				// The reference derives these from initData; without them
				// the rendition cannot be described.
				continue
			}
			if c.Audio.Renditions == nil {
				c.Audio.Renditions = map[string]AudioConfig{}
			}
			c.Audio.Renditions[t.Name] = AudioConfig{Common: cm, SampleRate: *t.Samplerate, NumberOfChannels: uint32(ch), Lang: t.Lang, Label: t.Label}
		}
	}
	c.resolveInits()
	return c, nil
}
