package record_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// frameIndex is a container of a service's own: one line per frame
// (track, kind, timestamp in µs, keyframe, payload size), for a search
// index of what was published.
type frameIndex struct {
	w      *bufio.Writer
	kinds  map[int]mux.Kind
	names  map[int]string
	frames int64
	bytes  int64
}

func (x *frameIndex) AddTrack(t mux.Track) error {
	x.kinds[t.ID], x.names[t.ID] = t.Kind, t.Name
	return nil
}
func (x *frameIndex) RemoveTrack(int) error { return nil }
func (x *frameIndex) WriteFrame(f mux.Frame) error {
	x.frames++
	x.bytes += int64(len(f.Payload))
	_, err := fmt.Fprintf(x.w, "%s %s %d %v %d\n", x.names[f.TrackID], x.kinds[f.TrackID], f.Timestamp, f.Keyframe, len(f.Payload))
	return err
}
func (x *frameIndex) Stats() mux.Stats { return mux.Stats{Frames: x.frames, Bytes: x.bytes} }
func (x *frameIndex) Close() error     { return x.w.Flush() }

// Record into a container of one's own: Options.Container gives its Caps
// (here the zero Caps: every track) and a factory of its muxer, and
// Options.Format names it; files, templates, segments and the stats work
// as for the built-in formats.
func Example_ownContainer() {
	url, pin, stop := demoRelay("room/alice")
	defer stop()
	dir, _ := os.MkdirTemp("", "rec")
	defer os.RemoveAll(dir)

	out, err := record.Files(filepath.Join(dir, "alice.idx"), record.FileOptions{})
	if err != nil {
		log.Fatal(err)
	}
	index := &record.Container{New: func(w io.Writer, _ record.MuxOptions) (mux.Muxer, error) {
		return &frameIndex{w: bufio.NewWriter(w), kinds: map[int]mux.Kind{}, names: map[int]string{}}, nil
	}}
	files, err := record.Run(context.Background(), record.Options{URL: url, Dial: subscribe.Options{TLSFingerprint: pin},
		Broadcast: "room/alice", Output: out, Format: "index", Container: index, Duration: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	b, _ := os.ReadFile(files[0].Path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	fmt.Println(files[0].Format, int64(len(lines)) == files[0].Frames, strings.Contains(string(b), " video "), strings.Contains(string(b), " audio "))
	// Output: index true true true
}
