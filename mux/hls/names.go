package hls

import (
	"path"
	"strings"
)

// StateSuffix ends the name of a package's state: NAME.state.json beside
// its multivariant playlist NAME.m3u8. Every package holds one from its
// first segment on.
const StateSuffix = stateSuffix

// InPackage reports whether a file named name (a base name) in the
// directory of the package whose state is named state (a base name ending
// in StateSuffix) is one the package writes: its multivariant playlist,
// MPD and state, a rendition's media playlist, media file, init segments
// and segments (v0.m3u8, v0.mp4, v0-init-2.mp4, v0-00001.m4s,
// s0-00001.vtt, ...), or the hidden spare a DirStore swaps one of them
// with (.v0.m3u8.tmp). Other files beside it (another recording, a note)
// are not the package's. A package's manifest directories (.manifests,
// .manifests.tmp) are its too; they are directories, not names here.
func InPackage(state, name string) bool {
	if !strings.HasSuffix(state, StateSuffix) {
		return false
	}
	if n, ok := strings.CutPrefix(name, "."); ok {
		if n, ok = strings.CutSuffix(n, ".tmp"); !ok {
			return false
		}
		name = n
	}
	stem := strings.TrimSuffix(state, StateSuffix)
	switch name {
	case state, stem + ".m3u8", stem + ".mpd":
		return true
	}
	return renditionFile(name)
}

// renditionFile reports whether name is a file a rendition writes: its
// id (a kind's letter, v, a or s, and a number), then .m3u8, .mp4,
// -init.mp4, -init-K.mp4, -N.m4s or -N.vtt (Writer.addTrack, initName,
// the segments' URIs).
func renditionFile(name string) bool {
	if name == "" || !strings.ContainsRune("vas", rune(name[0])) {
		return false
	}
	rest := name[1:]
	n := digits(rest)
	if n == 0 {
		return false
	}
	rest = rest[n:]
	switch ext := path.Ext(rest); {
	case rest == ".m3u8", rest == ".mp4", rest == "-init.mp4":
		return true
	case ext == ".mp4":
		k, ok := strings.CutPrefix(strings.TrimSuffix(rest, ext), "-init-")
		return ok && k != "" && digits(k) == len(k)
	case ext == ".m4s", ext == ".vtt":
		k, ok := strings.CutPrefix(strings.TrimSuffix(rest, ext), "-")
		return ok && k != "" && digits(k) == len(k)
	}
	return false
}

// digits is how many ASCII digits s starts with.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// OtherPackage returns the multivariant playlist of a package other than
// the one whose multivariant playlist is playlist (NAME.m3u8) among the
// names of a directory's files: the first NAME.state.json of another NAME
// (every package holds its state from its first segment on). ok is false
// when there is none: the directory is free for the package, or holds it
// already, to be continued.
func OtherPackage(names []string, playlist string) (other string, ok bool) {
	own := strings.TrimSuffix(playlist, path.Ext(playlist)) + StateSuffix
	for _, n := range names {
		if stem, isState := strings.CutSuffix(n, StateSuffix); isState && n != own && stem != "" && !strings.HasPrefix(n, ".") {
			return stem + ".m3u8", true
		}
	}
	return "", false
}
