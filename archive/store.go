package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Store is where an archive's objects live: a directory (Dir) now, an
// object store by implementing it. Keys are '/'-separated, relative, and
// never hold "." or ".." elements (the archive encodes every name from
// the network, so none can escape the store's root).
type Store interface {
	// Put stores data under key, whole or not at all, and durably before
	// it returns (an object is never seen torn). Putting an existing key
	// succeeds only with identical bytes (objects are immutable).
	Put(ctx context.Context, key string, data []byte) error
	// Get returns the object at key; an error wrapping fs.ErrNotExist
	// when there is none.
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns the keys that start with prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// ErrObjectExists is wrapped when Put meets an existing object with other
// bytes.
var ErrObjectExists = errors.New("archive: object exists with other bytes")

// ErrBadKey is wrapped when a key is not a clean relative path.
var ErrBadKey = errors.New("archive: bad object key")

// tmpPrefix names the files Dir writes before they are linked into place.
const tmpPrefix = ".tmp-"

// DirStore is a Store in a local directory: one file per object, written
// to a temporary file, synced, and linked into place (so a crash leaves
// either the whole object or none), the directory synced after.
//
// Get reads the objects it returns into shared chunks of memory (readArena)
// rather than an allocation each: a reader takes thousands of objects of
// tens of kilobytes, and each one allocated alone costs the garbage
// collector more than reading it does.
type DirStore struct {
	root  string
	arena readArena
}

// Dir returns the store rooted at directory root, creating it.
func Dir(root string) (*DirStore, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("archive: creating %s: %w", root, err)
	}
	return &DirStore{root: root}, nil
}

// Root returns the store's directory.
func (d *DirStore) Root() string { return d.root }

func (d *DirStore) file(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "\\") || path.Clean(key) != key {
		return "", fmt.Errorf("%w: %q", ErrBadKey, key)
	}
	for _, el := range strings.Split(key, "/") {
		if el == "." || el == ".." || strings.HasPrefix(el, tmpPrefix) {
			return "", fmt.Errorf("%w: %q", ErrBadKey, key)
		}
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

func (d *DirStore) Put(ctx context.Context, key string, data []byte) error {
	name, err := d.file(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("archive: put %s: %w", key, err)
	}
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("archive: put %s: %w", key, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("archive: put %s: %w", key, err)
	}
	if err := os.Link(tmp, name); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("archive: put %s: %w", key, err)
		}
		have, rerr := os.ReadFile(name)
		if rerr != nil || !bytes.Equal(have, data) {
			return fmt.Errorf("%w: %s", ErrObjectExists, key)
		}
		return nil
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("archive: sync %s: %w", dir, err)
	}
	return nil
}

func (d *DirStore) Get(ctx context.Context, key string) ([]byte, error) {
	name, err := d.file(key)
	if err != nil {
		return nil, err
	}
	b, err := d.arena.readFile(name)
	if err != nil {
		return nil, fmt.Errorf("archive: get %s: %w", key, err)
	}
	return b, nil
}

// readArena hands out the memory objects are read into from chunks of
// arenaChunk bytes: a chunk is freed when no object read into it is
// referenced any more, so it holds at most a chunk's worth of memory
// beyond what the readers keep. It is safe for concurrent use.
type readArena struct {
	mu    sync.Mutex
	chunk []byte
}

// arenaChunk is the size of a readArena chunk; objects from arenaMin to
// arenaMax bytes are read into one. A larger one gets its own allocation,
// and so does a smaller one, which the allocator serves cheaply and which
// a reader may keep for long (a catalog, a track's .info): it would pin
// a chunk.
const (
	arenaChunk = 1 << 20
	arenaMin   = 8 << 10
	arenaMax   = arenaChunk / 4
)

// take returns n bytes (len n, cap n) no other take returns.
func (a *readArena) take(n int) []byte {
	if n < arenaMin || n > arenaMax {
		return make([]byte, n)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.chunk) < n {
		a.chunk = make([]byte, arenaChunk)
	}
	b := a.chunk[:n:n]
	a.chunk = a.chunk[n:]
	return b
}

// readFileOS reads the file at name whole through os.File: where
// readFile has no faster way, and for what is not a regular file.
func (a *readArena) readFileOS(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if !st.Mode().IsRegular() || size <= 0 {
		return io.ReadAll(f)
	}
	b := a.take(int(size))
	if _, err := io.ReadFull(f, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%s shrank while read: %w", name, err)
		}
		return nil, err
	}
	return b, nil
}

// List walks the directory that holds prefix's last complete element.
func (d *DirStore) List(ctx context.Context, prefix string) ([]string, error) {
	base := prefix
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[:i]
	} else {
		base = ""
	}
	dir := d.root
	if base != "" {
		var err error
		if dir, err = d.file(base); err != nil {
			return nil, err
		}
	}
	var keys []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, rerr := filepath.Rel(d.root, p)
		if rerr != nil {
			return rerr
		}
		key := filepath.ToSlash(rel)
		if e.IsDir() {
			// Skip directories that cannot hold the prefix.
			if p != dir && !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(e.Name(), tmpPrefix) || !strings.HasPrefix(key, prefix) {
			return nil
		}
		keys = append(keys, key)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archive: list %s: %w", prefix, err)
	}
	sort.Strings(keys)
	return keys, nil
}

func (d *DirStore) Delete(ctx context.Context, key string) error {
	name, err := d.file(key)
	if err != nil {
		return err
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("archive: delete %s: %w", key, err)
	}
	return nil
}
