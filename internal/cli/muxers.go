package cli

import (
	"io"

	"github.com/moq-export/moq-export/mux"
)

// muxers builds the muxer of each format.
var muxers = map[Format]func(io.Writer, MuxOptions) mux.Muxer{}
