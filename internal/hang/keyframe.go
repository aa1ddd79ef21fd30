package hang

import (
	"strings"

	"github.com/bluenviron/mediacommon/v2/pkg/codecs/vp8"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/vp9"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/format/cmaf"
	"github.com/moq-export/moq-export/model"
)

// keyframer tells a keyframe from the bitstream, for a track whose groups
// are not GOPs (catalog.Common.KeysInBitstream: MediaMTX sends each frame
// as its own group, so hang's rule, the first frame of a group is the
// keyframe, would make every frame one and a recording could start or cut
// at a frame no decoder can start at).
type keyframer struct {
	codec h26x.Codec // H.264/H.265; 0 for the others
	// lengthSize is the NAL length size of an H.264/H.265 track with a
	// description (its payloads length-prefixed); 0: Annex B (the
	// deframer's output).
	lengthSize int
	family     string // "av1", "vp8", "vp9" when codec is 0
}

// newKeyframer returns the keyframer of rendition common cm, nil when its
// groups are GOPs or its codec's keyframes cannot be told cheaply (audio:
// every frame is one).
func newKeyframer(cm catalog.Common) *keyframer {
	if !cm.KeysInBitstream {
		return nil
	}
	family, _, _ := strings.Cut(strings.ToLower(cm.Codec), ".")
	switch family {
	case "av01":
		return &keyframer{family: "av1"}
	case "vp8":
		return &keyframer{family: "vp8"}
	case "vp09", "vp9":
		return &keyframer{family: "vp9"}
	}
	c, ok := h26x.CodecOf(codecFamily(cm.Codec))
	if !ok {
		return nil
	}
	k := &keyframer{codec: c}
	if len(cm.Description) > 0 {
		_, n, err := h26x.ParseDecoderConfig(c, cm.Description)
		if err != nil {
			return nil
		}
		k.lengthSize = n
	}
	return k
}

// sync returns the Sync of a frame whose codec payload is p.
func (k *keyframer) sync(p []byte) model.Sync {
	var key bool
	switch {
	case k.codec != 0 && k.lengthSize == 0:
		key = h26x.IsKeyframeAnnexB(k.codec, p)
	case k.codec != 0:
		units, err := h26x.SplitAVCC(p, k.lengthSize)
		key = err == nil && h26x.IsKeyframe(k.codec, units)
	case k.family == "av1":
		key = cmaf.AV1Keyframe(p)
	case k.family == "vp8":
		key = vp8.IsRandomAccess(p)
	case k.family == "vp9":
		key = vp9.IsRandomAccess(p)
	}
	if key {
		return model.SyncKey
	}
	return model.SyncDelta
}
