package persist

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDirectIO writes a file through a directWriter and reads it back through a directReader,
// with sizes that are not multiples of the block or the buffer.
func TestDirectIO(t *testing.T) {
	for _, size := range []int{0, 1, 4095, 4097, directBuffer, 2*directBuffer + 12345} {
		data := make([]byte, size)
		rng := rand.New(rand.NewPCG(uint64(size), 1))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		path := filepath.Join(t.TempDir(), "f")
		f, err := OSFS{}.OpenFile(path, os.O_CREATE|os.O_WRONLY|syscall.O_DIRECT, 0o644)
		if err != nil {
			t.Skipf("no direct I/O here: %v", err)
		}
		w := newDirectWriter(f)
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(3<<20))
			w.Write(rest[:n])
			rest = rest[n:]
		}
		if err := w.finish(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		// The writer gave each of its buffers back once: two taken now are two.
		if b1, b2 := getBuffer(), getBuffer(); &b1[0] == &b2[0] {
			t.Fatal("the writer gave a buffer back twice")
		} else {
			putBuffer(b1)
			putBuffer(b2)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
			t.Fatalf("size %d: wrote %d bytes that differ", size, len(got))
		}
		f, err = OSFS{}.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := newDirectReader(f)
		var got bytes.Buffer
		buf := make([]byte, 100_000)
		for {
			n, err := r.Read(buf[:1+rng.IntN(len(buf))])
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		r.close()
		f.Close()
		if !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("size %d: read %d bytes that differ", size, got.Len())
		}
	}
}
