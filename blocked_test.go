package bloom_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/conformance"
)

var blockedImpl = conformance.Impl{
	New: func(n uint64, p float64) (conformance.Filter, error) { return bloom.NewBlocked(n, p) },
	Marshal: func(f conformance.Filter) ([]byte, error) {
		return f.(*bloom.Blocked).MarshalBinary()
	},
	Unmarshal: func(b []byte) (conformance.Filter, error) {
		var f bloom.Blocked
		return &f, f.UnmarshalBinary(b)
	},
	Checksummed: true,
	Union:       func(dst, src conformance.Filter) error { return dst.(*bloom.Blocked).Union(src.(*bloom.Blocked)) },
	Intersect: func(dst, src conformance.Filter) error {
		return dst.(*bloom.Blocked).Intersect(src.(*bloom.Blocked))
	},
}

func TestBlockedConformance(t *testing.T) { conformance.Run(t, blockedImpl) }

// Every sector count must satisfy the same laws; NewBlocked only ever picks some of them.
func TestBlockedConformanceSectors(t *testing.T) {
	// Two sectors are what TestBlockedConformance runs.
	for _, c := range []struct{ k, sectors int }{{4, 1}, {8, 4}, {16, 8}} {
		t.Run(strings.Repeat("s", c.sectors), func(t *testing.T) {
			impl := blockedImpl
			impl.New = func(n uint64, p float64) (conformance.Filter, error) {
				// Size by the layout's own model so the FPP check stays meaningful.
				m := uint64(512)
				for bloom.BlockedFalsePositiveRate(m, c.k, c.sectors, n) > p {
					m += 512 * (m/5120 + 1)
				}
				return bloom.NewBlockedWithParams(m, c.k, c.sectors)
			}
			impl.Rates = []conformance.Rate{{N: 20_000, P: 0.01}}
			conformance.Run(t, impl)
		})
	}
}

// The layout reaches files, so it is pinned: the words and masks of fixed keys in filters of each
// sector count, and the bytes of a small encoded filter. The word vectors were computed
// independently from the layout's description by testdata/blocked/layout.py. If this test fails,
// files written by earlier versions no longer answer correctly: restore the layout.
func TestBlockedGoldenLayout(t *testing.T) {
	for _, c := range []struct {
		m          uint64
		k, sectors int
		key        string
		want       string // the 8 words of the key's block after adding it to an empty filter, hex
	}{
		{512 * 1000, 4, 1, "hello",
			"6370:0880040000004000"},
		{512 * 1000, 6, 2, "hello",
			"6369:8000000800020000 6373:0108000000000001"},
		{512 * 1000, 8, 4, "hello",
			"6368:0000000008200000 6370:2000000001000000 6373:0000800040000000 6375:0000000020004000"},
		{512 * 1000, 8, 8, "hello",
			"6368:0000400000000000 6369:0000010000000000 6370:0000000000000800 6371:0000000000000008 6372:0000200000000000 6373:0000010000000000 6374:0000000000010000 6375:0000000200000000"},
		{512 * 7, 6, 2, "",
			"0:0100000000000000 4:0100000000000000"},
		{512 * 7, 6, 2, "0123456789abcdef",
			"18:8000000000002100 21:0002000020080000"},
		{512 * 131075, 20, 2, "bloom",
			"159971:03020045800a2000 159972:0000a40050014009"},
	} {
		f, err := bloom.NewBlockedWithParams(c.m, c.k, c.sectors)
		if err != nil {
			t.Fatal(err)
		}
		f.AddString(c.key)
		got := setWords(t, f)
		if got != c.want {
			t.Errorf("m=%d k=%d sectors=%d key %q: set words %s, want %s", c.m, c.k, c.sectors, c.key, got, c.want)
		}
	}
	f, _ := bloom.NewBlockedWithParams(512*20, 6, 2)
	for _, k := range conformance.Keys(99, 1000) {
		f.Add(k)
	}
	b, _ := f.MarshalBinary()
	sum := sha256.Sum256(b)
	if got, want := hex.EncodeToString(sum[:8]), "e1226316ef5242c5"; got != want {
		t.Errorf("encoding of a 20-block filter holding 1000 keys: sha256 prefix %s, want %s", got, want)
	}
}

// setWords lists the nonzero words of f as index:hex pairs.
func setWords(t *testing.T, f *bloom.Blocked) string {
	t.Helper()
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	payload := b[64 : len(b)-4]
	var parts []string
	for i := 0; i < len(payload); i += 8 {
		w := payload[i : i+8]
		if !bytes.Equal(w, make([]byte, 8)) {
			parts = append(parts, strconv.Itoa(i/8)+":"+hex.EncodeToString(w))
		}
	}
	return strings.Join(parts, " ")
}

func TestBlockedSize(t *testing.T) {
	for _, c := range []struct {
		p          float64
		k, sectors int
		bpk        float64 // bits per key, to 0.05
	}{
		{0.1, 3, 1, 5.11},
		{0.01, 6, 2, 10.35},
		{0.001, 8, 2, 17.15},
	} {
		const n = 1_000_000
		m, k, sectors, err := bloom.BlockedSize(n, c.p)
		if err != nil {
			t.Fatal(err)
		}
		if k != c.k || sectors != c.sectors || math.Abs(float64(m)/n-c.bpk) > 0.05 {
			t.Errorf("BlockedSize(1e6, %g) = %d bits (%.2f/key), k=%d, %d sectors; want %.2f/key, k=%d, %d sectors",
				c.p, m, float64(m)/n, k, sectors, c.bpk, c.k, c.sectors)
		}
		if m%512 != 0 {
			t.Errorf("m=%d is not whole blocks", m)
		}
		// The expected rate is just below 0.97p, and one block less would exceed it.
		if r := bloom.BlockedFalsePositiveRate(m, k, sectors, n); r > 0.97*c.p || r < 0.96*c.p {
			t.Errorf("p=%g: expected rate at capacity %g, want just below %g", c.p, r, 0.97*c.p)
		}
	}
	for _, c := range []struct {
		n    uint64
		p    float64
		want error
	}{
		{100, 0, bloom.ErrInvalidParameter},
		{100, 1, bloom.ErrInvalidParameter},
		{100, math.NaN(), bloom.ErrInvalidParameter},
		{100, 1e-13, bloom.ErrInvalidParameter},
		{1e17, 0.01, bloom.ErrTooLarge},
	} {
		if _, _, _, err := bloom.BlockedSize(c.n, c.p); !errors.Is(err, c.want) {
			t.Errorf("BlockedSize(%d, %g): %v, want %v", c.n, c.p, err, c.want)
		}
	}
	// n = 0 and tiny n still give one block.
	if m, _, _, err := bloom.BlockedSize(0, 0.01); err != nil || m != 512 {
		t.Errorf("BlockedSize(0, 0.01) = %d, %v", m, err)
	}
}

func TestNewBlockedWithParamsRefuses(t *testing.T) {
	for _, c := range []struct {
		m          uint64
		k, sectors int
	}{{0, 6, 2}, {512, 0, 2}, {512, 5, 2}, {512, 6, 3}, {512, 22, 2}, {512, 1, 0}, {1 << 57, 6, 2}} {
		if _, err := bloom.NewBlockedWithParams(c.m, c.k, c.sectors); !errors.Is(err, bloom.ErrInvalidParameter) {
			t.Errorf("NewBlockedWithParams(%d, %d, %d): %v, want ErrInvalidParameter", c.m, c.k, c.sectors, err)
		}
	}
	if f, err := bloom.NewBlockedWithParams(513, 6, 2); err != nil || f.M() != 1024 {
		t.Errorf("m=513 should round up to 1024 bits: %v", err)
	}
	if _, err := bloom.NewBlocked(1e15, 0.01); !errors.Is(err, bloom.ErrTooLarge) {
		t.Errorf("NewBlocked(1e15, 0.01): %v, want ErrTooLarge", err)
	}
}

func TestBlockedStatistics(t *testing.T) {
	f, _ := bloom.NewBlocked(50_000, 0.01)
	if f.ApproximateCount() != 0 || f.EstimatedFPP() != 0 || f.FillRatio() != 0 {
		t.Fatal("empty filter has nonzero statistics")
	}
	for _, k := range conformance.Keys(50, 50_000) {
		f.Add(k)
	}
	if n := f.ApproximateCount(); n < 49_000 || n > 51_000 {
		t.Errorf("ApproximateCount after 50000 keys = %d", n)
	}
	if p := f.EstimatedFPP(); p < 0.008 || p > 0.011 {
		t.Errorf("EstimatedFPP at capacity = %g, want about 0.0097", p)
	}
	info := f.Info()
	if info.Kind != "blocked" || info.K != f.K() || info.M != f.M() || info.Sectors != 2 || info.Bytes != int64(f.M()/8) {
		t.Errorf("Info = %+v", info)
	}
	c := f.Clone()
	if !c.Equal(f) {
		t.Error("clone differs")
	}
	f.Reset()
	if f.BitCount() != 0 || c.BitCount() == 0 || c.Equal(f) {
		t.Error("Reset cleared the clone too, or did not clear the filter")
	}
	// A saturated filter gives finite answers.
	s, _ := bloom.NewBlockedWithParams(512, 4, 1)
	for i := range 20_000 {
		s.AddString(strconv.Itoa(i))
	}
	if s.BitCount() != 512 || s.EstimatedFPP() != 1 {
		t.Fatalf("expected saturation: %d bits, FPP %g", s.BitCount(), s.EstimatedFPP())
	}
	if n := s.ApproximateCount(); n < 100 || n > 10_000 {
		t.Errorf("ApproximateCount of a saturated filter = %d", n)
	}
}

func TestBlockedAddTestAllocateNothing(t *testing.T) {
	f, _ := bloom.NewBlocked(100_000, 0.01)
	key := []byte("some key of moderate length")
	for name, fn := range map[string]func(){
		"Add":        func() { f.Add(key) },
		"Test":       func() { f.Test(key) },
		"AddString":  func() { f.AddString("a string key") },
		"TestString": func() { f.TestString("a string key") },
	} {
		if a := testing.AllocsPerRun(100, fn); a != 0 {
			t.Errorf("%s allocates %.1f times per call", name, a)
		}
	}
}

func TestBlockedDecodeRefuses(t *testing.T) {
	f, _ := bloom.NewBlocked(100, 0.01)
	f.AddString("x")
	good, _ := f.MarshalBinary()
	blocks := uint64(len(good)-68) / 64
	hdr := func(scheme byte, k uint32, m, payload uint64, params ...byte) []byte {
		return nativeHeader(2, scheme, k, m, 0, payload, params)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"classic record", mustMarshal(t, mustClassic(t)), "not a blocked one"},
		{"scheme", hdr(3, 6, 512*blocks, 64*blocks, 2), "hashing scheme"},
		{"sectors 3", hdr(1, 6, 512*blocks, 64*blocks, 3), "not a blocked layout"},
		{"k not multiple", hdr(1, 5, 512*blocks, 64*blocks, 2), "not a blocked layout"},
		{"k too large", hdr(1, 22, 512*blocks, 64*blocks, 2), "not a blocked layout"},
		{"reserved", hdr(1, 6, 512*blocks, 64*blocks, 2, 0, 0, 1), "reserved parameter byte 3"},
		{"m not blocks", hdr(1, 6, 512*blocks+64, 64*blocks+8, 2), "multiple of 512"},
		{"m zero", hdr(1, 6, 0, 0, 2), "multiple of 512"},
		{"payload", hdr(1, 6, 512*blocks, 64*blocks+8, 2), "does not match"},
		{"truncated", good[:len(good)-10], "truncated payload"},
		{"checksum", append(bytes.Clone(good[:len(good)-1]), good[len(good)-1]^1), "payload checksum"},
	} {
		var g bloom.Blocked
		err := g.UnmarshalBinary(c.data)
		if !errors.Is(err, bloom.ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrCorrupt mentioning %q", c.name, err, c.want)
		}
	}
	// A header that claims more than this machine has is refused before any allocation.
	var g bloom.Blocked
	if err := g.UnmarshalBinary(hdr(1, 6, 1<<55, 1<<52, 2)); !errors.Is(err, bloom.ErrTooLarge) {
		t.Errorf("512 TiB claim: %v, want ErrTooLarge", err)
	}
}
