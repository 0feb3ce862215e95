package rdb

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A Tee receives exactly the RDB's bytes, however far the source reads ahead and whether the
// values are read or skipped, and BodyCRC continued over the end marker is the file's checksum.
func TestTee(t *testing.T) {
	for _, name := range append(recordedFiles, "other.rdb") {
		file, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, read := range []bool{true, false} {
			// The RDB followed by a replication stream, read through one buffer.
			src := bufio.NewReaderSize(bytes.NewReader(append(bytes.Clone(file), "*1\r\n$4\r\nPING\r\n"...)), 4096)
			var copied bytes.Buffer
			rd, err := NewReader(src, &ReaderOptions{Tee: &copied, SkipUnsupported: true})
			if err != nil {
				t.Fatal(err)
			}
			for {
				e, err := rd.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if read && e.Kind == KindString {
					if _, err := e.ReadString(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !bytes.Equal(copied.Bytes(), file) {
				t.Errorf("%s (values read %v): the tee got %d bytes, the file has %d", name, read, copied.Len(), len(file))
			}
			if rest, _ := io.ReadAll(src); string(rest) != "*1\r\n$4\r\nPING\r\n" {
				t.Errorf("%s: after the RDB the source holds %q", name, rest)
			}
			if sum := binary.LittleEndian.Uint64(file[len(file)-8:]); sum != 0 && CRC64(rd.BodyCRC(), []byte{0xFF}) != sum {
				t.Errorf("%s: BodyCRC continued over the end marker is %#x, the file's checksum %#x", name, CRC64(rd.BodyCRC(), []byte{0xFF}), sum)
			}
		}
	}
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after -= len(p); w.after < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// A Tee that fails ends the reading with its error.
func TestTeeFails(t *testing.T) {
	file, err := os.ReadFile(filepath.Join("testdata", recordedFiles[1]))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(bufioReader(file), &ReaderOptions{Tee: &failingWriter{after: 4 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, err = rd.Next()
		if err != nil {
			break
		}
	}
	if err == io.EOF || err == nil || !bytes.Contains([]byte(err.Error()), []byte("disk full")) {
		t.Errorf("reading through a failing tee ends with %v", err)
	}
}
