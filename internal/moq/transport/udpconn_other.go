//go:build !linux

package transport

import "net"

// quicPacketConn returns the socket quic-go reads and writes: udp itself
// (the allocation-free batch reader is Linux's, udpconn_linux.go).
func quicPacketConn(udp *net.UDPConn) net.PacketConn { return udp }
