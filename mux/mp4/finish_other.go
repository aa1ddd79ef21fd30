//go:build !linux

package mp4

import "os"

// insertRange needs Linux's fallocate; elsewhere the finish copies.
func insertRange(*os.File, int64, int64) error { return errNoInsert }

func collapseRange(*os.File, int64, int64) error { return errNoInsert }

func blockSize(os.FileInfo) int64 { return 0 }
