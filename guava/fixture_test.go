package guava_test

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
)

// A fixture is a filter Guava made (<name>.bin) and what Guava answered while making it
// (<name>.txt, in the format of testdata/README.md).
type fixture struct {
	name        string
	bin         []byte
	funnel      string // "string", "long" or "int"
	strategy    int    // Guava's ordinal: 1 MURMUR128_MITZ_64, 0 MURMUR128_MITZ_32
	n           uint64
	p           float64
	k           int
	words       int
	ops         []op // puts and probes, in the order Guava ran them
	bitCount    uint64
	approx      string // a number, or "ArithmeticException" when Guava threw
	expectedFPP float64
}

// An op is one put or probe of an item and Guava's answer, expanded from the file's range lines.
type op struct {
	put  bool
	item any // string, int64 or int32, by funnel
	want bool
	line int
}

func (x *fixture) scheme() bloom.Scheme {
	if x.strategy == 0 {
		return bloom.Guava32
	}
	return bloom.Guava64
}

// loadFixtures reads every <name>.txt of dir with its <name>.bin.
func loadFixtures(t *testing.T, dir string) []*fixture {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no fixtures in %s", dir)
	}
	var fixtures []*fixture
	for _, file := range files {
		x, err := parseFixture(file)
		if err != nil {
			t.Fatal(err)
		}
		fixtures = append(fixtures, x)
	}
	return fixtures
}

func parseFixture(file string) (*fixture, error) {
	x := &fixture{name: strings.TrimSuffix(filepath.Base(file), ".txt")}
	bin, err := os.ReadFile(strings.TrimSuffix(file, ".txt") + ".bin")
	if err != nil {
		return nil, err
	}
	x.bin = bin
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	prefix := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		if err := x.parseLine(sc.Text(), line, &prefix); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if x.funnel == "" || x.k == 0 || x.words == 0 || x.approx == "" {
		return nil, fmt.Errorf("%s: incomplete fixture", file)
	}
	return x, nil
}

func (x *fixture) parseLine(text string, line int, prefix *string) error {
	if text == "" || text[0] == '#' {
		return nil
	}
	f := strings.Split(text, "\t")
	var err error
	want := func(n int) {
		if len(f) != n && err == nil {
			err = fmt.Errorf("%q has %d fields, want %d", text, len(f), n)
		}
	}
	switch f[0] {
	case "funnel":
		want(2)
		x.funnel = f[1]
	case "strategy":
		want(2)
		x.strategy, err = strconv.Atoi(f[1])
	case "expected_insertions":
		want(2)
		x.n, err = strconv.ParseUint(f[1], 10, 64)
	case "fpp":
		want(3)
		x.p, err = parseBits(f[1])
	case "num_hash_functions":
		want(2)
		x.k, err = strconv.Atoi(f[1])
	case "data_length":
		want(2)
		x.words, err = strconv.Atoi(f[1])
	case "prefix":
		want(2)
		*prefix, err = strconv.Unquote(f[1])
	case "put", "probe":
		want(3)
		var it any
		if it, err = x.parseItem(f[1]); err == nil {
			x.ops = append(x.ops, op{put: f[0] == "put", item: it, want: f[2] == "true", line: line})
		}
	case "puts", "probes":
		want(5)
		if err == nil {
			err = x.parseRange(f, line, *prefix)
		}
	case "bit_count":
		want(2)
		x.bitCount, err = strconv.ParseUint(f[1], 10, 64)
	case "approximate_element_count":
		want(2)
		x.approx = f[1]
	case "expected_fpp":
		want(3)
		x.expectedFPP, err = parseBits(f[1])
	default:
		err = fmt.Errorf("unknown line %q", text)
	}
	return err
}

// parseRange expands "puts|probes from to step list": the items from, from+step, ... up to to,
// whose answer is true for probes and false for puts exactly when listed ("*" all, "-" none).
func (x *fixture) parseRange(f []string, line int, prefix string) error {
	var from, to, step int64
	for i, p := range []*int64{&from, &to, &step} {
		v, err := strconv.ParseInt(f[1+i], 10, 64)
		if err != nil {
			return err
		}
		*p = v
	}
	if step == 0 || (to-from)/step < 0 {
		return fmt.Errorf("bad range %d..%d step %d", from, to, step)
	}
	listed := map[int64]bool{}
	if f[4] != "-" && f[4] != "*" {
		for _, s := range strings.Split(f[4], ",") {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return err
			}
			listed[v] = true
		}
	}
	put := f[0] == "puts"
	for i, count := int64(0), (to-from)/step+1; i < count; i++ {
		v := from + i*step
		var it any
		switch x.funnel {
		case "string":
			it = prefix + strconv.FormatInt(v, 10)
		case "long":
			it = v
		case "int":
			it = int32(v)
		}
		isListed := f[4] == "*" || listed[v]
		x.ops = append(x.ops, op{put: put, item: it, want: isListed != put, line: line})
	}
	return nil
}

func (x *fixture) parseItem(s string) (any, error) {
	switch x.funnel {
	case "string":
		return strconv.Unquote(s)
	case "long":
		return strconv.ParseInt(s, 10, 64)
	case "int":
		v, err := strconv.ParseInt(s, 10, 32)
		return int32(v), err
	}
	return nil, fmt.Errorf("unknown funnel %q", x.funnel)
}

// parseBits reads a float64 written as the hex of its IEEE-754 bits, which round-trips exactly.
func parseBits(s string) (float64, error) {
	b, err := strconv.ParseUint(s, 16, 64)
	return math.Float64frombits(b), err
}

// add and test apply an item through the typed helper that matches Guava's funnel.
func add(f *bloom.Filter, item any) bool {
	switch v := item.(type) {
	case string:
		return f.AddString(v)
	case int64:
		return f.AddInt64(v)
	case int32:
		return f.AddInt32(v)
	}
	panic(fmt.Sprintf("item %v of type %T", item, item))
}

func test(f *bloom.Filter, item any) bool {
	switch v := item.(type) {
	case string:
		return f.TestString(v)
	case int64:
		return f.TestInt64(v)
	case int32:
		return f.TestInt32(v)
	}
	panic(fmt.Sprintf("item %v of type %T", item, item))
}
