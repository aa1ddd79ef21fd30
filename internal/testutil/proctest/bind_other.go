//go:build !linux

package proctest

import (
	"os"
	"os/exec"
)

func bind(cmd *exec.Cmd) {}

func killPid(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
