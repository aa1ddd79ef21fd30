// Package wire encodes and decodes the moq-lite-05 messages byte for byte
// (varints, length-prefixed control messages, typed subscribe responses,
// group headers and frames), with no I/O beyond reading one message from a
// stream. Every decoder bounds what it allocates by the bytes it was given
// and the limits below, so hostile length fields cannot exhaust memory.
//
// Hand-written because no Go library implements moq-lite; quic-go's
// quicvarint is not used for parsing so that malformed input is an error
// value rather than a short read.
package wire
