package record

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/model"
)

// Archive is the format of an ArchiveOutput: the hang Recording layout
// (package archive), not a container.
const Archive Format = "archive"

// ArchiveOptions configure ArchiveOutput.
type ArchiveOptions struct {
	// Retention keeps a DVR window of this much media per track, deleting
	// older records as new ones land; 0 keeps everything.
	Retention time.Duration
	// Grace is how long expired objects stay for readers still fetching
	// them (see archive.WriteOptions.Grace).
	Grace time.Duration
}

// ArchiveOutput returns the Output that archives each broadcast, every
// track of it, losslessly into st, under a prefix of its own
// (archive.BroadcastPrefix): the objects as received, which the source
// must deliver (a subscribe.Session dialled with Options.Objects, as Run
// does for this output). Its Format is Archive; Segment does not apply
// (the archive cuts its own records) and Duration stops a recording after
// that much wall-clock time.
func ArchiveOutput(st archive.Store, o ArchiveOptions) Output { return &archiveOutput{st: st, o: o} }

type archiveOutput struct {
	st archive.Store
	o  ArchiveOptions
}

// ErrArchiveFiles is returned by an ArchiveOutput asked for a file: an
// archive keeps objects.
var ErrArchiveFiles = errors.New("record: an archive output keeps objects, not files")

func (a *archiveOutput) Create(string, int, time.Time) (File, error) { return nil, ErrArchiveFiles }

func (a *archiveOutput) DefaultFormat() Format { return Archive }

func (a *archiveOutput) Check(o Options) error {
	switch {
	case o.Format != Archive:
		return fmt.Errorf("record: an archive output writes Format %q, not %q", Archive, o.Format)
	case o.Segment > 0:
		return fmt.Errorf("record: Segment does not apply to an archive: it cuts its own records")
	}
	return nil
}

// Objects implements BroadcastOutput: an archive keeps the objects as
// received.
func (a *archiveOutput) Objects() bool { return true }

// WriteBroadcast implements BroadcastOutput: it archives every track of
// the broadcast under its own prefix until it ends or ctx does.
func (a *archiveOutput) WriteBroadcast(ctx context.Context, w BroadcastWrite) error {
	prefix, err := archive.BroadcastPrefix("", w.Name)
	if err != nil {
		return err
	}
	w.Logger.Info("archiving", "broadcast", w.Name, "prefix", prefix)
	err = archive.Write(ctx, a.st, prefix, w.Broadcast, archive.WriteOptions{Retention: a.o.Retention, Grace: a.o.Grace,
		Logger: w.Logger.With("broadcast", w.Name), OnRecord: func(e archive.RecordEvent) {
			if !e.Gap {
				w.Wrote(e.Frames, e.Bytes, time.Duration(e.End)*time.Microsecond)
			}
		}})
	if err != nil {
		return fmt.Errorf("archiving %q: %w", w.Name, err)
	}
	return nil
}

// ArchiveSource is a Source serving the broadcasts of an archive, as a
// relay serves live ones: each is read (archive.Recording.Broadcast) from
// From to To, as fast as it is recorded, or in real time with Pace (a
// replay). Close ends the broadcasts it serves.
type ArchiveSource struct {
	a        *archive.Archive
	from, to archive.Time
	read     archive.ReadOptions

	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

// ArchiveSourceOptions configure NewArchiveSource.
type ArchiveSourceOptions struct {
	// From and To bound what is read of each broadcast (zero: its start,
	// its end).
	From, To archive.Time
	// Pace and Follow as archive.ReadOptions.
	Pace   bool
	Follow time.Duration
}

// NewArchiveSource returns the Source of the archive a.
func NewArchiveSource(a *archive.Archive, o ArchiveSourceOptions) *ArchiveSource {
	ctx, cancel := context.WithCancel(context.Background())
	return &ArchiveSource{a: a, from: o.From, to: o.To, read: archive.ReadOptions{Pace: o.Pace, Follow: o.Follow}, ctx: ctx, cancel: cancel}
}

// Broadcast returns archived broadcast path, read from From to To; one
// that cannot be read is a broadcast closed with the error.
func (s *ArchiveSource) Broadcast(path string) *model.Broadcast {
	b, err := s.open(path)
	if err != nil {
		b = model.NewBroadcast(path)
		b.Close(err)
	}
	return b
}

func (s *ArchiveSource) open(path string) (*model.Broadcast, error) {
	rec, err := s.a.Recording(s.ctx, path)
	if err != nil {
		return nil, fmt.Errorf("broadcast %q: %w", path, err)
	}
	o := s.read
	if !s.from.IsZero() {
		if o.From, err = rec.Micros(s.ctx, s.from); err != nil {
			return nil, err
		}
	}
	if !s.to.IsZero() {
		if o.To, err = rec.Micros(s.ctx, s.to); err != nil {
			return nil, err
		}
	}
	return rec.Broadcast(s.ctx, o)
}

// Names lists the broadcasts the archive holds.
func (s *ArchiveSource) Names(ctx context.Context) ([]string, error) { return s.a.Broadcasts(ctx) }

// Announced announces every broadcast the archive holds, once.
func (s *ArchiveSource) Announced(ctx context.Context) (Feed, error) {
	names, err := s.a.Broadcasts(ctx)
	if err != nil {
		return nil, err
	}
	q := make([]Announcement, len(names))
	for i, n := range names {
		q[i] = Announcement{Path: n, Active: true}
	}
	return &queuedFeed{done: s.ctx.Done(), queue: q}, nil
}

// Resolve refuses references: an archive holds one broadcast per prefix.
func (s *ArchiveSource) Resolve(b *model.Broadcast, ref string) (*model.Broadcast, error) {
	return nil, fmt.Errorf("broadcast reference %q: %w", ref, model.ErrNotFound)
}

// Close ends the broadcasts served and the announcement feeds.
func (s *ArchiveSource) Close() error {
	s.once.Do(s.cancel)
	return nil
}
