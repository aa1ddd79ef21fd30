package record

import (
	"io"

	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/flv"
	"github.com/moq-export/moq-export/mux/mkv"
	"github.com/moq-export/moq-export/mux/mp4"
	"github.com/moq-export/moq-export/mux/ts"
)

// muxer is what the command knows of one output format: what its container
// carries, and how to build its muxer.
type muxer struct {
	caps mux.Caps
	new  func(io.Writer, MuxOptions) mux.Muxer
}

// muxers holds the muxer of each format.
var muxers = map[Format]muxer{
	FLV: {flv.Caps, func(w io.Writer, o MuxOptions) mux.Muxer {
		return flv.NewWriter(w, flv.Options{KeepTimestamps: o.KeepTimestamps, Logger: o.Logger})
	}},
	MKV: {mkv.Caps, func(w io.Writer, o MuxOptions) mux.Muxer {
		return mkv.NewWriter(w, mkv.Options{DocType: "matroska", KeepSizesUnknown: o.FinishHead != nil, KeepTimestamps: o.KeepTimestamps, Logger: o.Logger})
	}},
	WebM: {mkv.WebMCaps, func(w io.Writer, o MuxOptions) mux.Muxer {
		return mkv.NewWriter(w, mkv.Options{DocType: "webm", KeepSizesUnknown: o.FinishHead != nil, KeepTimestamps: o.KeepTimestamps, Logger: o.Logger})
	}},
	TS: {ts.Caps, func(w io.Writer, o MuxOptions) mux.Muxer {
		return ts.NewWriter(w, ts.Options{KeepTimestamps: o.KeepTimestamps, Logger: o.Logger})
	}},
	MP4: {mp4.Caps, func(w io.Writer, o MuxOptions) mux.Muxer {
		return mp4.NewWriter(w, mp4.Options{Path: o.Path, FinishHead: o.FinishHead, KeepTimestamps: o.KeepTimestamps, Logger: o.Logger})
	}},
}
