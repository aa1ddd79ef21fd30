// Package export is the export engine: it reads a broadcast's catalog and
// tracks from package model, orders their frames with package jitter and
// feeds a mux.Muxer, driven by one goroutine per export.
package export
