package rdb

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/bloomd/bloom/redisbloom"
)

// TestDumpChainTo: the streamed payload of every recorded Bloom filter, and of chains made here
// (a grown scalable one, a non-scaling one, sub-filters of 8 bytes whose bits read as a decimal
// number), is exactly DumpChainLen bytes, and ReadDump decodes it to the same filter (its
// BF.SCANDUMP chunks and the facts Redis recorded).
func TestDumpChainTo(t *testing.T) {
	check := func(name string, ch *redisbloom.Chain) *redisbloom.Chain {
		t.Helper()
		want, err := DumpChainLen(ch.Header(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		n, err := DumpChainTo(&buf, ch, nil, nil)
		if err != nil || n != want || int64(buf.Len()) != want {
			t.Fatalf("%s: wrote %d (%d buffered), DumpChainLen %d: %v", name, n, buf.Len(), want, err)
		}
		e, err := ReadDump(buf.Bytes(), Version70)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		back, err := e.ReadChain(nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(back.Header(), ch.Header()) {
			t.Fatalf("%s: header differs", name)
		}
		var chunks [][]byte
		for _, data := range ch.Chunks() {
			chunks = append(chunks, bytes.Clone(data))
		}
		i := 0
		for _, data := range back.Chunks() {
			if i >= len(chunks) || !bytes.Equal(data, chunks[i]) {
				t.Fatalf("%s: chunk %d differs", name, i)
			}
			i++
		}
		if i != len(chunks) {
			t.Fatalf("%s: %d chunks, want %d", name, i, len(chunks))
		}
		return back
	}
	for _, name := range recordedFiles {
		for _, k := range loadFacts(t, name).Keys {
			if k.Type != BloomModule {
				continue
			}
			payload, _ := hex.DecodeString(k.Dump)
			e, err := ReadDump(payload, Version70)
			if err != nil {
				t.Fatal(err)
			}
			back := check(name+" "+k.Key, decode(t, e).chain)
			checkFacts(t, name+" DumpChainTo", k, decoded{chain: back}, -2)
		}
	}
	grown, _ := redisbloom.NewChain(100, 0.01, 2, false, nil)
	for i := range 1000 {
		grown.Add(fmt.Appendf(nil, "item%d", i))
	}
	if grown.NumFilters() < 3 {
		t.Fatalf("the chain did not grow: %d sub-filters", grown.NumFilters())
	}
	check("grown", grown)
	flat, _ := redisbloom.NewChain(1000, 0.001, 2, true, nil)
	flat.Add([]byte("x"))
	check("non-scaling", flat)
	// Sub-filters of 8 bytes whose bits spell "12345678": DumpChain writes such a string as an
	// integer, DumpChainTo as it is, so that its length does not depend on the bits.
	small, _ := redisbloom.NewChain(1, 0.5, 1, false, nil)
	var its []int64
	for it := range small.Chunks() {
		its = append(its, it)
	}
	tiny, err := redisbloom.LoadHeader(small.Header(), nil)
	if err != nil || len(its) != 2 {
		t.Fatalf("%v; chunks at %v", err, its)
	}
	if err := tiny.LoadChunk(its[1], []byte("12345678")); err != nil {
		t.Fatal(err)
	}
	var digits [8]byte
	tiny.ReadAt(digits[:], 0)
	if string(digits[:]) != "12345678" {
		t.Fatalf("the sub-filter holds %q", digits)
	}
	back := check("digits", tiny)
	short, _ := DumpChain(tiny, &WriterOptions{NoCompression: true})
	var long bytes.Buffer
	DumpChainTo(&long, tiny, nil, nil)
	if len(short) >= long.Len() {
		t.Errorf("DumpChain wrote %d bytes, DumpChainTo %d: the integer encoding should be shorter", len(short), long.Len())
	}
	var got [8]byte
	back.ReadAt(got[:], 0)
	if got != digits {
		t.Errorf("decoded bits %q", got)
	}
}

// TestDumpChainToFails: a write error is returned, and a header that is not one is refused
// before anything is written.
func TestDumpChainToFails(t *testing.T) {
	ch, _ := redisbloom.NewChain(100000, 0.01, 2, false, nil)
	boom := errors.New("boom")
	if _, err := DumpChainTo(failWriter{boom}, ch, nil, nil); !errors.Is(err, boom) {
		t.Errorf("write error: %v", err)
	}
	if _, err := DumpChainLen([]byte("short"), nil); err == nil {
		t.Error("DumpChainLen of a bad header")
	}
	if _, err := DumpChainTo(io.Discard, ch, []byte("short"), nil); err == nil {
		t.Error("DumpChainTo of a bad header")
	}
}

type failWriter struct{ err error }

func (f failWriter) Write(p []byte) (int, error) { return 0, f.err }
