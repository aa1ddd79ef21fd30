package catalog

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
)

// msfTrack is the part of an MSF (draft-ietf-moq-msf-01, and draft-00)
// track entry the conversion reads.
type msfTrack struct {
	Name          string        `json:"name"`
	Packaging     ContainerKind `json:"packaging"`
	Role          string        `json:"role"`
	Codec         string        `json:"codec"`
	Width         *uint32       `json:"width"`
	Height        *uint32       `json:"height"`
	Framerate     *float64      `json:"framerate"`
	Samplerate    *uint32       `json:"samplerate"`
	ChannelConfig string        `json:"channelConfig"`
	Bitrate       *uint64       `json:"bitrate"`
	InitData      string        `json:"initData"`
	InitRef       string        `json:"initRef"`
	Jitter        *float64      `json:"jitter"`
}

// ParseMSF decodes an MSF catalog (draft-ietf-moq-msf-01, or draft-00) and
// converts it to the hang shape: tracks without a known
// role or packaging are skipped, legacy/loc initData is the description
// (base64 here, unlike hang's hex).
func ParseMSF(raw []byte) (*Catalog, error) {
	var m struct {
		Tracks       []msfTrack `json:"tracks"`
		InitDataList []struct {
			ID   string `json:"id"`
			Data string `json:"data"`
		} `json:"initDataList"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &SyntaxError{Err: fmt.Errorf("msf: %w", err)}
	}
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
		switch t.Role {
		case "video":
			if c.Video.Renditions == nil {
				c.Video.Renditions = map[string]VideoConfig{}
			}
			c.Video.Renditions[t.Name] = VideoConfig{Common: cm, CodedWidth: t.Width, CodedHeight: t.Height, Framerate: t.Framerate}
		case "audio":
			ch, _ := strconv.ParseUint(t.ChannelConfig, 10, 32)
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
			if t.Samplerate == nil || ch == 0 {
				// The reference derives these from initData; without them
				// the rendition cannot be described.
				continue
			}
			if c.Audio.Renditions == nil {
				c.Audio.Renditions = map[string]AudioConfig{}
			}
			c.Audio.Renditions[t.Name] = AudioConfig{Common: cm, SampleRate: *t.Samplerate, NumberOfChannels: uint32(ch)}
		}
	}
	c.resolveInits()
	return c, nil
}
