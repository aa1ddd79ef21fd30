package catalog

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/moq-export/moq-export/internal/format/cmaf"
)

// ErrBadInit means a cmaf rendition whose init segment is missing or does
// not decode. Such a rendition stays in the catalog (its Common.InitErr
// says why) so that one bad rendition does not hide the others.
var ErrBadInit = errors.New("catalog: cmaf rendition without a usable init")

// DecodeInit returns the init segment of a cmaf container: the base64
// ftyp+moov (standard or URL alphabet, padded or not).
func (c *Container) DecodeInit() ([]byte, error) {
	s := strings.TrimSpace(c.Init)
	if s == "" {
		return nil, fmt.Errorf("%w: no init", ErrBadInit)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%w: init is not base64", ErrBadInit)
}

// InitErr returns why a cmaf rendition cannot be read (wrapping
// ErrBadInit), or nil.
func (c Common) InitErr() error {
	ct := c.Container
	if ct == nil || ct.Kind != ContainerCMAF {
		return nil
	}
	if !ct.initRead {
		// A catalog built in code, not parsed: read it now, without
		// writing to a container others may be reading.
		_, err := readInit(ct)
		return err
	}
	return ct.initErr
}

// resolveInits reads the init segment of every cmaf rendition and fills
// what the rendition leaves out and the init's sample entry says: the codec
// configuration record (avcC, hvcC, av1C, AudioSpecificConfig, OpusHead,
// fLaC+STREAMINFO), the coded size, the sample rate and channel count. The
// catalog's own values win. A rendition whose init is missing or bad keeps
// the reason in its container (Common.InitErr).
func (c *Catalog) resolveInits() {
	for name, v := range c.Video.Renditions {
		if v.ContainerKind() != ContainerCMAF {
			continue
		}
		in, err := parseInit(v.Container)
		if err != nil {
			continue
		}
		if len(v.Description) == 0 {
			v.Description = in.Description
		}
		if v.CodedWidth == nil && in.Width > 0 && in.Height > 0 {
			w, h := uint32(in.Width), uint32(in.Height)
			v.CodedWidth, v.CodedHeight = &w, &h
		}
		c.Video.Renditions[name] = v
	}
	for name, a := range c.Audio.Renditions {
		if a.ContainerKind() != ContainerCMAF {
			continue
		}
		in, err := parseInit(a.Container)
		if err != nil {
			continue
		}
		if len(a.Description) == 0 {
			a.Description = in.Description
		}
		if a.SampleRate == 0 {
			a.SampleRate = uint32(max(in.SampleRate, 0))
		}
		if a.NumberOfChannels == 0 {
			a.NumberOfChannels = uint32(max(in.Channels, 0))
		}
		c.Audio.Renditions[name] = a
	}
}

// parseInit reads a container's init (readInit) and records the outcome
// in the container. Only Parse and ParseMSF call it, on their own catalog.
func parseInit(ct *Container) (*cmaf.Init, error) {
	in, err := readInit(ct)
	ct.initErr, ct.initRead = err, true
	return in, err
}

// readInit decodes and parses a container's init.
func readInit(ct *Container) (*cmaf.Init, error) {
	b, err := ct.DecodeInit()
	if err != nil {
		return nil, err
	}
	in, err := cmaf.ParseInit(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInit, err)
	}
	return in, nil
}
