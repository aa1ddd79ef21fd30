//go:build !linux

package archive

// readFile reads the object file at name whole (through os.File; Linux
// has a shorter way, readfile_linux.go).
func (a *readArena) readFile(name string) ([]byte, error) { return a.readFileOS(name) }
