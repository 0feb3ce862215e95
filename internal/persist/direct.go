package persist

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"unsafe"
)

// A directWriter writes a file opened with O_DIRECT: it gathers what it is given into aligned
// buffers and writes whole aligned blocks, bypassing the page cache, from a goroutine of its own
// so that the disk works while the next buffer fills. A snapshot is written once and read only
// at the next start, so caching it only pushes other pages out, and the kernel's write-back of
// cached pages is several times slower than direct writes on common virtual disks. finish writes
// the last block padded with zeros and cuts the file to its true length.
type directWriter struct {
	f    File
	buf  []byte // the buffer being filled: aligned to directAlign, a multiple of it long
	n    int    // bytes in buf
	size int64  // bytes given to Write

	full chan []byte // buffers to write, in order
	free chan []byte // buffers written
	done chan error  // the writer goroutine's result, once full is closed
}

const (
	directAlign   = 4096
	directBuffer  = 4 << 20 // a directReader's reads
	directBuffers = 2

	// A directWriter's writes are smaller: the disk is shared with the append-only log, whose
	// syncs (and the file system journal's commits behind them, which the log's writes can
	// wait for) queue behind the write in progress; 1 MiB takes about a millisecond.
	directWriteBuffer  = 1 << 20
	directWriteBuffers = 4
)

func alignedBuffer(size int) []byte {
	raw := make([]byte, size+directAlign)
	skip := (directAlign - int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))))%directAlign) % directAlign
	return raw[skip : skip+size : skip+size]
}

// directPool keeps a writer's buffers for the next snapshot: background snapshots, one after
// another, then allocate nothing large, which would make the garbage collector run.
var directPool = sync.Pool{New: func() any { b := alignedBuffer(directWriteBuffer); return &b }}

func getBuffer() []byte { return *directPool.Get().(*[]byte) }

func putBuffer(b []byte) {
	b = b[:cap(b)]
	directPool.Put(&b)
}

func newDirectWriter(f File) *directWriter {
	d := &directWriter{f: f, full: make(chan []byte, directWriteBuffers), free: make(chan []byte, directWriteBuffers), done: make(chan error, 1)}
	d.buf = getBuffer()
	for range directWriteBuffers - 1 {
		d.free <- getBuffer()
	}
	full, free := d.full, d.free
	go func() {
		var err error
		for b := range full {
			if err == nil {
				_, err = f.Write(b)
			}
			free <- b[:cap(b)]
		}
		d.done <- err
	}()
	return d
}

func (d *directWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		c := copy(d.buf[d.n:], p)
		d.n += c
		p = p[c:]
		written += c
		if d.n == len(d.buf) {
			d.full <- d.buf
			d.buf, d.n = <-d.free, 0
		}
	}
	d.size += int64(written)
	return written, nil
}

// finish writes what is buffered and sets the file's length to the bytes given to Write.
func (d *directWriter) finish() error {
	if d.n > 0 {
		padded := (d.n + directAlign - 1) / directAlign * directAlign
		clear(d.buf[d.n:padded])
		d.full <- d.buf[:padded]
		d.buf = nil
	}
	close(d.full)
	err := <-d.done
	d.release()
	if err != nil {
		return err
	}
	if err := d.f.Truncate(d.size); err != nil {
		return fmt.Errorf("setting the length: %w", err)
	}
	return nil
}

// abandon stops the writer goroutine after a failure elsewhere.
func (d *directWriter) abandon() {
	close(d.full)
	<-d.done
	d.release()
}

// release gives the buffers back to directPool once the writer goroutine is done.
func (d *directWriter) release() {
	if d.buf != nil {
		putBuffer(d.buf)
		d.buf = nil
	}
	for {
		select {
		case b := <-d.free:
			putBuffer(b)
		default:
			return
		}
	}
}

// A directReader reads a file opened with O_DIRECT, sequentially, a few aligned blocks ahead of
// its reader on a goroutine of its own: the disk works while the caller checksums and copies, and
// the file's pages never enter the page cache (filling the cache costs as much CPU as the copy,
// for a file read once at start-up). Read copies out of the blocks read.
type directReader struct {
	full chan directBlock
	free chan []byte
	stop chan struct{}
	cur  directBlock
	pos  int
	err  error
}

type directBlock struct {
	b   []byte
	err error // after b: io.EOF at the end of the file, or the read error
}

func newDirectReader(f File) *directReader {
	d := &directReader{full: make(chan directBlock, directBuffers), free: make(chan []byte, directBuffers+1), stop: make(chan struct{})}
	for range directBuffers + 1 {
		d.free <- alignedBuffer(directBuffer)
	}
	go func() {
		defer close(d.full)
		for {
			var b []byte
			select {
			case b = <-d.free:
			case <-d.stop:
				return
			}
			n, err := io.ReadFull(f, b)
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = io.EOF
			}
			select {
			case d.full <- directBlock{b[:n], err}:
			case <-d.stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return d
}

func (d *directReader) Read(p []byte) (int, error) {
	for d.pos == len(d.cur.b) {
		if d.err != nil {
			return 0, d.err
		}
		if d.cur.b != nil {
			d.free <- d.cur.b[:cap(d.cur.b)]
		}
		blk, ok := <-d.full
		if !ok {
			return 0, io.ErrUnexpectedEOF
		}
		d.cur, d.pos, d.err = blk, 0, blk.err
	}
	n := copy(p, d.cur.b[d.pos:])
	d.pos += n
	return n, nil
}

// close stops the reading goroutine.
func (d *directReader) close() { close(d.stop) }
