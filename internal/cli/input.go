package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// Items come one per line from files or standard input ("-", or no file at all). A line ends at
// \n, and a \r before it is dropped; every line is an item, an empty one included. Files
// compressed with gzip are recognised by their magic bytes and decompressed on the fly.

// maxLine bounds the length of one line, so that a binary file given by mistake is refused
// instead of read whole into memory.
const maxLine = 16 << 20

// inputs reads the lines of several inputs in turn and says where each came from.
type inputs struct {
	names []string  // "-" is standard input
	stdin io.Reader // what "-" reads
	read  atomic.Int64

	i    int
	name string
	line int
	f    io.Closer
	sc   *bufio.Scanner
	gz   bool // the current input is gzip-compressed
}

// newInputs returns the lines of the named files in order, or of stdin if names is empty.
func newInputs(names []string, stdin io.Reader) *inputs {
	if len(names) == 0 {
		names = []string{"-"}
	}
	return &inputs{names: names, stdin: stdin}
}

// size returns the total size in bytes of the inputs (compressed size for gzip files), or -1
// if any of them is not a regular file.
func (in *inputs) size() int64 {
	var total int64
	for _, n := range in.names {
		if n == "-" {
			return -1
		}
		fi, err := os.Stat(n)
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		total += fi.Size()
	}
	return total
}

// bytesRead returns how many bytes have been read from the inputs so far (compressed bytes
// for gzip files). It is safe to call from another goroutine.
func (in *inputs) bytesRead() int64 { return in.read.Load() }

// next returns the next line, valid until the following call, or io.EOF after the last one.
func (in *inputs) next() ([]byte, error) {
	for {
		if in.sc == nil {
			if in.i == len(in.names) {
				return nil, io.EOF
			}
			if err := in.open(in.names[in.i]); err != nil {
				return nil, err
			}
			in.i++
		}
		if in.sc.Scan() {
			in.line++
			return in.sc.Bytes(), nil
		}
		err := in.sc.Err()
		in.close()
		if err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return nil, fmt.Errorf("%s: line %d is longer than %d MiB; is this a text file with one item per line?", in.name, in.line+1, maxLine>>20)
			}
			if in.gz && !errors.Is(err, os.ErrPermission) {
				return nil, fmt.Errorf("%s: the gzip data is damaged or truncated after line %d (%v)", in.name, in.line, err)
			}
			return nil, fmt.Errorf("%s: %w", in.name, err)
		}
	}
}

// where returns "file:line" of the line last returned.
func (in *inputs) where() string { return fmt.Sprintf("%s:%d", in.name, in.line) }

// open starts reading name.
func (in *inputs) open(name string) error {
	in.name, in.line, in.gz = name, 0, false
	var r io.Reader
	if name == "-" {
		in.name = "stdin"
		r = in.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("cannot read items: %w", pathError(err))
		}
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			f.Close()
			return fmt.Errorf("%s is a directory; give the files of items inside it", name)
		}
		in.f, r = f, f
	}
	br := bufio.NewReaderSize(&countingReader{r: r, n: &in.read}, 256<<10)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			in.close()
			return fmt.Errorf("%s: looks gzip-compressed but its header is damaged: %v", in.name, err)
		}
		r, in.gz = zr, true
	} else {
		r = br
	}
	in.sc = bufio.NewScanner(r)
	in.sc.Buffer(make([]byte, 64<<10), maxLine)
	return nil
}

func (in *inputs) close() {
	if in.f != nil {
		in.f.Close()
		in.f = nil
	}
	in.sc = nil
}

// countingReader counts the bytes read through it into n.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// pathError shortens an *os.PathError to "NAME: reason" and adds what to do where it is clear.
func pathError(err error) error {
	var pe *os.PathError
	if !errors.As(err, &pe) {
		return err
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: no such file", pe.Path)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("%s: permission denied", pe.Path)
	}
	return fmt.Errorf("%s: %v", pe.Path, pe.Err)
}
