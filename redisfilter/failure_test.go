package redisfilter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/server"
	"github.com/bloomd/bloom/internal/servertest"
	"github.com/redis/go-redis/v9"
)

// A monitor counts the EVALSHA and EVAL commands a server runs, from its MONITOR feed (exact on
// Redis and on bloomd alike, where INFO's counts of another connection lag by design).
type monitor struct {
	nc            net.Conn
	r             *bufio.Reader
	admin         *redis.Client
	evalsha, eval int
	seq           int
}

// newMonitor follows the MONITOR feed of c's server on a connection of its own.
func newMonitor(t *testing.T, c *redis.Client) *monitor {
	t.Helper()
	o := c.Options()
	nc, err := net.DialTimeout("tcp", o.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	m := &monitor{nc: nc, r: bufio.NewReader(nc), admin: another(t, c)}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if o.Password != "" {
		fmt.Fprintf(nc, "AUTH %s\r\n", o.Password)
		if l, _ := m.r.ReadString('\n'); !strings.HasPrefix(l, "+OK") {
			t.Fatalf("AUTH: %q", l)
		}
	}
	fmt.Fprintf(nc, "MONITOR\r\n")
	if l, _ := m.r.ReadString('\n'); !strings.HasPrefix(l, "+OK") {
		t.Fatalf("MONITOR: %q", l)
	}
	return m
}

var monitorCmd = regexp.MustCompile(`^\+\S+ \[[^\]]*\] "([^"]*)"`)

// calls returns how many EVALSHA and EVAL commands the server has run since the monitor began,
// reading the feed up to an ECHO sent after everything the caller did.
func (m *monitor) calls(t *testing.T) (evalsha, eval int) {
	t.Helper()
	m.seq++
	marker := fmt.Sprintf("monitor-marker-%d", m.seq)
	if err := m.admin.Echo(ctxT(t), marker).Err(); err != nil {
		t.Fatal(err)
	}
	m.nc.SetDeadline(time.Now().Add(10 * time.Second))
	for {
		l, err := m.r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the MONITOR feed: %v", err)
		}
		if strings.Contains(l, `"`+marker+`"`) {
			return m.evalsha, m.eval
		}
		if sub := monitorCmd.FindStringSubmatch(l); sub != nil {
			switch strings.ToLower(sub[1]) {
			case "evalsha":
				m.evalsha++
			case "eval":
				m.eval++
			}
		}
	}
}

// another returns a second client of c's server, with c's options and none of its hooks.
func another(tb testing.TB, c *redis.Client) *redis.Client {
	a := redis.NewClient(c.Options())
	tb.Cleanup(func() { a.Close() })
	return a
}

// TestOneRoundTrip proves the round-trip claims with a hook that counts what the client sends and
// with the server's own command statistics: one EVALSHA per Add and Test, one pipeline per batch,
// and after SCRIPT FLUSH exactly one retry with EVAL.
func TestOneRoundTrip(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		srv := another(t, c)
		mon := newMonitor(t, c)
		hook := &counter{}
		c.AddHook(hook)
		ctx := ctxT(t)
		f, err := New(ctx, c, uniqueName(t), 10000, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		split, err := New(ctx, c, uniqueName(t), 10000, 0.01, &Options{PartBits: 8192})
		if err != nil {
			t.Fatal(err)
		}
		if split.Parts() != 12 {
			t.Fatalf("split filter has %d parts, want 12", split.Parts())
		}
		if _, err := f.Add(ctx, []byte("warm-up")); err != nil { // the script is cached from here on
			t.Fatal(err)
		}
		batch := keys("batch", 1000)
		check := func(what string, wantSingle, wantPipelines, wantPiped int, wantSha, wantEval int, op func() error) {
			t.Helper()
			sha0, eval0 := mon.calls(t)
			hook.reset()
			if err := op(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			single, pipelines, piped, names := hook.get()
			if single != wantSingle || pipelines != wantPipelines || piped != wantPiped {
				t.Errorf("%s: sent %d single commands and %d pipelines of %d commands (%v); want %d, %d, %d",
					what, single, pipelines, piped, names, wantSingle, wantPipelines, wantPiped)
			}
			sha1, eval1 := mon.calls(t)
			if sha1-sha0 != wantSha || eval1-eval0 != wantEval {
				t.Errorf("%s: server ran %d EVALSHA and %d EVAL; want %d and %d", what, sha1-sha0, eval1-eval0, wantSha, wantEval)
			}
		}
		check("Add", 1, 0, 0, 1, 0, func() error { _, err := f.Add(ctx, []byte("a")); return err })
		check("AddMany(nil)", 0, 0, 0, 0, 0, func() error {
			r, err := f.AddMany(ctx, nil)
			if len(r) != 0 {
				t.Errorf("AddMany(nil) = %v", r)
			}
			return err
		})
		check("Test", 1, 0, 0, 1, 0, func() error { _, err := f.Test(ctx, []byte("a")); return err })
		// 1000 keys at 256 keys per script call: 4 calls in one pipeline.
		check("AddMany", 0, 1, 4, 4, 0, func() error { _, err := f.AddMany(ctx, batch); return err })
		check("TestMany", 0, 1, 4, 4, 0, func() error { _, err := f.TestMany(ctx, batch); return err })
		// A split filter: one call per part per script chunk, still one pipeline.
		check("split Add", 0, 1, 7, 7, 0, func() error { _, err := split.Add(ctx, []byte("a")); return err })
		check("split AddMany", 0, 1, 48, 48, 0, func() error { _, err := split.AddMany(ctx, batch); return err })
		// A batch larger than PipelineKeys is chunked: 1000 keys at 300 per round trip are pipelines
		// of 300, 300 and 300 keys (2 script calls each) and a last round trip of 100 keys (1 call,
		// sent alone); every answer is still there.
		chunked, err := New(ctx, c, uniqueName(t), 10000, 0.01, &Options{PipelineKeys: 300})
		if err != nil {
			t.Fatal(err)
		}
		check("chunked AddMany", 1, 3, 6, 7, 0, func() error {
			r, err := chunked.AddMany(ctx, batch)
			if err == nil && (len(r) != len(batch) || strings.Count(formatBools(r), "1") < 990) {
				t.Errorf("chunked AddMany returned %d answers, %d new; want %d, nearly all new", len(r), strings.Count(formatBools(r), "1"), len(batch))
			}
			return err
		})
		check("chunked TestMany", 1, 3, 6, 7, 0, func() error {
			r, err := chunked.TestMany(ctx, batch)
			if err == nil && formatBools(r) != strings.Repeat("1", len(batch)) {
				t.Errorf("chunked TestMany lost keys: %s", formatBools(r))
			}
			return err
		})

		if err := srv.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		check("Add after SCRIPT FLUSH", 2, 0, 0, 1, 1, func() error {
			ok, err := f.Add(ctx, []byte("after flush"))
			if err == nil && !ok {
				t.Error("Add after SCRIPT FLUSH reported a new key as old")
			}
			return err
		})
		if err := srv.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		check("AddMany after SCRIPT FLUSH", 0, 2, 8, 4, 4, func() error {
			r, err := f.AddMany(ctx, keys("after flush batch", 1000))
			if err == nil && strings.Count(formatBools(r), "1") < 990 {
				t.Error("AddMany after SCRIPT FLUSH lost its answers")
			}
			return err
		})
	})
}

func formatBools(r []bool) string {
	b := make([]byte, len(r))
	for i, v := range r {
		b[i] = '0'
		if v {
			b[i] = '1'
		}
	}
	return string(b)
}

// TestOneRoundTripCluster: on a cluster, an Add is one EVALSHA to one node, and a batch is one
// pipeline that the client fans out to the nodes in parallel.
func TestOneRoundTripCluster(t *testing.T) {
	c := cluster(t)
	ctx := ctxT(t)
	f, err := New(ctx, c, uniqueName(t), 10000, 0.01, &Options{PartBits: 8192})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AddMany(ctx, keys("warm", 100)); err != nil { // loads the script on every node
		t.Fatal(err)
	}
	g, err := New(ctx, c, uniqueName(t), 10000, 0.01, nil)
	if err != nil {
		t.Fatal(err)
	}
	hook := &counter{}
	c.AddHook(hook)
	if _, err := g.Add(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if s, p, _, names := hook.get(); s != 1 || p != 0 {
		t.Errorf("cluster Add sent %d commands and %d pipelines (%v); want 1 EVALSHA", s, p, names)
	}
	hook.reset()
	if _, err := f.AddMany(ctx, keys("b", 500)); err != nil {
		t.Fatal(err)
	}
	if s, p, _, _ := hook.get(); s != 0 || p != 1 {
		t.Errorf("cluster AddMany on a split filter sent %d commands and %d pipelines; want one pipeline", s, p)
	}
}

// TestSplitSpreadsOverCluster: the parts of a split filter carry distinct hash tags, so the
// cluster places them on all its masters, and the filter still answers exactly.
func TestSplitSpreadsOverCluster(t *testing.T) {
	cl := redistest.SharedCluster(t)
	c := cluster(t)
	ctx := ctxT(t)
	f, err := New(ctx, c, uniqueName(t), 10000, 0.01, &Options{PartBits: 4096})
	if err != nil {
		t.Fatal(err)
	}
	in := keys("in", 5000)
	if _, err := f.AddMany(ctx, in); err != nil {
		t.Fatal(err)
	}
	holders := map[string]int{}
	keys := f.Keys()
	for _, s := range cl.Servers {
		for _, k := range keys {
			if v, err := s.Do("EXISTS", k); err == nil && v == "1" {
				holders[s.Addr]++
			}
		}
	}
	total := 0
	for _, n := range holders {
		total += n
	}
	if len(holders) != 3 || total != len(keys) {
		t.Errorf("the %d keys of %d parts are held %v; want all keys found, on all 3 masters", len(keys), f.Parts(), holders)
	}
	got, err := f.TestMany(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range got {
		if !ok {
			t.Fatalf("false negative for %q in a split filter", in[i])
		}
	}
}

// TestConfigMismatch: handles with other parameters fail loudly, say what differs, and write
// nothing.
func TestConfigMismatch(t *testing.T) {
	topologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		name := uniqueName(t)
		a, err := New(ctx, c, name, 1000, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.AddMany(ctx, keys("a", 100)); err != nil {
			t.Fatal(err)
		}
		_, err = New(ctx, c, name, 1000, 0.001, nil)
		if !errors.Is(err, ErrConfigMismatch) {
			t.Fatalf("New with another p: err = %v; want ErrConfigMismatch", err)
		}
		for _, want := range []string{"m: stored 9600, this handle 14400", "k: stored 7, this handle 10", "p: stored 0.01, this handle 0.001", "{" + name + "}:meta"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("mismatch error %q does not say %q", err, want)
			}
		}
		if _, err := New(ctx, c, name, 1000, 0.01, &Options{Scheme: 3}); !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "scheme: stored guava64, this handle redisbloom64") {
			t.Errorf("New with another scheme: err = %v", err)
		}

		// Another service deletes the filter and recreates it with other parameters: the old
		// handle's Add and Test fail and change nothing.
		if err := a.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		b, err := New(ctx, c, name, 500, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.AddMany(ctx, keys("b", 100)); err != nil {
			t.Fatal(err)
		}
		before, err := c.Get(ctx, "{"+name+"}:bits").Result()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Add(ctx, []byte("a-new")); !errors.Is(err, ErrConfigMismatch) {
			t.Fatalf("stale handle Add: err = %v; want ErrConfigMismatch", err)
		}
		if _, err := a.AddMany(ctx, keys("a-new", 300)); !errors.Is(err, ErrConfigMismatch) {
			t.Fatalf("stale handle AddMany: err = %v; want ErrConfigMismatch", err)
		}
		if _, err := a.Test(ctx, []byte("b-1")); !errors.Is(err, ErrConfigMismatch) {
			t.Fatalf("stale handle Test: err = %v; want ErrConfigMismatch", err)
		}
		if after, _ := c.Get(ctx, "{"+name+"}:bits").Result(); after != before {
			t.Fatal("a refused Add changed the bits")
		}

		// Open adopts the stored parameters.
		o, err := Open(ctx, c, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if o.M() != b.M() || o.K() != b.K() || o.Scheme() != b.Scheme() {
			t.Fatalf("Open: m=%d k=%d %v; stored m=%d k=%d %v", o.M(), o.K(), o.Scheme(), b.M(), b.K(), b.Scheme())
		}
		if ok, err := o.Test(ctx, []byte("b-7")); err != nil || !ok {
			t.Fatalf("Open handle Test = %v, %v", ok, err)
		}
		if _, err := Open(ctx, c, uniqueName(t), nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Open of a missing filter: err = %v; want ErrNotFound", err)
		}

		// Bits without parameters: refused, and no parameters are invented for them.
		orphan := uniqueName(t)
		if err := c.SetBit(ctx, "{"+orphan+"}:bits", 5, 1).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := New(ctx, c, orphan, 1000, 0.01, nil); !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "no parameters") {
			t.Fatalf("New over orphan bits: err = %v", err)
		}
		if n, _ := c.Exists(ctx, "{"+orphan+"}:meta").Result(); n != 0 {
			t.Fatal("parameters were written over orphan bits")
		}

		// A future format version is refused by Open and by every call.
		if err := c.HSet(ctx, "{"+name+"}:meta", "params", strings.Replace(b.parts[0].want, "redisfilter/1", "redisfilter/2", 1)).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, c, name, nil); !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), "redisfilter/2") {
			t.Fatalf("Open of a format-2 filter: err = %v", err)
		}
		if _, err := b.Test(ctx, []byte("b-1")); !errors.Is(err, ErrConfigMismatch) || !strings.Contains(err.Error(), `format: stored "redisfilter/2"`) {
			t.Fatalf("Test on a format-2 filter: err = %v", err)
		}
	})
}

// TestMissingFilter: a Test on a filter whose keys are gone answers absent and creates nothing;
// an Add recreates it, parameters first.
func TestMissingFilter(t *testing.T) {
	servers(t, func(t *testing.T, c *redis.Client) {
		ctx := ctxT(t)
		name := uniqueName(t)
		f, err := New(ctx, c, name, 1000, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Delete(ctx); err != nil {
			t.Fatal(err)
		}
		if r, err := f.TestMany(ctx, keys("x", 10)); err != nil || strings.Contains(formatBools(r), "1") {
			t.Fatalf("TestMany on a deleted filter = %v, %v; want all absent", r, err)
		}
		if n, _ := c.Exists(ctx, f.Keys()...).Result(); n != 0 {
			t.Fatal("a Test created keys")
		}
		if ok, err := f.Add(ctx, []byte("x")); err != nil || !ok {
			t.Fatalf("Add on a deleted filter = %v, %v", ok, err)
		}
		if line, _ := c.HGet(ctx, "{"+name+"}:meta", "params").Result(); line != f.parts[0].want {
			t.Fatalf("Add recreated parameters %q; want %q", line, f.parts[0].want)
		}
	})
}

// TestWrongType: keys holding other Redis types give ErrWrongType and are left as they were.
func TestWrongType(t *testing.T) {
	topologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		name := uniqueName(t)
		f, err := New(ctx, c, name, 1000, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		bitsKey := "{" + name + "}:bits"
		if err := c.HSet(ctx, bitsKey, "f", "a hash").Err(); err != nil {
			t.Fatal(err)
		}
		for what, op := range map[string]func() error{
			"Add":      func() error { _, err := f.Add(ctx, []byte("x")); return err },
			"AddMany":  func() error { _, err := f.AddMany(ctx, keys("x", 10)); return err },
			"Test":     func() error { _, err := f.Test(ctx, []byte("x")); return err },
			"Snapshot": func() error { _, err := f.Snapshot(ctx); return err },
		} {
			err := op()
			if !errors.Is(err, ErrWrongType) || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Errorf("%s with a hash at %s: err = %v; want ErrWrongType", what, bitsKey, err)
			}
		}
		if v, err := c.HGetAll(ctx, bitsKey).Result(); err != nil || len(v) != 1 || v["f"] != "a hash" {
			t.Fatalf("the hash was changed: %v, %v", v, err)
		}
		other := uniqueName(t)
		if err := c.Set(ctx, "{"+other+"}:meta", "a string", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := New(ctx, c, other, 1000, 0.01, nil); !errors.Is(err, ErrWrongType) {
			t.Errorf("New with a string at the parameter key: err = %v; want ErrWrongType", err)
		}
		rn := uniqueName(t)
		r, err := NewRedisson(ctx, c, rn, 100, 0.03, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.HSet(ctx, rn, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Add(ctx, []byte("x")); !errors.Is(err, ErrWrongType) {
			t.Errorf("Redisson Add with a hash at the bitmap key: err = %v; want ErrWrongType", err)
		}
	})
}

// TestServerDown: every call on a dead server (a redis-server killed, a bloomd shut down)
// returns an error naming the operation, quickly.
func TestServerDown(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		s := redistest.New(t, &redistest.Options{Password: "pw"})
		testServerDown(t, s.Addr, "pw", s.Kill)
	})
	t.Run("bloomd", func(t *testing.T) {
		s, addr := servertest.Start(t, &servertest.Options{Config: func(c *server.Config) { c.Requirepass = "pw" }})
		testServerDown(t, addr, "pw", func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func testServerDown(t *testing.T, addr, password string, kill func()) {
	c := redis.NewClient(&redis.Options{Addr: addr, Password: password, MaxRetries: -1, DialTimeout: time.Second, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	ctx := ctxT(t)
	f, err := New(ctx, c, "down", 1000, 0.01, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Add(ctx, []byte("before")); err != nil {
		t.Fatal(err)
	}
	kill()
	for what, op := range map[string]func() error{
		"Add":     func() error { _, err := f.Add(ctx, []byte("x")); return err },
		"Test":    func() error { _, err := f.Test(ctx, []byte("x")); return err },
		"AddMany": func() error { _, err := f.AddMany(ctx, keys("x", 600)); return err },
		"New":     func() error { _, err := New(ctx, c, "down2", 1000, 0.01, nil); return err },
		"Open":    func() error { _, err := Open(ctx, c, "down", nil); return err },
		"Load": func() error {
			_, err := Load(ctx, f, seqOf(keys("y", 10)), nil)
			return err
		},
	} {
		// A pooled connection the server closed a moment ago may still look open to the
		// client, which then reads EOF on it: that is the network error too.
		err := op()
		var ne net.Error
		if err == nil || !strings.HasPrefix(err.Error(), "redisfilter: ") || !(errors.As(err, &ne) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "refused")) {
			t.Errorf("%s on a dead server: err = %v; want a redisfilter error carrying the network error", what, err)
		}
	}
}

// TestTimeoutAndCancel: a server that stops answering gives a timeout error; a context that
// ends gives the context's error. What it tests is the client's side, against Redis only: bloomd
// has no CLIENT PAUSE to stall with.
func TestTimeoutAndCancel(t *testing.T) {
	s := redistest.New(t, nil)
	ctx := ctxT(t)
	slow := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, ReadTimeout: 150 * time.Millisecond, ContextTimeoutEnabled: true})
	t.Cleanup(func() { slow.Close() })
	f, err := New(ctx, slow, "slow", 1000, 0.01, nil)
	if err != nil {
		t.Fatal(err)
	}
	pause := func() {
		if _, err := s.Do("CLIENT", "PAUSE", "1500", "ALL"); err != nil {
			t.Fatal(err)
		}
	}

	pause()
	_, err = f.Add(ctx, []byte("x"))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !strings.Contains(err.Error(), `redisfilter: add "slow"`) {
		t.Errorf("Add on a paused server: err = %v; want a timeout", err)
	}
	if _, err := s.Do("CLIENT", "UNPAUSE"); err != nil {
		t.Fatal(err)
	}

	pause()
	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = f.Test(dctx, []byte("x"))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout()) {
		t.Errorf("Test past its context deadline: err = %v; want a deadline error", err)
	}
	s.Do("CLIENT", "UNPAUSE")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.AddMany(cctx, keys("x", 10)); !errors.Is(err, context.Canceled) {
		t.Errorf("AddMany with a canceled context: err = %v; want context.Canceled", err)
	}
	if _, err := Load(cctx, f, seqOf(keys("y", 10)), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with a canceled context: err = %v; want context.Canceled", err)
	}

	// After the failures the filter is intact and usable.
	if _, err := f.Add(ctx, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.Test(ctx, []byte("after")); err != nil || !ok {
		t.Fatalf("Test after recovery = %v, %v", ok, err)
	}
}

// TestConcurrentHandles: many goroutines with their own handles add disjoint keys to one filter;
// every key is found afterwards.
func TestConcurrentHandles(t *testing.T) {
	topologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		name := uniqueName(t)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := New(ctx, c, name, 5000, 0.01, &Options{PartBits: 8192})
				if err != nil {
					errs <- err
					return
				}
				for i, key := range keys("g"+strconv.Itoa(g), 100) {
					if i%2 == 0 {
						_, err = f.Add(ctx, key)
					} else {
						_, err = f.AddMany(ctx, [][]byte{key})
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		f, err := Open(ctx, c, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for g := range 8 {
			r, err := f.TestMany(ctx, keys("g"+strconv.Itoa(g), 100))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(formatBools(r), "0") {
				t.Fatalf("goroutine %d's keys missing: %s", g, formatBools(r))
			}
		}
	})
}

// TestDefaultSplit: a filter beyond one Redis string (2^32 bits) is split at MaxPartBits by
// default. Only its parameters are written here (no key is added, so no 512 MB string is made).
func TestDefaultSplit(t *testing.T) {
	topologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ctxT(t)
		name := uniqueName(t)
		f, err := New(ctx, c, name, 2_000_000_000, 0.01, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := int((f.M() + MaxPartBits - 1) / MaxPartBits); f.Parts() != want || want != 5 {
			t.Fatalf("%d bits in %d parts; want %d", f.M(), f.Parts(), want)
		}
		keys := f.Keys()
		for i := 0; i < len(keys); i += 2 {
			line, err := c.HGet(ctx, keys[i], "params").Result()
			if err != nil || !strings.Contains(line, "part="+strconv.Itoa(i/2)+" partbits=4294967296") {
				t.Fatalf("%s holds %q, %v", keys[i], line, err)
			}
			if n, _ := c.Exists(ctx, keys[i+1]).Result(); n != 0 {
				t.Fatalf("%s exists before any Add", keys[i+1])
			}
		}
		o, err := Open(ctx, c, name, nil)
		if err != nil || o.Parts() != 5 || o.M() != f.M() {
			t.Fatalf("Open of a split filter: %v", err)
		}
		if err := f.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
