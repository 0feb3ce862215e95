package pgtest

import "syscall"

// procAttr runs a child as cred (nil: as this process) and has the kernel kill it when the test
// process dies.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}
