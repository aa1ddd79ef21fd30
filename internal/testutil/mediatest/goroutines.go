package mediatest

import (
	"runtime"
	"strings"
)

// Goroutines returns the stack of every goroutine, one entry each, as
// runtime.Stack prints them ("goroutine N [state]:" first).
func Goroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// GoroutinesIn counts the goroutines whose stack runs through a function
// whose name contains one of names ("moq-export/export.(*Export)"): a test
// checks that nothing runs or waits for a component that should hold no
// goroutine.
func GoroutinesIn(names ...string) int {
	count := 0
	for _, g := range Goroutines() {
		for _, name := range names {
			if strings.Contains(g, name) {
				count++
				break
			}
		}
	}
	return count
}
