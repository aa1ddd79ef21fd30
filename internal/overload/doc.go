// Package overload tells when the recorder is too busy to keep up with the
// packets it receives, before quic-go starts dropping them.
//
// quic-go hands each connection's received packets to the connection's
// goroutine through a queue of transport.QueuedPacketsPerConn (256)
// packets and drops what finds it full; congestion control then reads the
// drops as losses and the media comes late or not at all. On 2 cores with
// 1,000 recordings that happened while the goroutine waited to be
// scheduled, and nothing said so. The queue fills by the socket's packet
// rate times how long a runnable goroutine waits to run, so the Monitor
// samples both every quarter second: the rate of the busiest QUIC socket
// (transport.ReceivedPackets) and the longest scheduling wait of the
// interval (the Go runtime's /sched/latencies:seconds histogram). Their
// product is the backlog a connection's goroutine can find waiting; at
// half the queue the recorder is overloaded (a warning, a metric, and Err
// refuses new recordings), and it is no longer once the backlog stays
// under a quarter of the queue for a second.
//
// The longest wait, not a percentile, because one stall overflows the
// queue: at 100,000 packets a second 256 packets are 2.6 ms. A listener's
// socket carries all its connections, so its rate overstates any one
// connection's: the estimate errs towards refusing early.
//
// Written by hand: neither quic-go nor the runtime offers a signal that
// comes before the loss (quic-go's qlog reports the drop itself, and a
// tracer on every connection costs an event per packet).
package overload
