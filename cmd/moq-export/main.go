// Command moq-export records a Media-over-QUIC broadcast as FLV, Matroska/WebM
// or MPEG-TS.
package main

func main() {}
