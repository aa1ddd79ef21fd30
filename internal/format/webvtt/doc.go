// Package webvtt reads and writes the little of WebVTT (W3C WebVTT: The Web
// Video Text Tracks Format) a recorder needs: the cues of a hang "vtt"
// frame (a self-contained WEBVTT segment), a cue in WebM's Matroska block
// layout (identifier, settings, text on their own lines), and WebVTT files
// of cues for HLS subtitle playlists.
//
// It is written here rather than taken from a subtitle library because
// only the cue timing and block structure are needed: the cue text,
// settings and identifiers pass through untouched, and the libraries that
// exist (go-astisub) parse and re-render styling and pull in an HTML
// parser for that.
package webvtt
