// Package codecconf builds the codec configuration records that the
// muxers (mux/flv, mux/mkv, mux/ts) need when a catalog carries no
// description: an AAC AudioSpecificConfig (and the fields an ADTS header
// shares with it) from the codec string, sample rate and channel count, and
// an Opus identification header (OpusHead).
//
// What comes from github.com/bluenviron/mediacommon/v2: the
// AudioSpecificConfig layout (mpeg4audio). What is written here and why:
// the OpusHead, because mediacommon v2.9.3's opus.IDHeader.Marshal writes
// the pre-skip, input sample rate and output gain big-endian where RFC 7845
// has them little-endian (decoders then skip about 300 ms of audio); and the
// mapping from WebCodecs strings and channel counts to MPEG-4 fields, which
// no library offers.
package codecconf
