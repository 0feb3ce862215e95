package redisbloom

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/conformance"
)

func TestNewChainSizing(t *testing.T) {
	// Worked examples observed on RedisBloom 2.6 through BF.DEBUG and BF.INFO.
	cases := []struct {
		capacity   uint64
		rate       float64
		nonScaling bool
		bytes      uint64
		hashes     int
		size       uint64
	}{
		{100, 0.01, false, 144, 8, 240},
		{100, 0.01, true, 120, 7, 216},
		{10, 0.1, false, 8, 5, 104},
		{1000, 0.001, false, 1984, 11, 2080},
		{20_000_000, 0.01, false, 27_569_384, 8, 32 + 64 + 27_569_384},
		{1, 0.9999999999999999, true, 8, 1, 104}, // RedisBloom's test_very_high_error_rate
	}
	for _, c := range cases {
		ch, err := NewChain(c.capacity, c.rate, 2, c.nonScaling, nil)
		if err != nil {
			t.Fatalf("NewChain(%d, %g): %v", c.capacity, c.rate, err)
		}
		l := ch.Links()[0]
		if l.Bytes != c.bytes || l.Hashes != c.hashes || ch.Size() != c.size || ch.Capacity() != c.capacity {
			t.Errorf("NewChain(%d, %g, nonscaling=%v): bytes %d hashes %d size %d capacity %d, want %d %d %d %d",
				c.capacity, c.rate, c.nonScaling, l.Bytes, l.Hashes, ch.Size(), ch.Capacity(), c.bytes, c.hashes, c.size, c.capacity)
		}
	}
}

func TestNewChainErrors(t *testing.T) {
	for _, c := range []struct {
		capacity uint64
		rate     float64
		want     error
	}{
		{0, 0.01, bloom.ErrInvalidParameter},
		{100, 0, bloom.ErrInvalidParameter},
		{100, 1, bloom.ErrInvalidParameter},
		{100, -0.5, bloom.ErrInvalidParameter},
		{100, math.NaN(), bloom.ErrInvalidParameter},
		// BF.RESERVE k 0.99 1e15 NONSCALING makes RedisBloom allocate 2.6 TB; we refuse.
		{1e15, 0.99, bloom.ErrTooLarge},
		{math.MaxUint64, 0.01, bloom.ErrTooLarge},
	} {
		if _, err := NewChain(c.capacity, c.rate, 2, true, nil); !errors.Is(err, c.want) {
			t.Errorf("NewChain(%d, %g): %v, want %v", c.capacity, c.rate, err, c.want)
		}
	}
}

// TestScalingFromTheReference checks the scaling example of the reference notes: capacity 1000,
// error 0.001, 3500 distinct items → three links of these sizes, the first two full.
func TestScalingFromTheReference(t *testing.T) {
	c := mustChain(t, 1000, 0.001, 2, false)
	added := 0
	for _, k := range items("item-", 3500) {
		ok, err := c.Add(k)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			added++
		}
	}
	falsePositives := 3500 - added
	if falsePositives > 10 {
		t.Errorf("%d false positives among 3500 items at rates ≤ 0.0005", falsePositives)
	}
	want := []LinkInfo{
		{Capacity: 1000, Items: 1000, Bytes: 1984, Hashes: 11, ErrorRate: 0.0005},
		{Capacity: 2000, Items: 2000, Bytes: 4320, Hashes: 12, ErrorRate: 0.00025},
		{Capacity: 4000, Items: uint64(500 - falsePositives), Bytes: 9360, Hashes: 13, ErrorRate: 0.000125},
	}
	got := c.Links()
	for i := range got {
		got[i].BitsPerEntry = 0
	}
	if !slices.Equal(got, want) {
		t.Errorf("links %+v\nwant %+v", got, want)
	}
	if c.Card() != uint64(added) || c.Capacity() != 7000 || c.Size() != 32+3*64+1984+4320+9360 {
		t.Errorf("Card %d (want %d), Capacity %d, Size %d", c.Card(), added, c.Capacity(), c.Size())
	}
	// Every item added tests present, and duplicates change nothing.
	for _, k := range items("item-", 3500) {
		if !c.Exists(k) {
			t.Fatalf("%s lost", k)
		}
		if ok, err := c.Add(k); ok || err != nil {
			t.Fatalf("second Add(%s) = %v, %v", k, ok, err)
		}
	}
	if c.Card() != uint64(added) || c.NumFilters() != 3 {
		t.Errorf("after duplicates: Card %d, %d links", c.Card(), c.NumFilters())
	}
}

func TestNonScalingFull(t *testing.T) {
	c := mustChain(t, 5, 0.1, 2, true)
	keys := items("k-", 10)
	n := 0
	for _, k := range keys {
		ok, err := c.Add(k)
		if errors.Is(err, ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			n++
		}
	}
	if n != 5 || c.Card() != 5 || c.NumFilters() != 1 {
		t.Fatalf("non-scaling chain took %d items (Card %d, %d links), want 5 in 1 link", n, c.Card(), c.NumFilters())
	}
	// A present item still answers false without error; a new one fails.
	if ok, err := c.Add(keys[0]); ok || err != nil {
		t.Errorf("Add of a present item on a full chain = %v, %v; want false, nil", ok, err)
	}
	if _, err := c.Add([]byte("definitely-new-item-xyz")); !errors.Is(err, ErrFull) {
		t.Errorf("Add of a new item on a full chain: %v, want ErrFull", err)
	}
	if !c.NonScaling() || c.Expansion() != 2 {
		t.Errorf("NonScaling %v Expansion %d", c.NonScaling(), c.Expansion())
	}
}

func TestCannotGrow(t *testing.T) {
	// Expansion 0 (EXPANSION 4294967296 in RedisBloom) gives a second link of capacity 0.
	c := mustChain(t, 4, 0.01, 0, false)
	var err error
	for _, k := range items("g-", 10) {
		if _, err = c.Add(k); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrCannotGrow) {
		t.Errorf("expansion 0: %v, want ErrCannotGrow", err)
	}
	if c.NumFilters() != 1 || c.Card() != 4 {
		t.Errorf("expansion 0: failed growth changed the chain: %d links, %d items", c.NumFilters(), c.Card())
	}

	// The next link would not fit: capacity 2^20·2^20 at 0.125 is about 600 GB (bloom.ErrTooLarge
	// from the machine's memory), or 2^22·(2^32-1) needs more than 2^56 bits (from the sizing).
	// A full first link is simulated by setting its count, as a loaded header could.
	for _, tc := range []struct {
		capacity  uint64
		expansion uint32
	}{{1 << 20, 1 << 20}, {1 << 22, math.MaxUint32}} {
		c := mustChain(t, tc.capacity, 0.5, tc.expansion, false)
		(*c.links.Load())[0].size.Store(tc.capacity)
		_, err := c.Add([]byte("x"))
		if !errors.Is(err, ErrCannotGrow) || !errors.Is(err, bloom.ErrTooLarge) {
			t.Errorf("capacity %d expansion %d: %v, want ErrCannotGrow wrapping ErrTooLarge", tc.capacity, tc.expansion, err)
		}
		if c.NumFilters() != 1 || c.Card() != tc.capacity {
			t.Errorf("failed growth changed the chain: %d links, %d items", c.NumFilters(), c.Card())
		}
	}

	// capacity · expansion overflows 64 bits: RedisBloom wraps around, we refuse.
	c = mustChain(t, 1, 0.5, 2, false)
	(*c.links.Load())[0].capacity = 1 << 63 // as a loaded header could declare
	(*c.links.Load())[0].size.Store(1 << 63)
	if _, err := c.Add([]byte("x")); !errors.Is(err, ErrCannotGrow) {
		t.Errorf("capacity overflow: %v, want ErrCannotGrow", err)
	}
}

// TestErrorUnderflow grows a chain until its error rate underflows to 0 (RedisBloom's limit on
// the number of links too) and checks that growth then fails cleanly.
func TestErrorUnderflow(t *testing.T) {
	c := mustChain(t, 1, 0x1p-1072, 1, false) // first link at 2^-1073
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		_, err = c.Add(fmt.Appendf(nil, "u-%d", i))
	}
	if !errors.Is(err, ErrCannotGrow) || !errors.Is(err, bloom.ErrInvalidParameter) {
		t.Fatalf("%v, want ErrCannotGrow wrapping ErrInvalidParameter", err)
	}
	links := c.Links()
	if len(links) != 2 || links[1].ErrorRate != 0x1p-1074 || links[1].Hashes != 1075 || c.Card() != 2 {
		t.Errorf("links %+v", links)
	}
	// The chain still dumps and loads.
	d, err := LoadChunks(c.Chunks(), nil)
	if err != nil || !slices.Equal(d.Header(), c.Header()) {
		t.Errorf("reload: %v", err)
	}
}

func TestReserveHook(t *testing.T) {
	var asked []uint64
	budget := uint64(400)
	opts := &Options{Reserve: func(n uint64) error {
		asked = append(asked, n)
		if n > budget {
			return errOOM
		}
		budget -= n
		return nil
	}}
	c, err := NewChain(10, 0.01, 2, false, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != c.Size() {
		t.Fatalf("NewChain reserved %v, want [Size %d]", asked, c.Size())
	}
	var growErr error
	for _, k := range items("r-", 100) {
		if _, growErr = c.Add(k); growErr != nil {
			break
		}
	}
	if growErr != errOOM {
		t.Fatalf("Add past the budget: %v, want the hook's error unchanged", growErr)
	}
	// Each granted reservation is what Size grew by; the refused one is the next link's
	// bytes plus 64, and changed nothing.
	var sum uint64
	for _, n := range asked[:len(asked)-1] {
		sum += n
	}
	if sum != c.Size() {
		t.Errorf("granted %v (sum %d), Size %d", asked, sum, c.Size())
	}
	links := c.Links()
	last := links[len(links)-1]
	m, _, _, err := bloom.RedisBloomSize(last.Capacity*2, last.ErrorRate/2)
	if err != nil {
		t.Fatal(err)
	}
	if got := asked[len(asked)-1]; got != 64+m/8 {
		t.Errorf("refused reservation %d, want %d", got, 64+m/8)
	}
	if last.Items != last.Capacity {
		t.Errorf("growth refused before the newest link was full")
	}
	if _, err := NewChain(1_000_000, 0.01, 2, false, opts); err != errOOM {
		t.Errorf("NewChain past the budget: %v", err)
	}
}

var errOOM = errors.New("OOM command not allowed when used memory > 'maxmemory'")

func TestDebugFormat(t *testing.T) {
	c := mustChain(t, 10, 0.05, 1, false)
	addAll(t, c, items("item-", 40)) // BF.MADD sc1 item-0 … item-39 in the recorded session
	want := []string{
		"size:37",
		"bytes:16 bits:128 hashes:6 hashwidth:64 capacity:10 size:10 ratio:0.025",
		"bytes:16 bits:128 hashes:7 hashwidth:64 capacity:10 size:10 ratio:0.0125",
		"bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.00625",
		"bytes:16 bits:128 hashes:9 hashwidth:64 capacity:10 size:7 ratio:0.003125",
	}
	if got := c.Debug(); !slices.Equal(got, want) {
		t.Errorf("Debug:\n%q\nwant\n%q", got, want)
	}
	// The ratio is C's %g (six significant digits, exponent below 1e-4, round half to even on
	// the binary value): glibc's printf gives these for 0.01·2^-i.
	cRatios := []string{"0.005", "0.0025", "0.00125", "0.000625", "0.0003125", "0.00015625", "7.8125e-05",
		"3.90625e-05", "1.95313e-05", "9.76563e-06", "4.88281e-06", "2.44141e-06", "1.2207e-06", "6.10352e-07"}
	c = mustChain(t, 1, 0.01, 1, false)
	for i := 0; i < 100 && c.NumFilters() < len(cRatios); i++ {
		c.Add(fmt.Appendf(nil, "d-%d", i))
	}
	for i, line := range c.Debug()[1:] {
		if want := "ratio:" + cRatios[i]; !strings.HasSuffix(line, " "+want) {
			t.Errorf("link %d: %q, want %s", i, line, want)
		}
	}
}

func TestAddAllocatesNothing(t *testing.T) {
	c := mustChain(t, 1000, 0.01, 2, false)
	addAll(t, c, items("a-", 3000)) // three links
	key := []byte("some-item-not-added")
	if n := testing.AllocsPerRun(1000, func() { c.Exists(key) }); n != 0 {
		t.Errorf("Exists allocates %v times", n)
	}
	present := []byte("a-17")
	if n := testing.AllocsPerRun(1000, func() { c.Add(present) }); n != 0 {
		t.Errorf("Add of a present item allocates %v times", n)
	}
	i := 0
	fresh := items("fresh-", 2000)
	if n := testing.AllocsPerRun(1000, func() { c.Add(fresh[i]); i++ }); n != 0 {
		t.Errorf("Add of new items allocates %v times", n)
	}
}

// TestConcurrentAdds races writers across several growths. The invariants hold exactly even
// under concurrency: no false negatives, no link counting more than its capacity, and Card equal
// to the number of Adds that reported a new item (writers add distinct items).
func TestConcurrentAdds(t *testing.T) {
	c := mustChain(t, 100, 0.01, 2, false)
	const writers, perWriter = 4, 5000
	newCount := make([]int, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for _, k := range items(fmt.Sprintf("w%d-", w), perWriter) {
				ok, err := c.Add(k)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					newCount[w]++
				}
				if !c.Exists(k) {
					t.Errorf("%s absent right after Add", k)
					return
				}
			}
		})
		wg.Go(func() { // readers of everything a server reads
			for range 200 {
				c.Card()
				c.Size()
				c.Debug()
				c.ScanDump(0)
				c.ScanDump(1)
			}
		})
	}
	wg.Wait()
	total := 0
	for _, n := range newCount {
		total += n
	}
	if c.Card() != uint64(total) {
		t.Errorf("Card %d, Adds reporting new %d", c.Card(), total)
	}
	// A distinct item is reported present only by a false positive of some link. The chain's
	// compound false-positive rate is below error/(1-0.5) = 2% (each link tightens the error by
	// half), so at least 98% must be new. (The same items added sequentially: 19822 new, 0.89%
	// false positives; the order that concurrency gives moves that a little either way.)
	if total < writers*perWriter*98/100 {
		t.Errorf("only %d of %d distinct items reported new (more than the chain's 2%% false-positive bound)", total, writers*perWriter)
	}
	for i, l := range c.Links() {
		if l.Items > l.Capacity {
			t.Errorf("link %d holds %d items, capacity %d", i, l.Items, l.Capacity)
		}
		if i < c.NumFilters()-1 && l.Items != l.Capacity {
			// An older link is only left when full.
			t.Errorf("link %d was left with %d of %d items", i, l.Items, l.Capacity)
		}
	}
	for w := range writers {
		for _, k := range items(fmt.Sprintf("w%d-", w), perWriter) {
			if !c.Exists(k) {
				t.Fatalf("%s lost", k)
			}
		}
	}
	// The chain dumps consistently and reloads to the same answers.
	d, err := LoadChunks(c.Chunks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Card() != c.Card() || !slices.Equal(d.Header(), c.Header()) {
		t.Errorf("reloaded chain differs")
	}
}

// chainFilter adapts a Chain to the conformance harness.
type chainFilter struct{ *Chain }

func (f chainFilter) Add(key []byte) bool {
	ok, err := f.Chain.Add(key)
	if err != nil {
		panic(err)
	}
	return ok
}

func (f chainFilter) Test(key []byte) bool { return f.Chain.Exists(key) }

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Impl{
		New: func(n uint64, p float64) (conformance.Filter, error) {
			c, err := NewChain(n, p, DefaultExpansion, false, nil)
			return chainFilter{c}, err
		},
		Marshal: func(f conformance.Filter) ([]byte, error) {
			var b bytes.Buffer
			_, err := f.(chainFilter).WriteTo(&b)
			return b.Bytes(), err
		},
		Unmarshal: func(b []byte) (conformance.Filter, error) {
			r := bytes.NewReader(b)
			c, err := ReadDump(r, nil)
			if err != nil {
				return nil, err
			}
			if r.Len() != 0 {
				return nil, fmt.Errorf("%d bytes after the dump", r.Len())
			}
			return chainFilter{c}, nil
		},
		Checksummed: true,
		// A chain for (n, p) holds n items in its first link, which runs at p/2: the bound is
		// 0.6·p plus sampling noise, so a chain that did not tighten its first link would fail.
		MaxFPPFactor: 0.6,
		Rates:        []conformance.Rate{{N: 20_000, P: 0.1}, {N: 20_000, P: 0.01}, {N: 20_000, P: 0.001}},
	})
}

// AddHash, ExistsHash and PrefetchHash of HashItem's hash do what Add, Exists and Prefetch do
// with the item: the same results, the same growth, the same bytes.
func TestItemHash(t *testing.T) {
	byItem, err := NewChain(100, 0.01, 2, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	byHash, _ := NewChain(100, 0.01, 2, false, nil)
	// In batches, as a server prepares a pipeline: the chain grows between an item's
	// PrefetchHash and its AddHash, whose positions are then those of an older link.
	var batch [16]ItemHash
	for from := 0; from < 1000; from += len(batch) { // grows to 4 links
		for j := range batch {
			batch[j].Reset(fmt.Appendf(nil, "item:%d", (from+j)%700))
			if j%5 != 0 { // and some without the positions
				byHash.PrefetchHash(&batch[j])
			}
		}
		for j := range batch {
			item := fmt.Appendf(nil, "item:%d", (from+j)%700)
			want, werr := byItem.Add(item)
			got, gerr := byHash.AddHash(&batch[j])
			if got != want || gerr != werr {
				t.Fatalf("item %d: AddHash gives %v, %v; Add %v, %v", from+j, got, gerr, want, werr)
			}
		}
	}
	for i := range 2000 {
		item := fmt.Appendf(nil, "item:%d", i)
		var h ItemHash
		h.Reset(item)
		if i%2 == 0 {
			byHash.PrefetchHash(&h)
		}
		if got, want := byHash.ExistsHash(&h), byItem.Exists(item); got != want {
			t.Fatalf("item %d: ExistsHash %v, Exists %v", i, got, want)
		}
	}
	if byItem.NumFilters() < 3 || byHash.Card() != byItem.Card() {
		t.Fatalf("links %d, cards %d and %d", byItem.NumFilters(), byHash.Card(), byItem.Card())
	}
	dump := func(c *Chain) (b []byte) {
		for _, data := range c.Chunks() {
			b = append(b, data...)
		}
		return b
	}
	if !bytes.Equal(dump(byHash), dump(byItem)) {
		t.Fatal("the dumps differ")
	}
}
