//go:build !linux

package redistest

import "os/exec"

// setDeathSignal does nothing where the kernel cannot tie a child's life to its parent's;
// Close and the tests' Cleanup still stop every server.
func setDeathSignal(cmd *exec.Cmd) {}
