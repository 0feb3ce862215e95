package procmem

import (
	"bytes"
	"errors"
	"os"
	"strconv"
)

// RSS returns the resident set size of this process in bytes, from /proc/self/statm (its second
// field, in pages). It is safe for concurrent use and costs one small file read.
func RSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	return parseStatm(b, int64(os.Getpagesize()))
}

// parseStatm returns the resident field of a statm line in bytes.
func parseStatm(b []byte, pageSize int64) (int64, error) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, errors.New("procmem: malformed /proc/self/statm")
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil || pages < 0 {
		return 0, errors.New("procmem: malformed /proc/self/statm")
	}
	return pages * pageSize, nil
}
