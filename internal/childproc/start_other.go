//go:build !linux

package childproc

import "os/exec"

// Start starts cmd. Where the kernel cannot tie a child's life to its parent's, the caller
// stops its children itself (the test helpers' Close and Cleanup do).
func Start(cmd *exec.Cmd) error { return cmd.Start() }
