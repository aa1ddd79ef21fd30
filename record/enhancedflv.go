package record

import (
	"errors"
	"github.com/moq-export/moq-export/mux"
)

// ErrEnhancedFLV is what the warning of a file written as Enhanced FLV
// says (in its "err" attribute): older players cannot read it.
var ErrEnhancedFLV = errors.New("players that read only classic FLV cannot play it")

// EnhancedFLV reports whether FLV carries codec only in its Enhanced
// (E-RTMP) form: everything but H.264, AAC and MP3.
func EnhancedFLV(codec string) bool {
	switch mux.CodecFamily(codec) {
	case "h264", "aac", "mp3":
		return false
	}
	return true
}
