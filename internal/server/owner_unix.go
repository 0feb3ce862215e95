//go:build unix

package server

import (
	"os"
	"syscall"
)

// fileOwner returns a file's owner and group, or -1, -1 where unknown.
func fileOwner(fi os.FileInfo) (uid, gid int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}
