//go:build !linux

package record

import "os"

// reservation reserves nothing outside Linux (see reserve_linux.go).
type reservation struct{}

func (*reservation) reserve(*os.File, int64, int64) {}

func (*reservation) unreserve(*os.File) {}
