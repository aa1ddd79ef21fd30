package cli

import (
	"io"

	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/flv"
	"github.com/moq-export/moq-export/mux/mkv"
	"github.com/moq-export/moq-export/mux/ts"
)

// muxers builds the muxer of each format.
var muxers = map[Format]func(io.Writer, MuxOptions) mux.Muxer{
	FLV: func(w io.Writer, o MuxOptions) mux.Muxer {
		return flv.NewWriter(w, flv.Options{KeepTimestamps: o.KeepTimestamps, Logger: o.Logger})
	},
	MKV: func(w io.Writer, o MuxOptions) mux.Muxer {
		return mkv.NewWriter(w, mkv.Options{DocType: "matroska", KeepTimestamps: o.KeepTimestamps, Logger: o.Logger})
	},
	WebM: func(w io.Writer, o MuxOptions) mux.Muxer {
		return mkv.NewWriter(w, mkv.Options{DocType: "webm", KeepTimestamps: o.KeepTimestamps, Logger: o.Logger})
	},
	TS: func(w io.Writer, o MuxOptions) mux.Muxer {
		return ts.NewWriter(w, ts.Options{KeepTimestamps: o.KeepTimestamps, Logger: o.Logger})
	},
}
