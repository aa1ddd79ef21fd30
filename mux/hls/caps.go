package hls

import (
	"fmt"

	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/mp4"
)

// families are the codecs an HLS/DASH CMAF package carries here: those of
// the HLS authoring spec and of browsers' Media Source Extensions that
// CMAF (mux/mp4's fragments) describes.
var families = map[string]bool{
	"h264": true, "h265": true, "av1": true, "vp9": true,
	"aac": true, "opus": true, "flac": true, "ac3": true, "eac3": true,
	"webvtt": true, // subtitle playlists of WebVTT segments
}

// suggestions name a container for the codecs a package cannot carry.
var suggestions = map[string]string{"vp8": "webm or mkv", "mp3": "mp4 or mkv", "mp2": "mkv or ts", "pcm": ""}

// Caps says what an HLS/DASH package carries: the tracks Supports
// accepts, any number of each kind (every rendition becomes a variant or an
// audio rendition).
var Caps = mux.Caps{Container: "hls", Supports: Supports}

// Supports returns nil when a package can carry track t, else an error
// wrapping mux.ErrUnsupportedCodec (a *mux.UnsupportedCodecError naming a
// container that can, where one exists), or what mux/mp4 finds wrong with
// its configuration. It looks at t only.
func Supports(t mux.Track) error {
	fam := mux.CodecFamily(t.Codec)
	if !families[fam] {
		return fmt.Errorf("hls: track %d: %w", t.ID, &mux.UnsupportedCodecError{Container: "hls", Codec: t.Codec, Suggest: suggestions[fam]})
	}
	if fam == "webvtt" {
		return nil
	}
	if err := mp4.Supports(t); err != nil {
		return fmt.Errorf("hls: %w", err)
	}
	return nil
}
