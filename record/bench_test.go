package record_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// BenchmarkRecorder measures a recording through the package, as the
// command makes it: 10 loops (40 s) of the H.264+AAC demo from an
// in-process broadcast into one file (overwritten each time, as the other
// benchmark does), per format. Compare with
// internal/cli's BenchmarkRecordDemoToFile, which drives the engine and a
// muxer directly: the difference is what this layer costs.
func BenchmarkRecorder(b *testing.B) {
	const loops = 10
	for _, f := range []record.Format{record.FLV, record.MKV, record.TS} {
		b.Run(string(f), func(b *testing.B) {
			b.ReportAllocs()
			dir := b.TempDir()
			var payload int64
			for b.Loop() {
				bc := model.NewBroadcast("demo")
				if err := demo.Publish(context.Background(), bc, demo.Options{Loops: loops, KeepGroups: 1 << 20}); err != nil {
					b.Fatal(err)
				}
				out, err := record.Files(filepath.Join(dir, "out"+f.Ext()), record.FileOptions{Overwrite: true})
				if err != nil {
					b.Fatal(err)
				}
				rec, err := record.New(record.Options{Output: out, Delay: time.Hour, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				if err := rec.Record(context.Background(), record.Local(bc), "demo"); err != nil {
					b.Fatal(err)
				}
				st := rec.Stats()
				if st.Frames != loops*309 {
					b.Fatalf("%d frames, want %d", st.Frames, loops*309)
				}
				payload = st.Bytes
			}
			b.SetBytes(payload)
		})
	}
}
