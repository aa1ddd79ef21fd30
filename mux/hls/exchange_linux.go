package hls

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchangeAt swaps the entries a and b of directory dir with renameat2
// RENAME_EXCHANGE (Linux 3.15; ext4, xfs, btrfs, tmpfs and others).
// supported is false when the file system cannot.
func exchangeAt(dir *os.File, a, b string) (ok, supported bool) {
	rc, err := dir.SyscallConn()
	if err != nil {
		return false, false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.Renameat2(int(fd), a, int(fd), b, unix.RENAME_EXCHANGE)
	}); err != nil {
		return false, false
	}
	switch {
	case serr == nil:
		return true, true
	case errors.Is(serr, unix.ENOENT):
		return false, true
	default:
		return false, false
	}
}
