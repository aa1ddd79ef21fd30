// Package udpproxy is a loopback UDP relay for fault tests: it forwards
// datagrams between clients and one upstream address and can blackhole both
// directions on demand, as a dropped network does to a QUIC connection
// (nothing arrives, nothing is closed). It is test support, not part of the
// recorder; no library does this for UDP in a few lines, hence by hand.
package udpproxy
