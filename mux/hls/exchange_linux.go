package hls

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// dirFD is the descriptor of the store's directory, for the *at calls
// below; -1 where there is none.
func dirFD(dir *os.File) int { return int(dir.Fd()) }

// exchangeAt swaps the entries a and b of directory dir with renameat2
// RENAME_EXCHANGE (Linux 3.15; ext4, xfs, btrfs, tmpfs and others).
// supported is false when the file system cannot.
func exchangeAt(dir int, a, b string) (ok, supported bool) {
	switch err := ignoringEINTR(func() error { return unix.Renameat2(dir, a, dir, b, unix.RENAME_EXCHANGE) }); {
	case err == nil:
		return true, true
	case errors.Is(err, unix.ENOENT):
		return false, true
	default:
		return false, false
	}
}

// placeAt renames a to b unless b exists (renameat2 RENAME_NOREPLACE):
// the first write of a name takes one call, not a failed exchange, a
// stat and a rename. taken is true when b exists; supported false when
// the file system cannot (the caller renames as elsewhere).
func placeAt(dir int, a, b string) (ok, taken, supported bool, err error) {
	switch err := ignoringEINTR(func() error { return unix.Renameat2(dir, a, dir, b, unix.RENAME_NOREPLACE) }); {
	case err == nil:
		return true, false, true, nil
	case errors.Is(err, unix.EEXIST):
		return false, true, true, nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return false, false, false, nil
	default:
		return false, false, true, &os.LinkError{Op: "renameat2", Old: a, New: b, Err: err}
	}
}

// openAt opens name in directory dir without following a symlink (the
// names are plain, so nothing leaves the directory, as through the
// store's os.Root), as a file the runtime does not try to poll: a
// regular file cannot be, and asking costs an open five more calls.
// created is false when excl and name existed.
func openAt(dir int, name string, flag int, excl bool) (f *os.File, created bool, err error) {
	if excl {
		flag |= unix.O_EXCL
	}
	var fd int
	err = ignoringEINTR(func() (err error) {
		fd, err = unix.Openat(dir, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		return err
	})
	if excl && errors.Is(err, unix.EEXIST) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), true, nil
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
