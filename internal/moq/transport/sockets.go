package transport

import (
	"sync"
	"sync/atomic"
)

// The datagrams each open QUIC socket received, for the overload monitor
// (internal/overload): quic-go queues at most QueuedPacketsPerConn of a
// connection's packets for its goroutine and drops the rest, so the rate a
// socket receives at, times how long a goroutine may wait to run, is how
// full that queue gets.

// QueuedPacketsPerConn is how many received packets quic-go (v0.64.1,
// protocol.MaxConnUnprocessedPackets) queues for a connection's goroutine;
// it drops the packets that find the queue full (a qlog packet_dropped,
// dos_prevention), and congestion control reads them as losses.
const QueuedPacketsPerConn = 256

// SocketPackets is one open socket's count of received datagrams.
type SocketPackets struct {
	ID      uint64 // the socket's, unique in the process
	Packets uint64 // received since it was opened
}

type socketStat struct {
	id      uint64
	packets atomic.Uint64
}

var sockets struct {
	mu     sync.Mutex
	nextID uint64
	open   map[*socketStat]struct{}
}

func addSocket() *socketStat {
	sockets.mu.Lock()
	defer sockets.mu.Unlock()
	sockets.nextID++
	st := &socketStat{id: sockets.nextID}
	if sockets.open == nil {
		sockets.open = map[*socketStat]struct{}{}
	}
	sockets.open[st] = struct{}{}
	return st
}

func removeSocket(st *socketStat) {
	sockets.mu.Lock()
	delete(sockets.open, st)
	sockets.mu.Unlock()
}

// ReceivedPackets appends to dst the datagram counts of the QUIC sockets
// open now (a dialled connection's own socket, or a listener's, which all
// its connections share) and returns it. On systems without the batch
// reader (not Linux) it counts nothing.
func ReceivedPackets(dst []SocketPackets) []SocketPackets {
	sockets.mu.Lock()
	defer sockets.mu.Unlock()
	for st := range sockets.open {
		dst = append(dst, SocketPackets{ID: st.id, Packets: st.packets.Load()})
	}
	return dst
}
