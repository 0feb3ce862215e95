package guava_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/guava"
	"github.com/bloomd/bloom/internal/conformance"
	"github.com/bloomd/bloom/internal/redistest"
)

// TestJava runs the real Guava: it reads filters that this package wrote and must answer as Go
// does, and its generator must reproduce the committed fixtures byte for byte. It needs java,
// javac and Guava's jar (GUAVA_JAR, default Debian's /usr/share/java/guava.jar); without them it
// skips, unless BLOOM_REQUIRE_JAVA=1 (as in CI), when it fails.
func TestJava(t *testing.T) {
	classpath := redistest.JavaClasspath(t, "the Guava compatibility test", "testdata/java/CheckFilter.java", "testdata/java/GenVectors.java")
	t.Run("GoToJava", func(t *testing.T) { goToJava(t, classpath) })
	t.Run("Regenerate", func(t *testing.T) { regenerate(t, classpath) })
}

// A javaCase is a filter Go writes and the probes Guava answers for it.
type javaCase struct {
	name   string
	filter *bloom.Filter
	probes []probe
	added  int // the first added probes were added to the filter
}

// A probe is one key under one of Guava's funnels.
type probe struct {
	funnel string // "string", "long", "int" or "bytes", as CheckFilter.java names them
	value  any    // string, int64, int32 or []byte
}

func (p probe) manifest() string {
	switch v := p.value.(type) {
	case string:
		return "string\t" + hex.EncodeToString([]byte(v))
	case []byte:
		return "bytes\t" + hex.EncodeToString(v)
	default:
		return fmt.Sprintf("%s\t%d", p.funnel, v)
	}
}

func (p probe) add(f *bloom.Filter) {
	if b, ok := p.value.([]byte); ok {
		f.Add(b)
		return
	}
	add(f, p.value)
}

func (p probe) test(f *bloom.Filter) bool {
	if b, ok := p.value.([]byte); ok {
		return f.Test(b)
	}
	return test(f, p.value)
}

// javaCases covers both strategies, every funnel, sizes Guava's create would not choose (any
// whole number of words, any k up to 255), saturated and empty filters.
func javaCases(t *testing.T) []javaCase {
	rng := rand.New(rand.NewPCG(7, 11))
	runes := []rune("aZ09 -_/\x00\téüßñЖж中文日本語한국어😀🎉👩‍👧\u00a0\u200b\U0010FFFF")
	randString := func() string {
		r := make([]rune, rng.IntN(40))
		for i := range r {
			r[i] = runes[rng.IntN(len(runes))]
		}
		return string(r)
	}
	strs := func(n int) (ps []probe) {
		for range n {
			ps = append(ps, probe{"string", randString()})
		}
		return ps
	}
	longs := func(n int) []probe {
		ps := []probe{{"long", int64(math.MinInt64)}, {"long", int64(math.MaxInt64)}, {"long", int64(0)}, {"long", int64(-1)}}
		for range n {
			ps = append(ps, probe{"long", int64(rng.Uint64())})
		}
		return ps
	}
	ints := func(n int) []probe {
		ps := []probe{{"int", int32(math.MinInt32)}, {"int", int32(math.MaxInt32)}, {"int", int32(0)}, {"int", int32(-1)}}
		for range n {
			ps = append(ps, probe{"int", int32(rng.Uint32())})
		}
		return ps
	}
	keys := func(seed uint64, n int) (ps []probe) {
		for _, k := range conformance.Keys(seed, n) {
			ps = append(ps, probe{"bytes", k})
		}
		return ps
	}
	mk := func(f *bloom.Filter, err error) *bloom.Filter {
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	cases := []javaCase{
		{name: "guava64_strings", filter: mk(bloom.New(3000, 0.01)), probes: append(strs(3000), strs(5000)...), added: 3000},
		{name: "guava32_strings", filter: mk(bloom.NewWithParams(64*500, 6, bloom.Guava32)), probes: append(strs(2000), strs(5000)...), added: 2000},
		{name: "guava64_longs_k255", filter: mk(bloom.NewWithParams(64*50, 255, bloom.Guava64)), probes: append(longs(10), longs(3000)...), added: 14},
		{name: "guava32_longs", filter: mk(bloom.NewWithParams(64*1001, 13, bloom.Guava32)), probes: append(longs(3000), longs(5000)...), added: 3004},
		{name: "guava64_ints", filter: mk(bloom.NewWithParams(64*77, 4, bloom.Guava64)), probes: append(ints(500), ints(5000)...), added: 504},
		{name: "guava32_ints_k255", filter: mk(bloom.NewWithParams(64*9, 255, bloom.Guava32)), probes: append(ints(2), ints(2000)...), added: 6},
		{name: "guava64_bytes", filter: mk(bloom.NewWithParams(64*4097, 5, bloom.Guava64)), probes: append(keys(3, 20000), keys(4, 5000)...), added: 20000},
		// 2^20 bits: enough words for several chunks of reads and writes on both sides.
		{name: "guava32_bytes_large", filter: mk(bloom.NewWithParams(1<<20, 7, bloom.Guava32)), probes: append(keys(5, 60000), keys(6, 5000)...), added: 60000},
		{name: "guava64_saturated", filter: mk(bloom.NewWithParams(64, 2, bloom.Guava64)), probes: append(strs(200), strs(10)...), added: 200},
		{name: "guava64_empty", filter: mk(bloom.New(0, 0.5)), probes: strs(100)},
	}
	// Every filter also gets probes under the other funnels: the bits do not know the funnel.
	for i := range cases {
		c := &cases[i]
		for _, p := range c.probes[:c.added] {
			p.add(c.filter)
		}
		c.probes = append(c.probes, strs(50)...)
		c.probes = append(c.probes, longs(50)...)
		c.probes = append(c.probes, ints(50)...)
		c.probes = append(c.probes, keys(uint64(100+i), 50)...)
		c.probes = append(c.probes, probe{"string", ""}, probe{"bytes", []byte{}})
	}
	return cases
}

var checkLine = regexp.MustCompile(`^filter (\S+) roundtrip=(true|false) approx=(\d+|ArithmeticException) fpp=([0-9a-f]{16}) answers=([01]*)$`)

func goToJava(t *testing.T, classpath string) {
	dir := t.TempDir()
	cases := javaCases(t)
	var manifest strings.Builder
	for _, c := range cases {
		path := filepath.Join(dir, c.name+".bin")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := guava.WriteTo(f, c.filter); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&manifest, "filter\t%s\n", path)
		for _, p := range c.probes {
			fmt.Fprintf(&manifest, "probe\t%s\n", p.manifest())
		}
	}
	manifestPath := filepath.Join(dir, "manifest.tsv")
	if err := os.WriteFile(manifestPath, []byte(manifest.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("java", "-cp", classpath, "CheckFilter", manifestPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("CheckFilter: %v\n%s", err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("CheckFilter printed %d lines for %d filters:\n%s", len(lines), len(cases), out)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := checkLine.FindStringSubmatch(lines[i])
			if m == nil || filepath.Base(m[1]) != c.name+".bin" {
				t.Fatalf("CheckFilter printed %.200q", lines[i])
			}
			if m[2] != "true" {
				t.Errorf("Guava's writeTo of the filter it read differs from what Go wrote")
			}
			answers := m[5]
			if len(answers) != len(c.probes) {
				t.Fatalf("%d answers for %d probes", len(answers), len(c.probes))
			}
			for j, p := range c.probes {
				javaSays, goSays := answers[j] == '1', p.test(c.filter)
				if javaSays != goSays {
					t.Errorf("probe %d (%s %v): Guava's mightContain = %v, Go's Test = %v", j, p.funnel, p.value, javaSays, goSays)
				}
				if j < c.added && !javaSays {
					t.Errorf("probe %d (%s %v) was added, Guava says absent", j, p.funnel, p.value)
				}
			}
			if m[3] == "ArithmeticException" {
				if c.filter.BitCount() != c.filter.M() {
					t.Errorf("Guava's approximateElementCount threw, yet only %d of %d bits are set", c.filter.BitCount(), c.filter.M())
				}
			} else if got := strconv.FormatUint(c.filter.ApproximateCount(), 10); got != m[3] {
				t.Errorf("ApproximateCount = %s, Guava's approximateElementCount = %s", got, m[3])
			}
			want, _ := parseBits(m[4])
			if got := c.filter.EstimatedFPP(); math.Abs(got-want) > 1e-13*want {
				t.Errorf("EstimatedFPP = %v, Guava's expectedFpp = %v", got, want)
			}
		})
	}
}

// regenerate runs the fixture generator with this machine's Guava and requires exactly the
// committed files, which proves they came from Guava and that the generator still describes them.
func regenerate(t *testing.T, classpath string) {
	dir := t.TempDir()
	cmd := exec.Command("java", "-cp", classpath, "GenVectors", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GenVectors: %v\n%s", err, out)
	}
	made, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := filepath.Glob("testdata/*.*")
	if err != nil {
		t.Fatal(err)
	}
	committed = removeString(committed, "testdata/README.md")
	if len(made) != len(committed) {
		t.Errorf("the generator wrote %d files, testdata holds %d", len(made), len(committed))
	}
	version := regexp.MustCompile(`Guava (\S+):`)
	for _, path := range made {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata", filepath.Base(path)))
		if err != nil {
			t.Errorf("generated %s is not committed", filepath.Base(path))
			continue
		}
		if filepath.Base(path) == "sizing.tsv" {
			if g, w := version.FindSubmatch(got), version.FindSubmatch(want); g != nil && w != nil && !bytes.Equal(g[1], w[1]) {
				t.Skipf("the fixtures were written by Guava %s, this machine has %s", w[1], g[1])
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what Guava writes now (%s); regenerate with go generate", filepath.Base(path), diff(got, want))
		}
	}
}

func removeString(s []string, x string) []string {
	out := s[:0]
	for _, v := range s {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}
