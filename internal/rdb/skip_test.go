package rdb

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSkipThenNext: a value skipped with Entry.Skip is done with, and Next goes on to the next
// key, as it does after a value that was read or not touched.
func TestSkipThenNext(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "bloom-compressed.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d keys: %v", n, err)
		}
		if err := e.Skip(); err != nil {
			t.Fatal(err)
		}
		if err := e.Skip(); err != nil {
			t.Fatalf("skipping twice: %v", err)
		}
		n++
	}
	if n != len(loadFacts(t, "bloom-compressed.rdb").Keys) {
		t.Fatalf("%d keys", n)
	}
}
