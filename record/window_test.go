package record_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/moq-export/moq-export/record"
)

// slowSetup is a Source whose announcements come only after setup, as a
// relay session's do after its connection and SETUP (which took more
// than a second under load: 623621b).
type slowSetup struct {
	*record.LocalSource
	setup time.Duration
}

func (s slowSetup) Announced(ctx context.Context) (record.Feed, error) {
	f, err := s.LocalSource.Announced(ctx)
	if err != nil {
		return nil, err
	}
	return &slowFeed{Feed: f, ready: time.Now().Add(s.setup)}, nil
}

type slowFeed struct {
	record.Feed
	ready time.Time
}

func (f *slowFeed) Next(ctx context.Context) (record.Announcement, error) {
	select {
	case <-time.After(time.Until(f.ready)):
	case <-ctx.Done():
		return record.Announcement{}, context.Cause(ctx)
	}
	return f.Feed.Next(ctx)
}

// TestRecordAllThatSawNothingAnnouncedInItsWindowSaysSo: RecordAll with a
// Duration follows the announcements for that long from the call, the
// source's setup included; a window that ended with nothing announced
// (a setup slower than the window) recorded nothing, and RecordAll says so
// with an EmptyWindowError (ErrNothingRecorded) instead of returning nil.
// A broadcast announced within the window is recorded and RecordAll
// returns nil.
func TestRecordAllThatSawNothingAnnouncedInItsWindowSaysSo(t *testing.T) {
	cases := []struct {
		name  string
		setup time.Duration
		empty bool
	}{
		{"the setup outlasts the window", 3 * time.Second, true},
		{"the broadcast is announced at once", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := record.Files(t.TempDir()+"/{broadcast}.mkv", record.FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			src := slowSetup{record.Local(liveDemo("room/alice", 2)), tc.setup}
			r, err := record.New(record.Options{Output: out, Duration: time.Second, Origin: "by the test", Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = r.RecordAll(ctx, src)
			if !tc.empty {
				if err != nil || len(r.Files()) != 1 {
					t.Fatalf("RecordAll = %v, files %v; want nil and one file", err, r.Files())
				}
				return
			}
			we, ok := errors.AsType[*record.EmptyWindowError](err)
			if !ok || !errors.Is(err, record.ErrNothingRecorded) {
				t.Fatalf("RecordAll = %v (files %v), want an EmptyWindowError", err, r.Files())
			}
			if we.Window != time.Second || we.Origin != "by the test" {
				t.Errorf("the error says window %v, origin %q", we.Window, we.Origin)
			}
			if len(r.Files()) != 0 {
				t.Errorf("files %v", r.Files())
			}
		})
	}
}
