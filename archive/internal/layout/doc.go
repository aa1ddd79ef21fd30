// Package layout is the byte format of a hang Recording (the archive the
// MoQ reference writes with `moq … export archive`): object keys, the
// track-name encoding, the per-track .info object, the segment object
// (table + payload bytes), the timeline track's Window framing with its
// records, and the catalog's archive and clock sections.
//
// It writes version 2 (moq-hang-04, the draft's current text and the
// reference's main line) and reads versions 2 and 1 (version 1 is what the
// published moq-archive crates 0.0.1 to 0.0.11 write: range-addressed
// groups/<largest>.<smallest> objects and one broadcast-wide timeline).
// Version 0 (.complete, .timeline, .track) is not read.
//
// Every decoder here takes untrusted bytes: it checks the whole table
// before it touches a payload, bounds every count by the bytes left (so
// memory stays proportional to the input), and returns a typed error
// wrapping ErrMalformed, never a panic.
//
// Where the format leaves a point open, the choice is a named constant or
// function in choices.go, and nowhere else.
//
// Why hand-written: no Go library reads or writes this format; QUIC
// varints come from internal/varint and DEFLATE from compress/flate.
package layout
