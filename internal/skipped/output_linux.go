package skipped

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// goCommandOutput opens the go command's standard output, or its standard error, for writing,
// when this test binary runs under go test (its parent process is the go command) and the
// stream is one a line can be added to without disturbing what the go command writes: a pipe
// (| tee, a CI runner's log), a terminal, or a file opened for appending. A file the shell
// truncated (go test > log) is left alone: a second writer there would overwrite the go
// command's lines, which are written at its own offset. It returns nil otherwise.
func goCommandOutput() *os.File {
	ppid := os.Getppid()
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid))
	if err != nil || strings.TrimSpace(string(comm)) != "go" {
		return nil
	}
	for _, fd := range []int{1, 2} {
		path := fmt.Sprintf("/proc/%d/fd/%d", ppid, fd)
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		switch mode := fi.Mode(); {
		case mode&os.ModeNamedPipe != 0, mode&os.ModeCharDevice != 0:
		case mode.IsRegular() && appending(ppid, fd):
		default:
			continue
		}
		// O_NONBLOCK: opening a pipe whose reader has gone would otherwise wait for ever.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|unix.O_NONBLOCK, 0)
		if err == nil {
			return f
		}
	}
	return nil
}

// appending reports whether file descriptor fd of process pid was opened with O_APPEND, as
// /proc/PID/fdinfo/FD's octal flags say.
func appending(pid, fd int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "fdinfo", strconv.Itoa(fd)))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&unix.O_APPEND != 0
		}
	}
	return false
}
