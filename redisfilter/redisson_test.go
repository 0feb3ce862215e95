package redisfilter

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/redis/go-redis/v9"
)

type redissonGolden struct {
	MaxSize uint64 `json:"max_size"`
	Configs []struct {
		N        uint64  `json:"expectedInsertions"`
		P        float64 `json:"falseProbability"`
		PStored  string  `json:"falseProbability_as_stored_by_StringCodec"`
		Size     uint64  `json:"size"`
		K        int     `json:"hashIterations"`
		TooLarge bool    `json:"size_exceeds_max"`
	} `json:"configs"`
	Counts []struct {
		Size     uint64 `json:"size"`
		K        int    `json:"hashIterations"`
		BitCount uint64 `json:"bitcount"`
		Count    uint64 `json:"count"`
	} `json:"count_examples"`
	Items []struct {
		Item    string              `json:"item"`
		Indexes map[string][]uint64 `json:"indexes"`
	} `json:"items"`
}

func loadRedissonGolden(t *testing.T) *redissonGolden {
	t.Helper()
	raw, err := os.ReadFile("testdata/redisson/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g redissonGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Configs) == 0 || len(g.Items) == 0 {
		t.Fatal("golden.json holds no vectors")
	}
	return &g
}

// TestRedissonSizing checks tryInit's size, hashIterations and stored falseProbability for every
// golden config.
func TestRedissonSizing(t *testing.T) {
	g := loadRedissonGolden(t)
	for _, c := range g.Configs {
		m, k, err := redissonSize(c.N, c.P)
		if c.TooLarge {
			if err == nil {
				t.Errorf("tryInit(%d, %g): accepted size %d beyond Redisson's limit", c.N, c.P, m)
			}
			continue
		}
		if err != nil || m != c.Size || k != c.K {
			t.Errorf("tryInit(%d, %g) = size %d, k %d, %v; Redisson: %d, %d", c.N, c.P, m, k, err, c.Size, c.K)
		}
		if got := javaDouble(c.P); got != c.PStored {
			t.Errorf("javaDouble(%g) = %q; Redisson stores %q", c.P, got, c.PStored)
		}
	}
}

// TestRedissonIndexes pins the positions this package sends for Redisson filters to the ones
// Redisson computes, for every golden config (the large ones are never allocated).
func TestRedissonIndexes(t *testing.T) {
	g := loadRedissonGolden(t)
	checked := 0
	for _, c := range g.Configs {
		cfg := fmt.Sprintf("%d/%s", c.N, strconv.FormatFloat(c.P, 'f', -1, 64))
		for _, it := range g.Items {
			want, ok := it.Indexes[cfg]
			if !ok {
				continue
			}
			got := bloom.Redisson.Locations(nil, []byte(it.Item), c.K, c.Size)
			if !slices.Equal(got, want) {
				t.Errorf("%s: indexes of %q = %v; Redisson: %v", cfg, it.Item, got, want)
			}
			checked++
		}
	}
	if checked < 62*4 {
		t.Fatalf("only %d index vectors checked", checked)
	}
}

func TestJavaDouble(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0.03, "0.03"}, {1e-4, "1.0E-4"}, {0.001, "0.001"}, {0.0009, "9.0E-4"}, {1.5e-5, "1.5E-5"},
		{0.1, "0.1"}, {1, "1.0"}, {100, "100.0"}, {1e7, "1.0E7"}, {12345678.9, "1.23456789E7"},
		{0, "0.0"}, {1e-300, "1.0E-300"}, {0.123456789, "0.123456789"}, {-2.5e-8, "-2.5E-8"},
	} {
		if got := javaDouble(tc.f); got != tc.want {
			t.Errorf("javaDouble(%g) = %q; Java's Double.toString gives %q", tc.f, got, tc.want)
		}
	}
}

// TestRedissonLayout checks what NewRedisson and Add leave in Redis: the config hash exactly as
// Redisson's tryInit writes it, and exactly Redisson's bit indexes set in the bitmap, in SETBIT's
// bit order.
func TestRedissonLayout(t *testing.T) {
	g := loadRedissonGolden(t)
	topologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		for _, name := range []string{uniqueName(t), "{" + uniqueName(t) + "}:bf"} {
			f, err := NewRedisson(ctx, c, name, 100, 0.03, nil)
			if err != nil {
				t.Fatal(err)
			}
			cfgKey := "{" + name + "}:config"
			if strings.Contains(name, "{") {
				cfgKey = name + ":config"
			}
			cfg, err := c.HGetAll(ctx, cfgKey).Result()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"size": "729", "hashIterations": "5", "expectedInsertions": "100", "falseProbability": "0.03"}
			if fmt.Sprint(cfg) != fmt.Sprint(want) {
				t.Fatalf("config hash %s = %v; Redisson writes %v", cfgKey, cfg, want)
			}
			if n, err := c.Exists(ctx, name).Result(); err != nil || n != 0 {
				t.Fatalf("bitmap exists after init (%d, %v); Redisson's tryInit does not create it", n, err)
			}
			set := map[uint64]bool{}
			for _, it := range g.Items[:20] {
				if _, err := f.AddString(ctx, it.Item); err != nil {
					t.Fatal(err)
				}
				for _, ix := range it.Indexes["100/0.03"] {
					set[ix] = true
				}
			}
			for ix := range set {
				if b, err := c.GetBit(ctx, name, int64(ix)).Result(); err != nil || b != 1 {
					t.Fatalf("GETBIT %s %d = %d, %v; want 1", name, ix, b, err)
				}
			}
			if n, err := c.BitCount(ctx, name, nil).Result(); err != nil || n != int64(len(set)) {
				t.Fatalf("BITCOUNT = %d, %v; want %d (only Redisson's indexes set)", n, err, len(set))
			}
		}
	})
}

// TestRedissonInterop runs Redisson's own scripts (tryInit, add, contains) against Redis and
// bloomd next to this package's handles on one filter: what either side adds, the other finds.
func TestRedissonInterop(t *testing.T) {
	g := loadRedissonGolden(t)
	tryInit, add, contains := javaRedissonScript(t, "4.7.0", "tryinit"), javaRedissonScript(t, "4.7.0", "add"), javaRedissonScript(t, "4.7.0", "contains")
	topologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		name := uniqueName(t)
		keys := []string{"{" + name + "}:config", name}
		javaArgs := func(items ...int) []any {
			args := []any{"729", "5", len(items)}
			if len(items) > 0 {
				args[2] = 5 // add passes k, contains passes the number of elements
			}
			for _, i := range items {
				for _, ix := range g.Items[i].Indexes["100/0.03"] {
					args = append(args, ix)
				}
			}
			return args
		}
		// Java: tryInit(100, 0.03), then add items 0..29 one by one as RBloomFilter.add does.
		if r, err := c.Eval(ctx, tryInit, keys[:1], "729", "5", "100", "0.03").Int(); err != nil || r != 1 {
			t.Fatalf("Redisson tryInit = %d, %v", r, err)
		}
		for i := range 30 {
			if _, err := c.Eval(ctx, add, keys, javaArgs(i)...).Int(); err != nil {
				t.Fatalf("Redisson add: %v", err)
			}
		}
		// Go: the same filter, by NewRedisson (which finds the config equal) and OpenRedisson.
		f, err := NewRedisson(ctx, c, name, 100, 0.03, nil)
		if err != nil {
			t.Fatal(err)
		}
		o, err := OpenRedisson(ctx, c, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if o.M() != 729 || o.K() != 5 || o.Scheme() != bloom.Redisson {
			t.Fatalf("OpenRedisson: m=%d k=%d %v; want 729, 5, redisson", o.M(), o.K(), o.Scheme())
		}
		for i := range 30 {
			for _, h := range []*Filter{f, o} {
				if ok, err := h.TestString(ctx, g.Items[i].Item); err != nil || !ok {
					t.Fatalf("Go Test(%q) after Redisson add = %v, %v", g.Items[i].Item, ok, err)
				}
			}
			if isNew, err := f.AddString(ctx, g.Items[i].Item); err != nil || isNew {
				t.Fatalf("Go Add(%q) after Redisson add = %v, %v; want not new", g.Items[i].Item, isNew, err)
			}
		}
		// Go adds items 30..61; Redisson's contains finds all of them, and its add reports them old.
		var rest [][]byte
		for _, it := range g.Items[30:] {
			rest = append(rest, []byte(it.Item))
		}
		if _, err := f.AddMany(ctx, rest); err != nil {
			t.Fatal(err)
		}
		idx := make([]int, 0, len(rest))
		for i := 30; i < len(g.Items); i++ {
			idx = append(idx, i)
		}
		cargs := javaArgs(idx...)
		cargs[2] = len(idx)
		if r, err := c.Eval(ctx, contains, keys, cargs...).Int(); err != nil || r != len(idx) {
			t.Fatalf("Redisson contains over %d Go-added items = %d, %v", len(idx), r, err)
		}
		if r, err := c.Eval(ctx, add, keys, javaArgs(idx...)...).Int(); err != nil || r != 0 {
			t.Fatalf("Redisson add of Go-added items reported %d new, %v; want 0", r, err)
		}
	})
}

// TestRedissonMismatch: a Redisson filter created with other numbers is refused, with the
// fields named; the same numbers spelled differently are accepted and kept.
func TestRedissonMismatch(t *testing.T) {
	tryInit := javaRedissonScript(t, "4.7.0", "tryinit")
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		name := uniqueName(t)
		if err := c.Eval(ctx, tryInit, []string{"{" + name + "}:config"}, "9585", "7", "1000", "0.01").Err(); err != nil {
			t.Fatal(err)
		}
		_, err := NewRedisson(ctx, c, name, 100, 0.03, nil)
		if !errors.Is(err, ErrConfigMismatch) {
			t.Fatalf("NewRedisson over another config: err = %v; want ErrConfigMismatch", err)
		}
		for _, want := range []string{"size: stored 9585, this handle 729", "hashIterations: stored 7, this handle 5"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		name2 := uniqueName(t)
		if err := c.Eval(ctx, tryInit, []string{"{" + name2 + "}:config"}, "1917011", "13", "100000", "1.00E-4").Err(); err != nil {
			t.Fatal(err)
		}
		f, err := NewRedisson(ctx, c, name2, 100000, 1e-4, nil)
		if err != nil {
			t.Fatalf("NewRedisson over the same config spelled differently: %v", err)
		}
		if _, err := f.AddString(ctx, "x"); err != nil {
			t.Fatal(err)
		}
		if v, _ := c.HGet(ctx, "{"+name2+"}:config", "falseProbability").Result(); v != "1.00E-4" {
			t.Fatalf("falseProbability rewritten to %q", v)
		}
		if _, err := OpenRedisson(ctx, c, uniqueName(t), nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("OpenRedisson of a missing filter: err = %v; want ErrNotFound", err)
		}
	})
}

// TestRedissonCount: ApproximateCount on a Redisson filter gives what Redisson's count() gives
// for the same number of set bits (except a saturated filter, where Redisson returns
// Long.MAX_VALUE and this package a finite lower bound).
func TestRedissonCount(t *testing.T) {
	g := loadRedissonGolden(t)
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		checked := 0
		for _, ce := range g.Counts {
			name := uniqueName(t)
			f := newRedisson(c, name, mustResolve(t), bloom.Redisson, ce.Size, ce.K, 1, 0.5, "1", "0.5")
			for b := range ce.BitCount {
				if err := c.SetBit(ctx, name, int64(b), 1).Err(); err != nil {
					t.Fatal(err)
				}
			}
			got, err := f.ApproximateCount(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ce.BitCount == ce.Size {
				if got == 0 || got >= ce.Count {
					t.Errorf("saturated %d/%d: count %d; want a finite positive bound", ce.BitCount, ce.Size, got)
				}
				continue
			}
			if got != ce.Count {
				t.Errorf("size %d k %d with %d bits set: count %d; Redisson %d", ce.Size, ce.K, ce.BitCount, got, ce.Count)
			}
			checked++
		}
		if checked < 4 {
			t.Fatalf("only %d count examples checked", checked)
		}
	})
}
