package redistest

import (
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FileDigests returns the SHA-256 of each file in dir, by name: what a test compares to show
// that a server left its data files as they were (maps.Equal of two calls). Files of any size
// are read in pieces.
func FileDigests(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			tb.Fatal(err)
		}
		m[e.Name()] = string(h.Sum(nil))
	}
	return m
}
