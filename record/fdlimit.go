package record

import (
	"errors"
	"syscall"
)

// ErrOutOfFiles is wrapped by the error of a file that could not be
// created because the process holds as many files as it may (EMFILE) or
// the system does (ENFILE): every running recording holds its output open.
var ErrOutOfFiles = errors.New("out of file descriptors")

// outOfFiles turns an EMFILE or ENFILE of creating path into an error that
// says what ran out and what to do; other errors are returned as they are.
func outOfFiles(path string, err error) error {
	switch {
	case errors.Is(err, syscall.EMFILE):
		e := &OutOfFilesError{Path: path, Err: err}
		var lim syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
			e.Limit, e.HardLimit = lim.Cur, lim.Max
		}
		return e
	case errors.Is(err, syscall.ENFILE):
		return &OutOfFilesError{Path: path, System: true, Err: err}
	}
	return err
}
