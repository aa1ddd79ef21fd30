package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moq-export/moq-export/record"
)

// Options configure an Output.
type Options struct {
	// SpoolDir holds the parts waiting for the store and the state a
	// restarted recorder completes objects from (default: moq-export/spool
	// in the user's cache directory, so it survives a restart).
	SpoolDir string
	// SpoolMax bounds the bytes waiting in the spool for the store (parts
	// cut and not taken yet), over every object of the Output (default
	// DefaultSpoolMax; negative: no bound). Past it, recordings are cut
	// (record.RemoteFile.Cut). The head part and the part being filled of
	// each recording (2 × PartSize) are not counted: they are on disk
	// whether the store is there or not.
	SpoolMax int64
	// PartSize is the size of the parts uploaded while recording (default
	// DefaultPartSize; at least MinPartSize). The first part waits in the
	// spool until the recording ends, so it is also how much a recording
	// keeps on disk at the least.
	PartSize int64
	// EarlyHeadAfter is the size past which a recording's head part also
	// goes up while recording (as part 1, in its live form), once, so that
	// RecoverStore can complete the recording from the store alone if its
	// recorder and its spool are lost; the finish replaces it. Default
	// 32 × PartSize (256 MiB): what it adds, at most 1/32 of the
	// recording, keeps the upload ratio under 1.05. Negative: never.
	EarlyHeadAfter int64
	// FinishTimeout bounds how long Close waits for the store to take
	// what is left (default 10 minutes); the spool keeps what it could
	// not send.
	FinishTimeout time.Duration
	// Overwrite lets a key without placeholders replace an existing
	// object; templates never overwrite (they add -1, -2, ...).
	Overwrite bool
	// Logger receives what happens (default: nothing is logged).
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultSpoolMax = 1 << 30
	DefaultPartSize = 8 << 20
	MinPartSize     = 6 << 20 // S3's 5 MiB, and room for the head of an MP4
)

// Output is the record.Output that writes objects of a bucket (S3, GCS)
// or an Azure container.
type Output struct {
	loc  Location
	tmpl record.Template
	opts Options
	st   *store
	log  *slog.Logger

	// spool is what the spool files hold, waiting what of it is cut into
	// parts the store has not taken yet (what SpoolMax bounds).
	spool, waiting, written, cuts atomic.Int64

	mu    sync.Mutex
	names map[string]bool // keys being written by this Output
}

var _ record.Uploader = (*Output)(nil)

// Open returns the Output for an s3://, gs:// or az:// URL (see ParseURL): it makes the
// client (credentials and endpoint as newClient says), checks that the
// bucket exists and takes the credentials (so a missing bucket or refused
// credentials fail here, before anything is recorded), and makes the
// spool directory.
func Open(ctx context.Context, rawURL string, o Options) (*Output, error) {
	loc, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	t, err := record.ParseTemplate(loc.Key)
	if err != nil {
		return nil, err
	}
	if o.SpoolDir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		o.SpoolDir = filepath.Join(cache, "moq-export", "spool")
	}
	if o.SpoolMax == 0 {
		o.SpoolMax = DefaultSpoolMax
	}
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.PartSize < MinPartSize {
		return nil, fmt.Errorf("objstore: PartSize %d is below %d (S3's smallest part is 5 MiB)", o.PartSize, MinPartSize)
	}
	if o.EarlyHeadAfter == 0 {
		o.EarlyHeadAfter = 32 * o.PartSize
	}
	if o.FinishTimeout <= 0 {
		o.FinishTimeout = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(o.SpoolDir, 0o700); err != nil {
		return nil, fmt.Errorf("objstore: spool directory: %w", err)
	}
	st, err := newStore(ctx, loc, o.Logger)
	if err != nil {
		return nil, err
	}
	out := &Output{loc: loc, tmpl: t, opts: o, st: st, log: o.Logger, names: map[string]bool{}}
	if err := out.st.checkBucket(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// Location returns what the Output writes to.
func (o *Output) Location() Location { return o.loc }

// DefaultFormat is the format of the key's extension.
func (o *Output) DefaultFormat() record.Format {
	f, _ := record.FormatFromPath(o.loc.Key)
	return f
}

// Check refuses segments into one key.
func (o *Output) Check(opts record.Options) error {
	if opts.Segment > 0 && !o.tmpl.Has("n") && !o.tmpl.Has("time") {
		return fmt.Errorf("%w: Segment writes several objects, but %q would give them one key: add {n} or {time}", record.ErrTemplate, o.loc)
	}
	return nil
}

// Template returns the key template (record's free-space check looks at
// its directory; the spool is what fills the disk, and it is bounded).
func (o *Output) keyFor(ctx context.Context, broadcast string, n int, start time.Time) (string, error) {
	if !o.tmpl.IsTemplate() {
		key := o.loc.Key
		if !o.opts.Overwrite {
			ok, err := o.st.exists(ctx, key)
			if err != nil {
				return "", err
			}
			if ok || !o.claim(key) {
				return "", &record.ExistsError{Path: o.loc.object(key)}
			}
			return key, nil
		}
		o.claim(key)
		return key, nil
	}
	p, err := o.tmpl.Expand(broadcast, n, start)
	if err != nil {
		return "", err
	}
	p = filepath.ToSlash(p)
	ext := path.Ext(p)
	stem := strings.TrimSuffix(p, ext)
	key := p
	for i := 1; ; i++ {
		ok, err := o.st.exists(ctx, key)
		if err != nil {
			return "", err
		}
		if !ok && o.claim(key) {
			return key, nil
		}
		if i > 1000 {
			return "", fmt.Errorf("objstore: no free key for %s", p)
		}
		key = fmt.Sprintf("%s-%d%s", stem, i, ext)
	}
}

func (o *Output) claim(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.names[key] {
		return false
	}
	o.names[key] = true
	return true
}

func (o *Output) release(key string) {
	o.mu.Lock()
	delete(o.names, key)
	o.mu.Unlock()
}

// Create opens object number n of broadcast: its spool files, locked.
func (o *Output) Create(broadcast string, n int, start time.Time) (record.File, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, err := o.keyFor(ctx, broadcast, n, start)
	if err != nil {
		return nil, err
	}
	var idb [8]byte
	rand.Read(idb[:])
	paths := pathsOf(o.opts.SpoolDir, hex.EncodeToString(idb[:]))
	fail := func(err error) (record.File, error) {
		o.release(key)
		paths.remove()
		return nil, fmt.Errorf("objstore: spool for %s: %w", o.loc.object(key), err)
	}
	w, err := os.OpenFile(paths.media, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(err)
	}
	rf, err := os.OpenFile(paths.media, os.O_RDWR, 0)
	if err != nil {
		w.Close()
		return fail(err)
	}
	if err := lock(rf); err != nil {
		w.Close()
		rf.Close()
		return fail(err)
	}
	f := &file{o: o, key: key, paths: paths, fo: record.NewFileOutput(w), rf: rf,
		man: manifest{Version: manifestVersion, Bucket: o.loc.Bucket, Key: key}}
	f.idle = sync.NewCond(&f.mu)
	f.sniff = snifferFor(key)
	f.ctx, f.cancel = context.WithCancel(context.Background())
	if err := writeManifest(paths.manifest, &f.man); err != nil {
		f.fo.Close()
		rf.Close()
		return fail(err)
	}
	return f, nil
}

// UploadStats accounts for the uploads of every object of the Output.
func (o *Output) UploadStats() record.UploadStats {
	return record.UploadStats{
		Objects:       o.st.objects.Load(),
		BytesUploaded: o.st.uploaded.Load(),
		BytesWritten:  o.written.Load(),
		Parts:         o.st.parts.Load(),
		Retries:       o.st.retries.Load(),
		SpoolBytes:    max(0, o.spool.Load()),
		Latency:       time.Duration(o.st.latency.Load()),
		Failures:      o.st.failures.Load(),
		Cuts:          o.cuts.Load(),
	}
}

// contentType is the MIME type of a recording by its key's extension.
func contentType(key string) string {
	switch strings.ToLower(path.Ext(key)) {
	case ".mp4":
		return "video/mp4"
	case ".mkv":
		return "video/x-matroska"
	case ".webm":
		return "video/webm"
	case ".ts":
		return "video/mp2t"
	case ".flv":
		return "video/x-flv"
	case ".m3u8":
		return "application/vnd.apple.mpegurl"
	case ".mpd":
		return "application/dash+xml"
	case ".m4s":
		return "video/iso.segment"
	case ".json":
		return "application/json"
	}
	return "application/octet-stream"
}

var _ = errors.New
