package resp

import (
	"bytes"
	"strconv"
	"testing"
)

// benchBatch is a pipelined batch of 16 BF.ADD requests, as redis-benchmark -P 16 sends them.
func benchBatch() []byte {
	var in []byte
	for i := range 16 {
		in = AppendCommand(in, []byte("BF.ADD"), []byte("bf"), []byte(strconv.Itoa(12345678+i*7919)))
	}
	return in
}

// BenchmarkReadBuffered measures parsing a buffered batch one request at a time, per request.
func BenchmarkReadBuffered(b *testing.B) { benchmarkBatch(b, false) }

// BenchmarkPeekReadBuffered measures what an event loop does with a buffered batch, per
// request: Peek at every request (to prepare the filters' memory), then read each.
func BenchmarkPeekReadBuffered(b *testing.B) { benchmarkBatch(b, true) }

func benchmarkBatch(b *testing.B, peek bool) {
	in := benchBatch()
	src := bytes.NewReader(in)
	r := NewReader(src)
	b.ReportAllocs()
	b.SetBytes(int64(len(in) / 16))
	for i := 0; i < b.N; i += 16 {
		src.Reset(in)
		r.Reset(src)
		if err := r.Fill(); err != nil {
			b.Fatal(err)
		}
		if peek {
			n := 0
			r.Peek(func(args [][]byte) bool { n += len(args[2]); return true })
		}
		for range 16 {
			if args, err := r.ReadBuffered(); err != nil || len(args) != 3 {
				b.Fatal(args, err)
			}
		}
	}
}
