package redistest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill the child when the test process dies, so a test binary
// that crashes or is killed by a timeout leaves no redis-server behind.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
