package guava_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/guava"
)

// tiny is the stream of BloomFilter.create(stringFunnel(UTF_8), 10, 0.1) after put("tiny-0")..
// put("tiny-9") (testdata/reference/tiny_string_10_p0.1.bin): MITZ_64, k=3, one word.
var tiny = []byte{1, 3, 0, 0, 0, 1, 0x2d, 0x08, 0xe4, 0x5a, 0x41, 0x64, 0x2f, 0x24}

// Every malformed stream is refused with bloom.ErrCorrupt and a message naming the problem,
// where Guava's readFrom throws (EOFException, or IOException with the cause noted).
func TestDecodeErrors(t *testing.T) {
	header := func(ordinal, k byte, words uint32) []byte {
		return []byte{ordinal, k, byte(words >> 24), byte(words >> 16), byte(words >> 8), byte(words)}
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"short header", []byte{1, 3, 0}, "truncated header: 3 of 6 bytes"},
		{"header only", header(1, 3, 1), "truncated: 0 of 1 words (6 of 14 bytes)"},
		{"half a word", append(header(1, 3, 1), 1, 2, 3, 4), "truncated: 0 of 1 words (10 of 14 bytes)"},
		{"one word short", append(header(0, 3, 2), make([]byte, 8)...), "truncated: 1 of 2 words (14 of 22 bytes)"},
		{"ordinal 2", append(header(2, 3, 1), make([]byte, 8)...), "unknown strategy ordinal 2"},     // Guava: AIOOBE
		{"ordinal -1", append(header(255, 3, 1), make([]byte, 8)...), "unknown strategy ordinal -1"}, // Guava: AIOOBE
		{"k 0", append(header(1, 0, 1), make([]byte, 8)...), "number of hash functions is 0"},        // Guava: numHashFunctions (0) must be > 0
		{"L 0", header(1, 3, 0), "data length of 0 words is not positive"},                           // Guava: data length is zero!
		{"L -1", header(1, 3, 0xffffffff), "data length of -1 words is not positive"},
		{"L min int", header(1, 3, 0x80000000), "data length of -2147483648 words is not positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := guava.Unmarshal(c.data)
			checkCorrupt(t, "Unmarshal", f, err, c.want)
			f, err = guava.ReadFrom(bytes.NewReader(c.data))
			checkCorrupt(t, "ReadFrom", f, err, c.want)
			f, err = guava.ReadFrom(iotest.OneByteReader(bytes.NewReader(c.data)))
			checkCorrupt(t, "ReadFrom (one byte at a time)", f, err, c.want)
		})
	}
}

func checkCorrupt(t *testing.T, what string, f *bloom.Filter, err error, want string) {
	t.Helper()
	if f != nil || !errors.Is(err, bloom.ErrCorrupt) || !strings.HasPrefix(err.Error(), "guava: ") || !strings.Contains(err.Error(), want) {
		t.Errorf("%s = %v, %v; want nil and a guava: ... %q error wrapping ErrCorrupt", what, f, err, want)
	}
}

// Guava's readFrom ignores what follows the last word. ReadFrom stops there too and leaves it
// unread; Unmarshal, which is given a whole input, refuses it.
func TestTrailingBytes(t *testing.T) {
	data := append(append([]byte{}, tiny...), "next record"...)
	r := bytes.NewReader(data)
	f, err := guava.ReadFrom(r)
	if err != nil || !f.TestString("tiny-0") {
		t.Fatalf("ReadFrom = %v, %v", f, err)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "next record" {
		t.Errorf("ReadFrom left %q unread, want %q", rest, "next record")
	}
	f, err = guava.Unmarshal(data)
	checkCorrupt(t, "Unmarshal", f, err, "11 unexpected bytes after the filter's 1 words")
}

// Two streams back to back read as two filters, as two readFrom calls on one Java stream do.
func TestConsecutiveStreams(t *testing.T) {
	a, _ := bloom.NewWithParams(128, 4, bloom.Guava32)
	a.AddString("a")
	b, _ := bloom.New(100, 0.01)
	b.AddString("b")
	var buf bytes.Buffer
	for _, f := range []*bloom.Filter{a, b} {
		if _, err := guava.WriteTo(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []*bloom.Filter{a, b} {
		got, err := guava.ReadFrom(&buf)
		if err != nil || !got.Equal(want) {
			t.Fatalf("ReadFrom = %v, %v; want the filter written", got, err)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("%d bytes left", buf.Len())
	}
}

// I/O errors are returned as they are (wrapped with context), not reported as corruption.
func TestReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	for _, n := range []int64{0, 3, 6, 10} {
		r := io.MultiReader(io.LimitReader(bytes.NewReader(tiny), n), iotest.ErrReader(boom))
		f, err := guava.ReadFrom(r)
		if f != nil || !errors.Is(err, boom) || errors.Is(err, bloom.ErrCorrupt) {
			t.Errorf("after %d bytes: ReadFrom = %v, %v; want the reader's error", n, f, err)
		}
	}
}

// A header that claims far more words than the stream holds costs memory in proportion to what
// arrived, not to the claim.
func TestHugeClaimTruncated(t *testing.T) {
	const delivered = 1 << 20
	for _, words := range []uint32{1 << 27, guava.MaxWords} { // 1 GiB; 16 GiB, Guava's largest
		data := make([]byte, guava.HeaderSize+delivered)
		copy(data, []byte{1, 7, byte(words >> 24), byte(words >> 16), byte(words >> 8), byte(words)})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f, err := guava.ReadFrom(bytes.NewReader(data))
		runtime.ReadMemStats(&after)
		// A machine with less memory than the claim refuses it up front instead.
		if f != nil || !(errors.Is(err, bloom.ErrCorrupt) || errors.Is(err, bloom.ErrTooLarge)) {
			t.Fatalf("%d words claimed: ReadFrom = %v, %v; want a truncation error", words, f, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 16*delivered {
			t.Errorf("%d words claimed, %d bytes delivered: %d bytes allocated", words, delivered, got)
		}
		t.Logf("%d words claimed, %d bytes delivered: %v; %d bytes allocated", words, delivered, err, after.TotalAlloc-before.TotalAlloc)
	}
}

// A stream large enough to take several reads and array growths decodes intact.
func TestLargeStream(t *testing.T) {
	f, err := bloom.NewWithParams(64*300_001, 3, bloom.Guava64) // 2.4 MB: ten reads, two growths
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100_000 {
		f.AddInt64(int64(i))
	}
	data, err := guava.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := guava.WriteTo(&buf, f); err != nil || !bytes.Equal(buf.Bytes(), data) {
		t.Fatalf("WriteTo differs from Marshal: %v", err)
	}
	for _, r := range []io.Reader{bytes.NewReader(data), iotest.HalfReader(bytes.NewReader(data))} {
		g, err := guava.ReadFrom(r)
		if err != nil || !g.Equal(f) {
			t.Fatalf("ReadFrom: %v, equal: %v", err, err == nil && g.Equal(f))
		}
	}
	g, err := guava.Unmarshal(data)
	if err != nil || !g.Equal(f) {
		t.Fatalf("Unmarshal: %v", err)
	}
}

// Filters Guava could not have written are refused with a message, and nothing is written.
func TestWriteRefusals(t *testing.T) {
	redis, _ := bloom.NewWithParams(640, 7, bloom.RedisBloom64)
	redisson, _ := bloom.NewWithParams(640, 7, bloom.Redisson)
	k256, _ := bloom.NewWithParams(640, 256, bloom.Guava64)
	cases := []struct {
		name string
		f    *bloom.Filter
		want string
		is   error
	}{
		{"redisbloom", redis, "a redisbloom64 filter has no Guava strategy", bloom.ErrIncompatible},
		{"redisson", redisson, "a redisson filter has no Guava strategy", bloom.ErrIncompatible},
		{"k=256", k256, "k=256 does not fit", bloom.ErrIncompatible},
		{"zero Filter", &bloom.Filter{}, "has no Guava strategy", bloom.ErrIncompatible},
		{"nil", nil, "nil filter", bloom.ErrInvalidParameter},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := guava.WriteTo(&buf, c.f)
			if n != 0 || buf.Len() != 0 || !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("WriteTo = %d, %v (%d bytes written); want %q wrapping %v", n, err, buf.Len(), c.want, c.is)
			}
			if b, err := guava.Marshal(c.f); b != nil || !errors.Is(err, c.is) {
				t.Errorf("Marshal = %d bytes, %v", len(b), err)
			}
			if _, err := guava.EncodedLen(c.f); !errors.Is(err, c.is) {
				t.Errorf("EncodedLen: %v", err)
			}
		})
	}
}

// A writer's error stops WriteTo and is returned with the count of bytes it accepted.
func TestWriteError(t *testing.T) {
	f, _ := bloom.NewWithParams(64*20_000, 3, bloom.Guava64) // 160 KB: three writes
	for _, limit := range []int64{0, 5, 6, 100, 70_000, 150_000} {
		w := &limitedWriter{limit: limit}
		n, err := guava.WriteTo(w, f)
		if err != os.ErrClosed || n != limit {
			t.Errorf("limit %d: WriteTo = %d, %v; want %d, %v", limit, n, err, limit, os.ErrClosed)
		}
	}
}

// limitedWriter accepts limit bytes, then fails.
type limitedWriter struct{ n, limit int64 }

func (w *limitedWriter) Write(p []byte) (int, error) {
	if w.n+int64(len(p)) > w.limit {
		c := w.limit - w.n
		w.n = w.limit
		return int(c), os.ErrClosed
	}
	w.n += int64(len(p))
	return len(p), nil
}
