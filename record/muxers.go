package record

import (
	"io"

	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/flv"
	"github.com/moq-export/moq-export/mux/hls"
	"github.com/moq-export/moq-export/mux/mkv"
	"github.com/moq-export/moq-export/mux/mp4"
	"github.com/moq-export/moq-export/mux/ts"
)

// muxer is what the command knows of one output format: what its container
// carries, and how to build its muxer.
type muxer struct {
	caps mux.Caps
	new  func(io.Writer, MuxOptions) mux.Muxer
	// pkg builds the muxer of a format that writes a package of files
	// (new is then only asked what the muxer can do).
	pkg func(Package, PackageMuxOptions) mux.Muxer
}

// muxers holds the muxer of each format.
var muxers = map[Format]muxer{
	FLV: {caps: flv.Caps, new: func(w io.Writer, o MuxOptions) mux.Muxer {
		return flv.NewWriter(w, flv.Options{KeepTimestamps: o.KeepTimestamps, Logger: o.Logger})
	}},
	MKV: {caps: mkv.Caps, new: func(w io.Writer, o MuxOptions) mux.Muxer {
		return mkv.NewWriter(w, mkv.Options{DocType: "matroska", KeepSizesUnknown: o.FinishHead != nil, KeepTimestamps: o.KeepTimestamps, Logger: o.Logger, WallClock: o.WallClock})
	}},
	WebM: {caps: mkv.WebMCaps, new: func(w io.Writer, o MuxOptions) mux.Muxer {
		return mkv.NewWriter(w, mkv.Options{DocType: "webm", KeepSizesUnknown: o.FinishHead != nil, KeepTimestamps: o.KeepTimestamps, Logger: o.Logger, WallClock: o.WallClock})
	}},
	TS: {caps: ts.Caps, new: func(w io.Writer, o MuxOptions) mux.Muxer {
		return ts.NewWriter(w, ts.Options{KeepTimestamps: o.KeepTimestamps, Logger: o.Logger})
	}},
	MP4: {caps: mp4.Caps, new: func(w io.Writer, o MuxOptions) mux.Muxer {
		return mp4.NewWriter(w, mp4.Options{Path: o.Path, FinishHead: o.FinishHead, FinishByCopy: o.Compact, KeepTimestamps: o.KeepTimestamps, Logger: o.Logger, WallClock: o.WallClock})
	}},
	HLS: {caps: hls.Caps,
		new: func(io.Writer, MuxOptions) mux.Muxer { return hls.NewWriter(hls.Options{}) },
		pkg: func(p Package, o PackageMuxOptions) mux.Muxer {
			return hls.NewWriter(hls.Options{Store: p, Playlist: p.Playlist(), SegmentDuration: o.SegmentDuration, SegmentFiles: o.SegmentFiles, Start: o.Start, Clock: o.WallClock, Logger: o.Logger})
		}},
}
