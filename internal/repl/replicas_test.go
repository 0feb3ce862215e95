package repl_test

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A proxy stands between a replica and its primary: it forwards both ways, and the test can
// hold what the primary sends (the replica then sees nothing new) and cut the connections (the
// replica reconnects through it).
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cond   *sync.Cond
	held   bool
	conns  []net.Conn
	// holdAfter, when positive, makes the proxy hold once that many bytes of the primary's
	// passed; waiting counts the forwarders blocked by a hold.
	holdAfter int64
	waiting   int
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			// A small receive buffer: a hold stops the primary's writer soon, not after
			// the tens of megabytes that loopback's buffers can take.
			up.(*net.TCPConn).SetReadBuffer(64 << 10)
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go p.forward(c, up, false)
			go p.forward(up, c, true)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
		p.Release()
	})
	return p
}

// forward copies from src to dst; what comes from the primary waits while the proxy holds.
func (p *proxy) forward(src, dst net.Conn, fromPrimary bool) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if fromPrimary {
				p.mu.Lock()
				for p.held {
					p.waiting++
					p.cond.Wait()
					p.waiting--
				}
				if p.holdAfter > 0 {
					if p.holdAfter -= int64(n); p.holdAfter <= 0 {
						p.held, p.holdAfter = true, 0
					}
				}
				p.mu.Unlock()
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// port returns the port the replica is to follow.
func (p *proxy) port() string { return strconv.Itoa(p.ln.Addr().(*net.TCPAddr).Port) }

// Hold keeps what the primary sends from now on from reaching the replica.
func (p *proxy) Hold() { p.mu.Lock(); p.held = true; p.mu.Unlock() }

// HoldAfter lets n more bytes from the primary through, then holds.
func (p *proxy) HoldAfter(n int64) { p.mu.Lock(); p.holdAfter = n; p.mu.Unlock() }

// Holding reports whether what the primary sends is waiting for Release.
func (p *proxy) Holding() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.waiting > 0 }

// Release lets it through again.
func (p *proxy) Release() { p.mu.Lock(); p.held = false; p.cond.Broadcast(); p.mu.Unlock() }

// Cut closes every connection; what was held is lost.
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A pair is a primary and its replica, both redis-server or both bloomd, the replica following
// through a proxy.
type pair struct {
	kind    string
	primary *redistest.Server
	replica *redistest.Server
	proxy   *proxy
	pc, rc  *redis.Client
	ctx     context.Context
	t       *testing.T
}

// forEachKind runs test on a Redis pair (redis-server 7.0, the reference) and on a bloomd pair,
// each primary started with the given redis.conf lines: the same steps must give the same
// outcome on both.
func forEachKind(t *testing.T, primaryConf []string, test func(t *testing.T, p *pair)) {
	for _, kind := range []string{"redis", "bloomd"} {
		t.Run(kind, func(t *testing.T) {
			redistest.Require(t)
			p := &pair{kind: kind, ctx: context.Background(), t: t}
			if kind == "redis" {
				var args []string
				for _, l := range primaryConf {
					f := strings.Fields(l)
					args = append(args, "--"+f[0])
					args = append(args, f[1:]...)
				}
				p.primary = redistest.New(t, &redistest.Options{Args: args})
				p.replica = redistest.New(t, nil)
			} else {
				p.primary = startBloomd(t, primaryConf...)
				p.replica = startBloomd(t)
			}
			p.proxy = startProxy(t, p.primary.Addr)
			if _, err := p.replica.Do("REPLICAOF", "127.0.0.1", p.proxy.port()); err != nil {
				t.Fatal(err)
			}
			p.pc = redis.NewClient(&redis.Options{Addr: p.primary.Addr, Protocol: 2})
			p.rc = redis.NewClient(&redis.Options{Addr: p.replica.Addr, Protocol: 2})
			t.Cleanup(func() { p.pc.Close(); p.rc.Close() })
			p.synced()
			test(t, p)
		})
	}
}

// synced waits until the replica has applied everything the primary sent.
func (p *pair) synced() {
	p.t.Helper()
	eventually(p.t, 20*time.Second, p.kind+" replica in sync", func() bool {
		return info(p.replica, "master_link_status") == "up" && info(p.replica, "slave_repl_offset") == info(p.primary, "master_repl_offset")
	})
}

// do runs a command on c and fails the test on an error reply.
func (p *pair) do(c *redis.Client, args ...any) any {
	p.t.Helper()
	v, err := c.Do(p.ctx, args...).Result()
	if err != nil && err != redis.Nil {
		p.t.Fatalf("%s %v: %v", p.kind, args, err)
	}
	return v
}

// TestReplicaHidesExpiredKeys follows Redis 7.0's expireIfNeeded on replicas: a replica whose
// primary has not yet sent the DEL of an expired key answers reads of it as if it were gone, but
// keeps it (DBSIZE counts it), and the primary's stream still finds it: a PERSIST the primary
// applied before the key's time, arriving late, makes it live again on the replica. The
// replica's link is held by a proxy to make the primary's writes arrive late.
func TestReplicaHidesExpiredKeys(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, p *pair) {
		const ttl = 3 * time.Second
		start := time.Now()
		p.do(p.pc, "SET", "k", "v", "PX", ttl.Milliseconds())
		p.do(p.pc, "SET", "other", "1")
		if p.kind == "bloomd" {
			p.do(p.pc, "BF.RESERVE", "f", "0.01", "1234")
			p.do(p.pc, "BF.ADD", "f", "a")
			p.do(p.pc, "PEXPIRE", "f", ttl.Milliseconds())
		}
		p.synced()
		p.proxy.Hold()
		if n := p.do(p.pc, "PERSIST", "k"); n != int64(1) {
			t.Fatalf("PERSIST on the primary: %v (the machine took longer than %v)", n, ttl)
		}
		if p.kind == "bloomd" {
			p.do(p.pc, "BF.ADD", "f", "b")
			p.do(p.pc, "PERSIST", "f")
		}
		time.Sleep(time.Until(start.Add(ttl + 500*time.Millisecond)))

		// The replica's clock has passed the key's time; the primary's PERSIST is held.
		for _, c := range [][]any{{"EXISTS", "k"}, {"TTL", "k"}, {"GET", "k"}, {"DBSIZE"}, {"KEYS", "*"}, {"EXISTS", "other"}} {
			want := map[string]any{"EXISTS": int64(0), "TTL": int64(-2), "GET": nil, "DBSIZE": int64(2), "KEYS": []any{"other"}}[c[0].(string)]
			if c[0] == "EXISTS" && c[1] == "other" {
				want = int64(1)
			}
			if p.kind == "bloomd" && c[0] == "DBSIZE" {
				want = int64(3)
			}
			if got := p.do(p.rc, c...); fmtAny(got) != fmtAny(want) {
				t.Errorf("%s on the replica after the key's time: %v, want %v", c, fmtAny(got), fmtAny(want))
			}
		}
		if p.kind == "bloomd" {
			for _, c := range [][]any{{"BF.EXISTS", "f", "a"}, {"EXISTS", "f"}} {
				if got := p.do(p.rc, c...); got != int64(0) {
					t.Errorf("%v on the replica after the filter's time: %v, want 0", c, got)
				}
			}
		}

		p.proxy.Release()
		p.synced()
		for _, c := range [][]any{{"EXISTS", "k"}, {"TTL", "k"}, {"GET", "k"}} {
			want := map[string]any{"EXISTS": int64(1), "TTL": int64(-1), "GET": "v"}[c[0].(string)]
			if got := p.do(p.rc, c...); fmtAny(got) != fmtAny(want) {
				t.Errorf("%v on the replica once the primary's PERSIST arrived: %v, want %v", c, fmtAny(got), fmtAny(want))
			}
		}
		if p.kind == "bloomd" {
			for _, c := range [][]any{{"BF.EXISTS", "f", "a"}, {"BF.EXISTS", "f", "b"}, {"TTL", "f"}} {
				want := map[string]int64{"BF.EXISTS": 1, "TTL": -1}[c[0].(string)]
				if got := p.do(p.rc, c...); got != want {
					t.Errorf("%v on the replica once the primary's writes arrived: %v, want %v", c, got, want)
				}
			}
			if got := p.do(p.rc, "BF.INFO", "f", "CAPACITY"); fmtAny(got) != "[1234]" && fmtAny(got) != "1234" {
				t.Errorf("the replica's filter after the stream's BF.ADD has capacity %v, not its own 1234", fmtAny(got))
			}
		}
	})
}

func fmtAny(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = fmtAny(x)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return "?"
}

// TestPublishReachesReplicas publishes on a primary: a subscriber of its replica receives the
// message, as Redis propagates PUBLISH to replicas, and the primary's append-only file does not
// record it (Redis propagates PUBLISH to replicas only).
func TestPublishReachesReplicas(t *testing.T) {
	forEachKind(t, []string{"appendonly yes"}, func(t *testing.T, p *pair) {
		sub := p.rc.Subscribe(p.ctx, "news")
		defer sub.Close()
		if _, err := sub.Receive(p.ctx); err != nil {
			t.Fatal(err)
		}
		if n := p.do(p.pc, "PUBLISH", "news", "hello"); n != int64(0) {
			t.Errorf("PUBLISH on the primary counted %v receivers, want 0 (its own subscribers only)", n)
		}
		ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
		defer cancel()
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("the replica's subscriber got no message: %v", err)
		}
		if msg.Channel != "news" || msg.Payload != "hello" {
			t.Errorf("the replica's subscriber got %q on %q", msg.Payload, msg.Channel)
		}
		p.do(p.pc, "SET", "marker-after-the-message", "1")
		p.synced()
		var logged, published bool
		filepath.WalkDir(p.primary.Dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".aof") {
				return nil
			}
			data, _ := os.ReadFile(path)
			logged = logged || strings.Contains(string(data), "marker-after-the-message")
			published = published || strings.Contains(strings.ToLower(string(data)), "$7\r\npublish\r\n")
			return nil
		})
		if !logged {
			t.Fatal("the primary's append-only file does not hold the write after PUBLISH")
		}
		if published {
			t.Error("the primary's append-only file records PUBLISH")
		}
	})
}

// TestBacklogResizeKeepsPartialResync changes repl-backlog-size on the primary while its
// replica has missed writes made before the change: when the replica reconnects it continues
// with a partial sync, as with Redis 7.0, which keeps the backlog's contents when it is resized
// (bloomd used to empty it, forcing a full sync).
func TestBacklogResizeKeepsPartialResync(t *testing.T) {
	forEachKind(t, nil, func(t *testing.T, p *pair) {
		p.proxy.Hold()
		for i := range 100 {
			p.do(p.pc, "SET", "before-"+strconv.Itoa(i), strings.Repeat("v", 100))
		}
		p.do(p.pc, "CONFIG", "SET", "repl-backlog-size", "2mb")
		for i := range 100 {
			p.do(p.pc, "SET", "after-"+strconv.Itoa(i), strings.Repeat("v", 100))
		}
		p.proxy.Cut()
		p.proxy.Release()
		p.synced()
		if full, partial := info(p.primary, "sync_full"), info(p.primary, "sync_partial_ok"); full != "1" || partial != "1" {
			t.Errorf("after the resize and a reconnection: sync_full %s, sync_partial_ok %s; want 1 and 1", full, partial)
		}
		if got := p.do(p.rc, "EXISTS", "before-0", "before-99", "after-99"); got != int64(3) {
			t.Errorf("the replica has %v of the 3 keys checked", got)
		}
		if got := info(p.primary, "repl_backlog_size"); got != "2097152" {
			t.Errorf("repl_backlog_size %s, want 2097152", got)
		}
	})
}

// TestHugeBacklogSize sets repl-backlog-size to 500gb, which Redis accepts: the backlog grows
// as the stream fills it (bloomd used to allocate it whole, and died), INFO reports the size
// set, the history and the memory it holds.
func TestHugeBacklogSize(t *testing.T) {
	forEachKind(t, []string{"appendonly no"}, func(t *testing.T, p *pair) {
		if got := p.do(p.pc, "CONFIG", "SET", "repl-backlog-size", "500gb"); got != "OK" {
			t.Fatalf("CONFIG SET repl-backlog-size 500gb: %v", got)
		}
		if got := p.do(p.pc, "PING"); got != "PONG" {
			t.Fatalf("PING after the resize: %v", got)
		}
		before := info(p.primary, "repl_backlog_histlen")
		for i := range 2000 {
			p.do(p.pc, "SET", "k"+strconv.Itoa(i%100), strings.Repeat("v", 1000))
		}
		p.synced()
		if got := info(p.primary, "repl_backlog_size"); got != "536870912000" {
			t.Errorf("repl_backlog_size %s, want 536870912000", got)
		}
		b, _ := strconv.ParseInt(before, 10, 64)
		h, _ := strconv.ParseInt(info(p.primary, "repl_backlog_histlen"), 10, 64)
		if h-b < 2000*1000 {
			t.Errorf("repl_backlog_histlen grew by %d after 2 MB of writes", h-b)
		}
		if p.kind == "bloomd" {
			mem, _ := strconv.ParseInt(info(p.primary, "mem_replication_backlog"), 10, 64)
			if mem < h || mem > h+1<<20 {
				t.Errorf("mem_replication_backlog %d for a history of %d bytes", mem, h)
			}
			if rss := residentBytes(t, p.primary); rss > 512<<20 {
				t.Errorf("resident memory %d MiB with a 500gb backlog holding %d bytes", rss>>20, h)
			}
		}
	})
}
