package redisfilter

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// runJava runs SpringHelperCheck with args, feeding it stdin, and returns its output lines.
func runJava(t *testing.T, classpath string, stdin string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("java", append([]string{"-cp", classpath, "SpringHelperCheck"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java SpringHelperCheck %s: %v\n%s", args[0], err, stderr.String())
	}
	s := strings.TrimRight(string(out), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func hexOf(s string) string { return hex.EncodeToString([]byte(s)) }

// TestJavaSpringHelper runs the Spring BloomFilterHelper's arithmetic in real Java (Guava's
// murmur3_128) against a real redis-server and against bloomd: Java adds with SETBIT and Go's
// plain-layout handle answers as Java's GETBIT check does for every added and absent key; Go adds
// and Java finds every key. It covers the three common funnels, with non-ASCII and empty
// strings, and checks SpringHelperSize against the helper's sizing (no server involved).
func TestJavaSpringHelper(t *testing.T) {
	classpath := redistest.JavaClasspath(t, "the Spring helper test", "testdata/java/SpringHelperCheck.java")

	t.Run("Size", func(t *testing.T) {
		type np struct {
			n uint64
			p float64
		}
		cases := []np{{1_000_000, 0.01}, {1, 0.5}, {1, 0}, {100, 0}, {3, 0.1}, {10_000, 0.03}, {2_000_000_000, 1e-9},
			{math.MaxInt32, 0.5}, {123_457, 1e-5}, {7, 4.9e-320}, {1000, 0.999}}
		rng := rand.New(rand.NewPCG(3, 5))
		for range 200 {
			cases = append(cases, np{1 + rng.Uint64N(50_000_000), math.Pow(10, -rng.Float64()*12)})
		}
		var in strings.Builder
		for _, c := range cases {
			fmt.Fprintf(&in, "%d %s\n", c.n, strconv.FormatFloat(c.p, 'g', -1, 64))
		}
		got := runJava(t, classpath, in.String(), "size")
		if len(got) != len(cases) {
			t.Fatalf("java printed %d sizes for %d cases", len(got), len(cases))
		}
		for i, c := range cases {
			m, k, err := SpringHelperSize(c.n, c.p)
			if err != nil {
				t.Fatalf("SpringHelperSize(%d, %g): %v (Java: %s)", c.n, c.p, err, got[i])
			}
			if want := fmt.Sprintf("%d %d", m, k); got[i] != want {
				t.Errorf("n=%d p=%g: Java's helper gives m k = %s, SpringHelperSize %s", c.n, c.p, got[i], want)
			}
		}
	})

	// The offsets the package examples print are the helper's own.
	t.Run("Examples", func(t *testing.T) {
		src, err := os.ReadFile("example_plain_test.go")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ funnel, item string }{
			{"string", hexOf("héllo")}, {"string2", hexOf("héllo")}, {"long", "-42"},
		} {
			got := runJava(t, classpath, c.item+"\n", "offsets", "1000000", "0.01", c.funnel)
			if len(got) != 1 || !strings.Contains(string(src), "\t// "+got[0]+"\n") {
				t.Errorf("funnel %s: Java's offsets %v are not an example's output", c.funnel, got)
			}
		}
	})

	rng := rand.New(rand.NewPCG(17, 19))
	runes := []rune("aZ09 -_/\téüßñЖж中文日本語한국어😀🎉👩‍👧\u00a0\u200b\U0010FFFF")
	randString := func() string {
		r := make([]rune, rng.IntN(30))
		for i := range r {
			r[i] = runes[rng.IntN(len(runes))]
		}
		return string(r)
	}
	strs := func(prefix string, n int) []string {
		s := []string{}
		for i := range n {
			if i%2 == 0 {
				s = append(s, randString())
			} else {
				s = append(s, fmt.Sprintf("%s:%d", prefix, i))
			}
		}
		return s
	}
	added := append([]string{"", "é", "中文", "😀", "user@example.com"}, strs("in", 1500)...)
	absent := append([]string{"e", "中", "user@example.org"}, strs("out", 4000)...)
	longs := func(n int) []string {
		s := []string{"0", "-1", strconv.FormatInt(math.MinInt64, 10), strconv.FormatInt(math.MaxInt64, 10)}
		for range n {
			s = append(s, strconv.FormatInt(int64(rng.Uint64()), 10))
		}
		return s
	}
	addedLongs, absentLongs := longs(1500), longs(4000)

	servers(t, func(t *testing.T, c *redis.Client) {
		host, port, _ := net.SplitHostPort(c.Options().Addr)
		password := c.Options().Password
		if password == "" {
			password = "-"
		}
		testJavaFunnels(t, classpath, c, host, port, password, added, absent, addedLongs, absentLongs)
	})
}

// testJavaFunnels runs the funnels' round trips between Java's helper and Go's plain layout on
// the server c (at host:port) talks to.
func testJavaFunnels(t *testing.T, classpath string, c *redis.Client, host, port, password string, added, absent, addedLongs, absentLongs []string) {
	for _, fn := range []struct {
		name string
		// java is an item as SpringHelperCheck reads it; goKey its bytes as the funnel feeds them.
		java, goKey   func(string) string
		added, absent []string
		n             uint64
		p             float64
	}{
		{"string", hexOf, func(s string) string { return s }, nil, nil, 2000, 0.01},
		{"string2", hexOf, func(s string) string { return s + s }, nil, nil, 1500, 0.03},
		{"long", func(s string) string { return s }, func(s string) string {
			v, _ := strconv.ParseInt(s, 10, 64)
			return string(binary.LittleEndian.AppendUint64(nil, uint64(v)))
		}, addedLongs, absentLongs, 3000, 0.001},
	} {
		t.Run(fn.name, func(t *testing.T) {
			ctx := ctxT(t)
			in, out := added, absent
			if fn.added != nil {
				in, out = fn.added, fn.absent
			}
			params, err := SpringHelper(fn.n, fn.p)
			if err != nil {
				t.Fatal(err)
			}
			javaArgs := func(mode, key string) []string {
				return []string{mode, host, port, password, key, strconv.FormatUint(fn.n, 10), strconv.FormatFloat(fn.p, 'g', -1, 64), fn.name}
			}
			lines := func(items []string) string {
				var b strings.Builder
				for _, s := range items {
					b.WriteString(fn.java(s))
					b.WriteByte('\n')
				}
				return b.String()
			}
			goKeys := func(items []string) [][]byte {
				ks := make([][]byte, len(items))
				for i, s := range items {
					ks[i] = []byte(fn.goKey(s))
				}
				return ks
			}
			probe := append(append([]string{}, in...), out...)

			// Java adds; Go answers exactly as Java's check does, for every key.
			key := uniqueName(t)
			runJava(t, classpath, lines(in), javaArgs("add", key)...)
			f, err := OpenPlain(ctx, c, key, params, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.TestMany(ctx, goKeys(probe))
			if err != nil {
				t.Fatal(err)
			}
			javaSays := runJava(t, classpath, lines(probe), javaArgs("check", key)...)
			fp := 0
			for i := range probe {
				if i < len(in) && !got[i] {
					t.Fatalf("Java added %q; Go's plain filter says absent", probe[i])
				}
				if want := javaSays[i] == "1"; got[i] != want {
					t.Fatalf("%q: Go answers %v, Java's helper %v", probe[i], got[i], want)
				}
				if i >= len(in) && got[i] {
					fp++
				}
			}
			// Java never wrote anything but bits, and Go added nothing.
			if typ, err := c.Type(ctx, key).Result(); typ != "string" {
				t.Fatalf("the key is a %q (%v)", typ, err)
			}
			t.Logf("%d added keys found; %d of %d other keys (short random strings may repeat added ones) present for both", len(in), fp, len(out))

			// Go adds; Java's GETBIT check finds every key, and the bits are the ones Java sets.
			goKey := uniqueName(t)
			g, err := NewPlain(ctx, c, goKey, params, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.AddMany(ctx, goKeys(in)); err != nil {
				t.Fatal(err)
			}
			javaSays = runJava(t, classpath, lines(probe), javaArgs("check", goKey)...)
			for i := range probe {
				if i < len(in) && javaSays[i] != "1" {
					t.Fatalf("Go added %q; Java's helper says absent", probe[i])
				}
				if want := javaSays[i] == "1"; got[i] != want {
					t.Fatalf("%q: Java answers %v on Go's bits, %v on its own", probe[i], want, got[i])
				}
			}
			javaBits, _ := c.Get(ctx, key).Bytes()
			goBits, _ := c.Get(ctx, goKey).Bytes()
			if !bytes.Equal(bytes.TrimRight(javaBits, "\x00"), bytes.TrimRight(goBits, "\x00")) {
				t.Errorf("the bits Go set differ from the bits Java set for the same keys")
			}
		})
	}
}
