//go:build !linux

package hls

import "os"

// dirFD: the *at calls below are Linux's; elsewhere the store goes
// through its os.Root.
func dirFD(*os.File) int { return -1 }

// exchangeAt is Linux's renameat2 exchange; elsewhere WriteFile renames.
func exchangeAt(int, string, string) (ok, supported bool) { return false, false }

// placeAt is Linux's renameat2 without replacing; elsewhere unsupported.
func placeAt(int, string, string) (ok, taken, supported bool, err error) {
	return false, false, false, nil
}

// openAt is not used where dirFD is -1.
func openAt(int, string, int, bool) (*os.File, bool, error) { return nil, false, os.ErrInvalid }

// The manifest directories are Linux's (renameat2); elsewhere
// manifestsOn never sets them up, so these are not called.
func exchangeBetween(int, string, int, string) error { return os.ErrInvalid }
func mkdirAt(int, string) error                      { return os.ErrInvalid }
func unlinkAt(int, string) error                     { return os.ErrInvalid }
func rmdirAt(int, string) error                      { return os.ErrInvalid }
func isLinkInto(int, string) bool                    { return false }
func linkName(int, string) error                     { return os.ErrInvalid }
