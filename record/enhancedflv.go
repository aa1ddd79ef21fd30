package record

import (
	"github.com/moq-export/moq-export/mux"
)

// EnhancedFLVNote explains the flv* of --list and the warning of a recording.
const EnhancedFLVNote = "Enhanced FLV (H.265, AV1, VP9, Opus in FLV) needs ffmpeg >= 7 to play; Debian 12's ffmpeg 5.1 cannot read it: prefer -f mkv"

// EnhancedFLV reports whether FLV carries codec only in its Enhanced
// (E-RTMP) form: everything but H.264, AAC and MP3.
func EnhancedFLV(codec string) bool {
	switch mux.CodecFamily(codec) {
	case "h264", "aac", "mp3":
		return false
	}
	return true
}
