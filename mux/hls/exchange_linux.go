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

// exchangeBetween swaps entry a of directory da with entry b of directory
// db (renameat2 RENAME_EXCHANGE).
func exchangeBetween(da int, a string, db int, b string) error {
	if err := ignoringEINTR(func() error { return unix.Renameat2(da, a, db, b, unix.RENAME_EXCHANGE) }); err != nil {
		return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: err}
	}
	return nil
}

// mkdirAt creates directory name in dir; an error wrapping os.ErrExist
// when it exists.
func mkdirAt(dir int, name string) error {
	if err := ignoringEINTR(func() error { return unix.Mkdirat(dir, name, 0o755) }); err != nil {
		return &os.PathError{Op: "mkdirat", Path: name, Err: err}
	}
	return nil
}

// unlinkAt removes file name of dir; rmdirAt the directory name.
func unlinkAt(dir int, name string) error {
	return ignoringEINTR(func() error { return unix.Unlinkat(dir, name, 0) })
}

func rmdirAt(dir int, name string) error {
	if err := ignoringEINTR(func() error { return unix.Unlinkat(dir, name, unix.AT_REMOVEDIR) }); err != nil {
		return &os.PathError{Op: "rmdir", Path: name, Err: err}
	}
	return nil
}

// linkTarget is where the link NAME points: its file in .manifests.
func linkTarget(name string) string { return manifestDir + "/" + name }

// isLinkInto reports whether name in dir is the link into .manifests.
func isLinkInto(dir int, name string) bool {
	buf := make([]byte, len(linkTarget(name))+1)
	n, err := unix.Readlinkat(dir, name, buf)
	return err == nil && string(buf[:n]) == linkTarget(name)
}

// linkName makes name in dir the link into .manifests: created where
// there is nothing by that name, else put in place of what is there (an
// earlier run's file) in one rename.
func linkName(dir int, name string) error {
	err := ignoringEINTR(func() error { return unix.Symlinkat(linkTarget(name), dir, name) })
	if err == nil || !errors.Is(err, unix.EEXIST) {
		if err != nil {
			return &os.LinkError{Op: "symlink", Old: linkTarget(name), New: name, Err: err}
		}
		return nil
	}
	if isLinkInto(dir, name) {
		return nil
	}
	tmp := "." + name + ".link"
	_ = unlinkAt(dir, tmp)
	if err := ignoringEINTR(func() error { return unix.Symlinkat(linkTarget(name), dir, tmp) }); err != nil {
		return &os.LinkError{Op: "symlink", Old: linkTarget(name), New: tmp, Err: err}
	}
	if err := ignoringEINTR(func() error { return unix.Renameat(dir, tmp, dir, name) }); err != nil {
		_ = unlinkAt(dir, tmp)
		return &os.LinkError{Op: "rename", Old: tmp, New: name, Err: err}
	}
	return nil
}
