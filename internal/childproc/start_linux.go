package childproc

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Start starts cmd (adding PR_SET_PDEATHSIG = SIGKILL to its SysProcAttr) from the package's
// spawning thread, which lives as long as the process.
func Start(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawn = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the process
			for r := range spawn {
				r.done <- r.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	spawn <- spawnRequest{cmd, done}
	return <-done
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawn     chan spawnRequest
)
