package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// A plain Redis key written with SETBIT at the Spring helper's positions (as a Java service
// writes it) is tested in place, pulled to a native file that answers the same, and pushed back
// to another key with the very same bytes; parameters that cannot fit are refused.
func TestPlainKey(t *testing.T) {
	srv := redistest.New(t, nil)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	params, err := redisfilter.SpringHelper(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	// The Java side: SETBIT at each position, as the helper computes them.
	var added []string
	for i := range 500 {
		item := "user-" + strings.Repeat("é", i%3) + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		added = append(added, item)
		for _, b := range bloom.Guava32.Locations(nil, []byte(item), params.K, params.M) {
			if err := c.SetBit(ctx, "bloom:users", int64(b), 1).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	exact, _ := bloom.NewExact(params.M, params.K, bloom.Guava32)
	for _, s := range added {
		exact.AddString(s)
	}
	probe := append(append([]string{}, added[:50]...), "nobody", "", "中文", "user-zz")
	var want strings.Builder
	for _, s := range probe {
		if exact.TestString(s) {
			want.WriteString("maybe\n")
		} else {
			want.WriteString("no\n")
		}
	}
	url := "redis://" + srv.Addr + "/bloom:users"
	rule := []string{"--rule", "spring-helper", "-n", "1000", "-p", "0.01"}
	explicit := []string{"--m", "9585", "--k", "7", "--scheme", "guava32", "--bit-order", "setbit"}
	if params.M != 9585 || params.K != 7 {
		t.Fatalf("SpringHelper(1000, 0.01) = %v; the explicit flags above assume m=9585 k=7", params)
	}
	input := strings.Join(probe, "\n") + "\n"
	for _, flags := range [][]string{rule, explicit} {
		r := run(t, input, append([]string{"test", url}, flags...)...)
		if r.stdout != want.String() || r.code != exitOK {
			t.Fatalf("test %v: status %d, answers\n%s\nwant\n%s\nstderr %s", flags, r.code, r.stdout, want.String(), r.stderr)
		}
	}

	file := tempPath(t, "users.bloom")
	out := run(t, "", append([]string{"pull", url, file}, rule...)...).ok(t)
	if !strings.Contains(out, "m=9585 k=7 scheme=guava32 bit-order=setbit") {
		t.Errorf("pull said %q", out)
	}
	if got := run(t, input, "test", file).stdout; got != want.String() {
		t.Errorf("the pulled file answers\n%s\nwant\n%s", got, want.String())
	}
	if info := run(t, "", "info", file).ok(t); !strings.Contains(info, "9,585 (") {
		t.Errorf("info of the pulled file does not show m=9585:\n%s", info)
	}

	url2 := "redis://" + srv.Addr + "/bloom:copy"
	run(t, "", append([]string{"push", file, url2}, explicit...)...).ok(t)
	orig, _ := c.Get(ctx, "bloom:users").Bytes()
	copied, _ := c.Get(ctx, "bloom:copy").Bytes()
	// Java's string ends at its highest set bit; the pushed one has the full ceil(m/8) bytes.
	if strings.TrimRight(string(orig), "\x00") != strings.TrimRight(string(copied), "\x00") || len(copied) != (9585+7)/8 {
		t.Errorf("the pushed key (%d bytes) differs from the original (%d bytes)", len(copied), len(orig))
	}
	if keys, _ := c.Keys(ctx, "*bloom-push*").Result(); len(keys) != 0 {
		t.Errorf("temporary keys left behind: %v", keys)
	}

	// Refusals, each writing nothing.
	run(t, "", append([]string{"push", file, url2}, explicit...)...).fails(t, "already exists", "--force")
	other := []string{"--m", "9600", "--k", "7", "--scheme", "guava32", "--bit-order", "setbit"}
	run(t, "", append([]string{"push", "--force", file, url2}, other...)...).fails(t, "m=9585", "m=9600")
	small := []string{"--m", "1000", "--k", "7", "--scheme", "guava32", "--bit-order", "setbit"}
	run(t, "", append([]string{"pull", url, tempPath(t, "x")}, small...)...).fails(t, "bytes, more than the 125")
	run(t, "a\n", append([]string{"test", url}, small...)...).fails(t, "more than the 125")
	run(t, "", append([]string{"pull", "redis://" + srv.Addr + "/missing", tempPath(t, "x")}, rule...)...).fails(t, "does not exist")
	c.RPush(ctx, "alist", "x")
	run(t, "a\n", append([]string{"test", "redis://" + srv.Addr + "/alist"}, rule...)...).fails(t, "holds a Redis list, not a filter")
	run(t, "a\n", "test", url).fails(t, "parameters must be given")
	run(t, "a\n", append([]string{"test", file}, rule...)...).fails(t, "give a redis:// URL")
	run(t, "", append([]string{"pull", url, tempPath(t, "x"), "--to", "guava"}, rule...)...).fails(t, "not a whole number of 64-bit words")
	if n, _ := c.Exists(ctx, "missing").Result(); n != 0 {
		t.Error("pull created the missing key")
	}
}

func TestPlainFlags(t *testing.T) {
	for _, c := range []struct {
		pf   plainFlags
		want string // a substring of the error, or of the parameters' String
	}{
		{plainFlags{rule: "spring-helper", n: "1M", p: "1%"}, "m=9585058 k=7 scheme=guava32 bit-order=setbit"},
		{plainFlags{rule: "spring-helper", n: "1M", p: "0.01", scheme: "guava32", order: "setbit"}, "m=9585058 k=7"},
		{plainFlags{m: "1000", k: "3", scheme: "guava64", order: "word"}, "m=1000 k=3 scheme=guava64 bit-order=word"},
		{plainFlags{rule: "guava", n: "1", p: "0.1"}, "is not known"},
		{plainFlags{rule: "spring-helper", n: "1M"}, "needs -n"},
		{plainFlags{rule: "spring-helper", n: "1M", p: "0.01", m: "5"}, "drop --m"},
		{plainFlags{rule: "spring-helper", n: "1M", p: "0.01", scheme: "guava64"}, "drop --scheme"},
		{plainFlags{rule: "spring-helper", n: "1M", p: "0.01", order: "word"}, "drop --bit-order"},
		{plainFlags{rule: "spring-helper", n: "3G", p: "0.01"}, "Java int"},
		{plainFlags{m: "1000", k: "3"}, "missing [--scheme --bit-order]"},
		{plainFlags{n: "1000", p: "0.01"}, "go with --rule"},
		{plainFlags{m: "8Gi", k: "3", scheme: "guava32", order: "setbit"}, "2^32"},
		{plainFlags{m: "1000", k: "0", scheme: "guava32", order: "setbit"}, "--k"},
		{plainFlags{m: "1000", k: "3", scheme: "murmur", order: "setbit"}, "--scheme"},
		{plainFlags{m: "1000", k: "3", scheme: "guava32", order: "msb"}, "--bit-order"},
	} {
		p, err := c.pf.params()
		got := p.String()
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%+v: got %q, want %q", c.pf, got, c.want)
		}
	}
}

// FuzzPlainFlags: any flag values give valid parameters or an error, never a panic.
func FuzzPlainFlags(f *testing.F) {
	f.Add("", "", "", "", "spring-helper", "1M", "0.01")
	f.Add("9585058", "7", "guava32", "setbit", "", "", "")
	f.Add("1e9", "4096", "redisson", "word", "", "", "")
	f.Add("", "", "guava32", "setbit", "spring-helper", "2147483647", "1e-300")
	f.Fuzz(func(t *testing.T, m, k, scheme, order, rule, n, p string) {
		pf := plainFlags{m: m, k: k, scheme: scheme, order: order, rule: rule, n: n, p: p}
		params, err := pf.params()
		if err == nil {
			if verr := params.Validate(); verr != nil || params.Order == 0 {
				t.Fatalf("%+v gave invalid parameters %v: %v", pf, params, verr)
			}
		}
	})
}
