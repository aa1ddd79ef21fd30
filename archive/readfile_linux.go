package archive

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"
)

// readFile reads the object file at name whole, to the size it had when
// opened (an object never changes: it is written aside and linked into
// place). On Linux it opens, sizes, reads and closes the file with a
// system call each: os.Open adds three fcntl calls and an epoll_ctl that
// fails for every regular file, and an export reads thousands of objects
// (a GET per timeline object and one per segment). What is not a regular
// file goes through os.File.
func (a *readArena) readFile(name string) ([]byte, error) {
	fd, err := openRetry(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := fstatRetry(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size <= 0 {
		return a.readFileOS(name)
	}
	b := a.take(int(st.Size))
	for got := 0; got < len(b); {
		n, err := syscall.Read(fd, b[got:])
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		case n == 0:
			return nil, fmt.Errorf("%s shrank while read: %w", name, io.ErrUnexpectedEOF)
		}
		got += n
	}
	return b, nil
}

func openRetry(name string) (int, error) {
	for {
		fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			return fd, err
		}
	}
}

func fstatRetry(fd int, st *syscall.Stat_t) error {
	for {
		if err := syscall.Fstat(fd, st); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
