//go:build !linux

package hls

import "os"

// exchangeAt is Linux's renameat2 exchange; elsewhere WriteFile renames.
func exchangeAt(*os.File, string, string) (ok, supported bool) { return false, false }
