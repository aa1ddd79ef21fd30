package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// BenchmarkRecordDemoToFile measures what the command does per recording
// minus the network: 10 loops (40 s) of the H.264+AAC demo through the
// engine and a muxer into a buffered file. Bytes/s is payload throughput.
func BenchmarkRecordDemoToFile(b *testing.B) {
	const loops = 10
	for _, f := range []Format{FLV, MKV, TS} {
		b.Run(string(f), func(b *testing.B) {
			b.ReportAllocs()
			path := filepath.Join(b.TempDir(), "out"+f.Ext())
			var payload int64
			for b.Loop() {
				bc := model.NewBroadcast("demo")
				ctx, cancel := context.WithCancel(context.Background())
				pubDone := make(chan struct{})
				go func() {
					defer close(pubDone)
					demo.Publish(ctx, bc, demo.Options{Loops: loops, KeepGroups: 1 << 20})
				}()
				<-pubDone // publish first: the engine then reads a complete clip
				file, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				out := record.NewFileOutput(file)
				m, _ := f.NewMuxer(out, record.MuxOptions{Path: path})
				e := export.New(bc, m, export.Options{Delay: time.Hour})
				if err := e.Run(ctx); err != nil {
					b.Fatal(err)
				}
				if err := out.Close(); err != nil {
					b.Fatal(err)
				}
				cancel()
				st := e.Stats()
				if st.Frames != loops*309 {
					b.Fatalf("%d frames, want %d", st.Frames, loops*309)
				}
				payload = st.Bytes
			}
			b.SetBytes(payload)
		})
	}
}
