// Command fleetpub is the publisher of scripts/bench-fleet.sh: one process
// serving N demo broadcasts (H.264+AAC test media, real time) on one
// loopback QUIC listener, for one recorder to dial with --record-all.
//
// It prints "URL FINGERPRINT" on stdout once it listens. The media is held
// until SIGUSR1 and every track of every broadcast has a subscriber (so
// that every recording takes its broadcast from the first frame; -ramp
// spreads the starts); then each broadcast plays in real time, or, with -pause, plays
// its first video group and pauses. The first SIGINT or SIGTERM ends every
// broadcast cleanly and prints "broadcast NAME FRAMES" for each and then
// "published FRAMES" (the media frames of all broadcasts); the session stays up for the recorder to finish until a
// second signal comes.
//
//	go run ./tools/fleetpub -n 100 -pause
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // -pprof
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

func main() {
	n := flag.Int("n", 1, "broadcasts to publish")
	pause := flag.Bool("pause", false, "pause every broadcast after its first video group")
	bitrate := flag.Int("video-bitrate", 0, "pad the video to this many bits per second (0: the demo's)")
	addr := flag.String("addr", "127.0.0.1:0", "UDP address to listen on")
	prefix := flag.String("prefix", "fleet", "broadcast names are PREFIX/b0000, PREFIX/b0001, ...")
	pprofAddr := flag.String("pprof", "", "serve Go's profiles (/debug/pprof/) on this loopback address")
	ramp := flag.Duration("ramp", 0, "start the broadcasts one after another over this long after SIGUSR1, not all in the same instant")
	versions := flag.String("versions", "", "comma-separated protocol versions to accept (e.g. moq-transport-17; empty: all)")
	flag.Parse()
	var accept []string
	if *versions != "" {
		accept = strings.Split(*versions, ",")
	}

	if *pprofAddr != "" {
		ln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "fleetpub: serving Go profiles on http://%s/debug/pprof/\n", ln.Addr())
		go http.Serve(ln, nil)
	}
	cert, pin, err := subscribe.SelfSignedCert()
	if err != nil {
		log.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := context.WithCancel(context.Background())
	hold := make(chan struct{})
	published := make([]atomic.Int64, *n) // per broadcast
	var wg sync.WaitGroup
	broadcasts := make([]*model.Broadcast, *n)
	for i := range broadcasts {
		broadcasts[i] = model.NewBroadcast(fmt.Sprintf("%s/b%04d", *prefix, i))
	}
	srv, err := subscribe.Listen(*addr, subscribe.ServerOptions{
		Certificates: []tls.Certificate{cert}, DisableWebTransport: true, Logger: logger, Publish: broadcasts, Versions: accept,
	})
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		for {
			if _, err := srv.Accept(context.Background()); err != nil {
				return
			}
		}
	}()
	for i, b := range broadcasts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := hold
			if *ramp > 0 {
				// Broadcast i starts i/n of the ramp after the hold ends.
				delayed := make(chan struct{})
				go func() {
					select {
					case <-hold:
					case <-ctx.Done():
						return
					}
					select {
					case <-time.After(*ramp * time.Duration(i) / time.Duration(len(broadcasts))):
						close(delayed)
					case <-ctx.Done():
					}
				}()
				start = delayed
			}
			opts := demo.Options{Realtime: true, Hold: start, Pause: *pause, VideoBitrate: *bitrate, Published: &published[i]}
			if err := demo.Publish(ctx, b, opts); err != nil && ctx.Err() == nil {
				logger.Error("publishing", "broadcast", b.Name(), "err", err)
			}
		}()
	}
	fmt.Printf("moql://%s/ %s\n", srv.Addr(), pin)

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGINT, syscall.SIGTERM)
	var releaseOnce sync.Once
	for s := range sigs {
		if s == syscall.SIGUSR1 {
			releaseOnce.Do(func() { go release(ctx, broadcasts, hold, logger) })
			continue
		}
		break
	}
	stop()
	wg.Wait()
	total := int64(0)
	for i, b := range broadcasts {
		fmt.Printf("broadcast %s %d\n", b.Name(), published[i].Load())
		total += published[i].Load()
	}
	fmt.Printf("published %d\n", total)
	<-sigs
	srv.Close()
}

// release starts the media once every track of every broadcast has a
// subscriber: a recording opens its file before it subscribes its media
// tracks, and a frame published before the SUBSCRIBE reached us is not
// sent (a subscription starts at the live edge), which would count as
// lost. It waits at most a minute, then starts anyway and says so.
func release(ctx context.Context, broadcasts []*model.Broadcast, hold chan struct{}, logger *slog.Logger) {
	defer close(hold)
	deadline := time.Now().Add(time.Minute)
	for i := 0; i < len(broadcasts); {
		if ctx.Err() != nil {
			return
		}
		if subscribed(broadcasts[i]) {
			i++
			continue
		}
		if time.Now().After(deadline) {
			logger.Warn("starting the media before every track is subscribed", "broadcast", broadcasts[i].Name())
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// subscribed reports whether every track of b has a consumer.
func subscribed(b *model.Broadcast) bool {
	for _, name := range b.TrackNames() {
		t, err := b.Track(name)
		if err != nil || t.Consumers() == 0 {
			return false
		}
	}
	return true
}
