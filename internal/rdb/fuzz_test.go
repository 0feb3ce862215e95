package rdb

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisbloom"
)

// fuzzLimit caps what a fuzzed filter may allocate (through the Reserve hooks), so that a
// crafted header in a stream of unknown size is refused instead of taking the machine's memory.
const fuzzLimit = 64 << 20

var errFuzzLimit = errors.New("fuzz: over the memory limit")

func limitHook() func(uint64) error {
	var used uint64
	return func(n uint64) error {
		if used+n > fuzzLimit || used+n < used {
			return errFuzzLimit
		}
		used += n
		return nil
	}
}

// decodeAny reads the value of e whatever it is, returning the first error.
func decodeAny(e *Entry) error {
	var err error
	switch e.Kind {
	case KindString:
		_, err = e.ReadString()
	case KindHash:
		_, err = e.ReadHash()
	case KindBloom:
		_, err = e.ReadChain(&redisbloom.Options{Reserve: limitHook()})
	case KindCuckoo:
		_, err = e.ReadCuckoo(&bloom.CuckooOptions{Reserve: limitHook()})
	}
	return err
}

// checkErr fails for an error that is none of the kinds the package promises.
func checkErr(t *testing.T, err error) {
	t.Helper()
	if err == nil || err == io.EOF {
		return
	}
	for _, k := range []error{ErrCorrupt, ErrNotRDB, ErrVersion, ErrUnsupported, ErrEmptyKey, ErrDumpPayload,
		bloom.ErrCorrupt, bloom.ErrTooLarge, bloom.ErrInvalidParameter, errFuzzLimit} {
		if errors.Is(err, k) {
			return
		}
	}
	t.Fatalf("an error of no promised kind: %v", err)
}

func readFuzzed(t *testing.T, data []byte, opts *ReaderOptions, header bool) {
	r, err := NewReader(bytes.NewReader(data), opts)
	if err != nil {
		checkErr(t, err)
		return
	}
	for range 10000 {
		e, err := r.Next()
		if err != nil {
			checkErr(t, err)
			return
		}
		if header {
			switch e.Kind {
			case KindBloom:
				_, err = e.ReadBloomHeader()
			case KindCuckoo:
				_, err = e.ReadCuckooInfo()
			}
		} else {
			err = decodeAny(e)
		}
		checkErr(t, err)
	}
}

// fuzzSeeds are the recorded files and payloads and a few crafted inputs: lengths far past the
// input, an LZF string claiming 88 times its size, a filter header of 2^40 bytes.
func fuzzSeeds(t testing.TB) (files, payloads [][]byte) {
	for _, name := range append(append([]string{}, recordedFiles...), "other.rdb") {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
	}
	for _, name := range recordedFiles {
		for _, k := range loadFacts(t, name).Keys {
			p, _ := hex.DecodeString(k.Dump)
			payloads = append(payloads, p)
		}
	}
	head := []byte("REDIS0010")
	files = append(files,
		append(head, 0x00, 0x01, 'k', 0x81, 0, 0, 1, 0, 0, 0, 0, 0),                // a string of 2^40 bytes
		append(head, 0x00, 0x01, 'k', 0xC3, 0x02, 0x7F, 0xFF, 0, 0xFF),             // LZF: 2 bytes make 32767
		append(head, 0xFE, 0x81, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF),   // SELECTDB 2^64-1
		append(head, 0x10, 0x01, 'k', 0x07, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0), // listpack past the end
	)
	id, _ := ModuleID(BloomModule, 4)
	var b bytes.Buffer
	o := newOutput(&b, WriterOptions{Version: 10})
	o.write(head)
	o.byte(byte(TypeModule2))
	o.str([]byte("bf"))
	o.length(id)
	for _, v := range []uint64{0, 1, 5, 2, 100} {
		o.modUint(v)
	}
	o.modDouble(0.01)
	o.modUint(7)
	o.modDouble(9.585)
	o.modUint(1 << 43)
	o.modUint(0)
	o.length(modString)
	o.length(1 << 40)
	o.flush()
	files = append(files, b.Bytes())
	return files, payloads
}

// FuzzReader reads fuzzed RDB files, with their size known and as a stream, decoding every
// value (and, separately, only the filters' headers): every bad input must give an error of the
// promised kinds, never a panic, and never allocate more than the input holds (with the size
// known) or than the memory hooks allow (as a stream).
func FuzzReader(f *testing.F) {
	files, _ := fuzzSeeds(f)
	for _, d := range files {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		readFuzzed(t, data, &ReaderOptions{Size: int64(len(data))}, false)
		readFuzzed(t, data, &ReaderOptions{SkipUnsupported: true}, false)
		readFuzzed(t, data, &ReaderOptions{Size: int64(len(data)), SkipUnsupported: true}, true)
	})
}

// FuzzReadDump reads fuzzed DUMP payloads as they are and with their footer made right (so
// that the fuzzer reaches the value), decoding the value.
func FuzzReadDump(f *testing.F) {
	_, payloads := fuzzSeeds(f)
	for _, p := range payloads {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range [][]byte{data, withFooter(data)} {
			e, err := ReadDump(p, 0)
			if err != nil {
				checkErr(t, err)
				continue
			}
			checkErr(t, decodeAny(e))
		}
	})
}

// withFooter returns body with a version 10 footer and its right CRC-64.
func withFooter(body []byte) []byte {
	p := binary.LittleEndian.AppendUint16(append([]byte(nil), body...), 10)
	return binary.LittleEndian.AppendUint64(p, crcUpdate(0, p))
}

// TestCraftedInputsAllocateLittle reads the crafted seeds (lengths of up to 2^40 bytes in
// inputs of a few dozen) both ways: each must fail with ErrCorrupt having allocated less than
// a few MiB.
func TestCraftedInputsAllocateLittle(t *testing.T) {
	files, _ := fuzzSeeds(t)
	for _, data := range files[len(files)-5:] {
		for _, opts := range []*ReaderOptions{{Size: int64(len(data))}, nil} {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r, err := NewReader(bytes.NewReader(data), opts)
			if err == nil {
				var e *Entry
				for err == nil {
					if e, err = r.Next(); err == nil {
						err = decodeAny(e)
					}
				}
			}
			runtime.ReadMemStats(&after)
			// As a stream, the filter's header is valid and its size only the memory hook refuses.
			if !errors.Is(err, ErrCorrupt) && (opts != nil || !errors.Is(err, errFuzzLimit)) {
				t.Errorf("%x (size known: %v): %v, want ErrCorrupt", data, opts != nil, err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
				t.Errorf("%x (size known: %v): allocated %d bytes", data, opts != nil, grew)
			}
		}
	}
}

// TestReadDumpFooter checks RESTORE's rules: a payload too short, of a newer version or with a
// wrong checksum is ErrDumpPayload; one cut short inside its value, or with bytes after it, bad
// data.
func TestReadDumpFooter(t *testing.T) {
	p, err := DumpString([]byte("hello"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{
		"short":     p[:9],
		"crc":       append(append([]byte(nil), p[:len(p)-1]...), p[len(p)-1]^1),
		"newer":     withFooterVersion(p[:len(p)-10], 13),
		"truncated": withFooter(p[:2]),
	} {
		_, err := ReadDump(bad, 0)
		if name == "truncated" {
			if err == nil {
				e, _ := ReadDump(bad, 0)
				_, err = e.ReadString()
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: %v, want ErrCorrupt", name, err)
			}
			continue
		}
		if !errors.Is(err, ErrDumpPayload) {
			t.Errorf("%s: %v, want ErrDumpPayload", name, err)
		}
	}
	// Bytes after the value are bad data.
	e, err := ReadDump(withFooter(append(append([]byte(nil), p[:len(p)-10]...), 0)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ReadString(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a trailing byte: %v", err)
	}
}

func withFooterVersion(body []byte, v uint16) []byte {
	p := binary.LittleEndian.AppendUint16(append([]byte(nil), body...), v)
	return binary.LittleEndian.AppendUint64(p, crcUpdate(0, p))
}
