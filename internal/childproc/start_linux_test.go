package childproc

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// startFromDyingThread starts cmd with start from a goroutine locked to a thread other than the
// main one, which then exits locked, so that Go ends the thread, and returns a channel that
// receives the child's Wait result.
func startFromDyingThread(t *testing.T, cmd *exec.Cmd, start func(*exec.Cmd) error) <-chan error {
	t.Helper()
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		if syscall.Gettid() == syscall.Getpid() {
			// The main thread, which Go never ends: keep it, and start from another.
			done := make(chan struct{})
			go func() {
				defer close(done)
				runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
				started <- start(cmd)
			}()
			<-done
			runtime.UnlockOSThread()
			return
		}
		started <- start(cmd) // never unlocked: the thread ends with this goroutine
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	return waited
}

// TestChildOutlivesLockedThread: a child forked with a death signal by a thread that then ends
// is killed (the failure), while one started through Start by that same kind of thread lives on.
func TestChildOutlivesLockedThread(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep program")
	}
	plain := exec.Command("sleep", "30")
	plain.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	select {
	case err := <-startFromDyingThread(t, plain, (*exec.Cmd).Start):
		if ws, ok := plain.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("the plain child ended with %v, not by the death signal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a child forked by a thread that ended was not killed: the kernel no longer ties the death signal to the thread, and this package may not be needed")
	}

	kept := exec.Command("sleep", "30")
	waited := startFromDyingThread(t, kept, Start)
	select {
	case err := <-waited:
		t.Fatalf("the child started through Start died with the thread that asked for it: %v", err)
	case <-time.After(time.Second):
	}
	if kept.SysProcAttr == nil || kept.SysProcAttr.Pdeathsig != syscall.SIGKILL {
		t.Error("Start did not set the death signal")
	}
}
