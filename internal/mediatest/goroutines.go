package mediatest

import (
	"runtime"
	"strings"
)

// GoroutinesIn counts the goroutines whose stack runs through a function
// whose name contains one of names ("moq-export/export.(*Export)"): a test
// checks that nothing runs or waits for a component that should hold no
// goroutine.
func GoroutinesIn(names ...string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n == len(buf) {
			buf = make([]byte, 2*len(buf))
			continue
		}
		count := 0
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			for _, name := range names {
				if strings.Contains(g, name) {
					count++
					break
				}
			}
		}
		return count
	}
}
