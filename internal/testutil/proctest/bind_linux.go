package proctest

import (
	"os/exec"
	"syscall"
)

func bind(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

func killPid(pid int) { syscall.Kill(pid, syscall.SIGKILL) }
