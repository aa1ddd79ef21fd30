package mp4

import (
	"errors"
	"os"
	"syscall"
)

// Linux fallocate modes (linux/falloc.h).
const (
	fallocCollapseRange = 0x08
	fallocInsertRange   = 0x20
)

// insertRange inserts n zero bytes at off, shifting the rest of the file
// without copying it. off and n must be multiples of the block size.
func insertRange(f *os.File, off, n int64) error {
	err := syscall.Fallocate(int(f.Fd()), fallocInsertRange, off, n)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EINVAL) {
		return errNoInsert
	}
	return err
}

// collapseRange undoes insertRange.
func collapseRange(f *os.File, off, n int64) error {
	return syscall.Fallocate(int(f.Fd()), fallocCollapseRange, off, n)
}

// blockSize is the file system block size of the file st describes.
func blockSize(st os.FileInfo) int64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int64(s.Blksize)
	}
	return 0
}
