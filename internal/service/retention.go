package service

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Retention bounds what the finished recordings under the root keep:
// files older than Age are deleted, then the oldest until they hold at
// most Size bytes. A file being written is never deleted, and only files
// of the recording formats (.flv, .mkv, .webm, .ts, .mp4) are looked at.
type Retention struct {
	Age  time.Duration // 0: no bound
	Size int64         // 0: no bound
	// Every is how often the root is swept (default 1 minute).
	Every time.Duration
}

// Enabled reports whether any bound is set.
func (r Retention) Enabled() bool { return r.Age > 0 || r.Size > 0 }

// recordingExts are the files retention may delete.
var recordingExts = []string{".flv", ".mkv", ".webm", ".ts", ".mp4"}

// RunRetention sweeps the root every Retention.Every until ctx ends.
func (s *Service) RunRetention(ctx context.Context) {
	ret := s.opts.Retention
	if !ret.Enabled() {
		return
	}
	every := ret.Every
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.Sweep(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

type keptFile struct {
	path string
	size int64
	mod  time.Time
}

// Sweep applies the retention once, as at time now, and returns how many
// files it deleted.
func (s *Service) Sweep(now time.Time) int {
	ret := s.opts.Retention
	var files []keptFile
	_ = filepath.WalkDir(s.opts.Root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		if !slices.Contains(recordingExts, strings.ToLower(filepath.Ext(path))) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		files = append(files, keptFile{path: path, size: info.Size(), mod: info.ModTime()})
		return nil
	})
	// Oldest (by the time it was last written) first.
	slices.SortFunc(files, func(a, b keptFile) int { return a.mod.Compare(b.mod) })
	var total int64
	for _, f := range files {
		total += f.size
	}
	deleted := 0
	remove := func(f keptFile, reason string) bool {
		if s.isWriting(f.path) {
			return false
		}
		if err := os.Remove(f.path); err != nil {
			s.log.Warn("retention: cannot delete", "path", f.path, "err", err)
			return false
		}
		total -= f.size
		deleted++
		s.metrics.retDeleted.WithLabelValues(reason).Inc()
		s.metrics.retBytes.Add(float64(f.size))
		s.log.Info("retention: deleted", "path", f.path, "reason", reason, "size", f.size, "age", now.Sub(f.mod).Round(time.Second))
		return true
	}
	kept := files[:0]
	for _, f := range files {
		if ret.Age > 0 && now.Sub(f.mod) > ret.Age && remove(f, "age") {
			continue
		}
		kept = append(kept, f)
	}
	for _, f := range kept {
		if ret.Size <= 0 || total <= ret.Size {
			break
		}
		remove(f, "size")
	}
	return deleted
}
