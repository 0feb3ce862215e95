package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/rdb"
	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/skipped"
)

func TestMain(m *testing.M) { skipped.Main(m) }

// counting dials through net.Dialer and counts the connections made.
type counting struct{ n atomic.Int32 }

func (c *counting) dial(addr string, timeout time.Duration) (net.Conn, error) {
	c.n.Add(1)
	return net.DialTimeout("tcp", addr, timeout)
}

func stringKey(t *testing.T, name, value string, ttl int64) Key {
	t.Helper()
	p, err := rdb.DumpString([]byte(value), nil)
	if err != nil {
		t.Fatal(err)
	}
	return Key{Name: []byte(name), TTL: func() int64 { return ttl }, Open: func() (Payload, error) { return Bytes(p), nil }}
}

// TestPoolAgainstRedis moves string keys into a real redis-server: one connection serves
// MIGRATEs to the same target (SELECT sent once per database), a key whose time has passed is
// left out, a refused key's error is the target's (BUSYKEY) while the others move, REPLACE
// replaces, and an idle connection is closed after IdleClose.
func TestPoolAgainstRedis(t *testing.T) {
	rs := redistest.New(t, nil)
	var d counting
	p := NewPool(d.dial)
	defer p.Close()
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	req := Request{Addr: rs.Addr, Timeout: 5 * time.Second}
	res, err := p.Migrate(req, []Key{stringKey(t, "a", "1", 0), stringKey(t, "gone", "x", -1), stringKey(t, "b", "2", 100000)})
	if err != nil || res.Reply != "" || fmt.Sprint(res.Moved) != "[0 2]" || res.Sent != 2 {
		t.Fatalf("first: %+v %v", res, err)
	}
	if v, _ := rs.Do("GET", "a"); v != "1" {
		t.Fatalf("a = %q", v)
	}
	if v, _ := rs.Do("EXISTS", "gone"); v != "0" {
		t.Fatal("an expired key was sent")
	}
	if v, _ := rs.Do("PTTL", "b"); v == "-1" || v == "-2" {
		t.Fatalf("b's TTL: %s", v)
	}
	res, _ = p.Migrate(req, []Key{stringKey(t, "a", "3", 0), stringKey(t, "c", "4", 0)})
	if res.Reply != "ERR Target instance replied with error: BUSYKEY Target key name already exists." || fmt.Sprint(res.Moved) != "[1]" {
		t.Fatalf("a busy key: %+v", res)
	}
	req.Replace = true
	req.DB = 3
	res, _ = p.Migrate(req, []Key{stringKey(t, "a", "5", 0)})
	if res.Reply != "" || len(res.Moved) != 1 {
		t.Fatalf("REPLACE into db 3: %+v", res)
	}
	if d.n.Load() != 1 || p.Cached() != 1 {
		t.Fatalf("%d connections made, %d cached; want one", d.n.Load(), p.Cached())
	}
	if v, _ := rs.Do("INFO", "keyspace"); !strings.Contains(v, "db3:keys=1") {
		t.Fatalf("keyspace %q", v)
	}
	now = now.Add(IdleClose - time.Second)
	p.CloseIdle()
	if p.Cached() != 1 {
		t.Fatal("closed before IdleClose")
	}
	now = now.Add(2 * time.Second)
	p.CloseIdle()
	if p.Cached() != 0 {
		t.Fatal("not closed after IdleClose")
	}
}

// TestMigrateRetriesOnce: a cached connection that the target closed (CLIENT KILL) is replaced
// by a new one and the MIGRATE succeeds, as in Redis; a target that accepts and never answers
// gives the read error after the timeout, without a second try (a timeout is not retried); a
// refused connection and a host that does not resolve give Redis's errors.
func TestMigrateRetriesOnce(t *testing.T) {
	rs := redistest.New(t, nil)
	var d counting
	p := NewPool(d.dial)
	defer p.Close()
	req := Request{Addr: rs.Addr, Timeout: 5 * time.Second}
	if res, _ := p.Migrate(req, []Key{stringKey(t, "a", "1", 0)}); res.Reply != "" {
		t.Fatal(res.Reply)
	}
	if _, err := rs.Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the kill reaches this side's socket
	if res, _ := p.Migrate(req, []Key{stringKey(t, "b", "2", 0)}); res.Reply != "" || len(res.Moved) != 1 {
		t.Fatalf("after the target closed the cached connection: %+v", res)
	}
	if d.n.Load() != 2 {
		t.Fatalf("%d connections made, want 2", d.n.Load())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	var conns sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conns.Add(1)
			go func() { defer conns.Done(); io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	res, _ := p.Migrate(Request{Addr: ln.Addr().String(), Timeout: 200 * time.Millisecond}, []Key{stringKey(t, "a", "1", 0)})
	if res.Reply != ErrRead || accepted.Load() != 1 {
		t.Fatalf("a silent target: %+v, %d connections", res, accepted.Load())
	}
	closedAddr := ln.Addr().String()
	ln.Close()
	// A refused connection is a failed write, as Redis finds it; a name that does not resolve
	// is a failed connection.
	if res, _ := p.Migrate(Request{Addr: closedAddr, Timeout: time.Second}, []Key{stringKey(t, "a", "1", 0)}); res.Reply != ErrWrite {
		t.Fatalf("no server: %+v", res)
	}
	if res, _ := p.Migrate(Request{Addr: "no-such-host.invalid:6379", Timeout: time.Second}, []Key{stringKey(t, "a", "1", 0)}); res.Reply != ErrConnect {
		t.Fatalf("no such host: %+v", res)
	}
}

// TestMigrateAuth: AUTH and AUTH2 go first; a refused login is the error of every key, and no
// key moves.
func TestMigrateAuth(t *testing.T) {
	rs := redistest.New(t, &redistest.Options{Password: "pw"})
	p := NewPool(new(counting).dial)
	defer p.Close()
	req := Request{Addr: rs.Addr, Timeout: 5 * time.Second, Auth: true, Password: "wrong"}
	res, _ := p.Migrate(req, []Key{stringKey(t, "a", "1", 0), stringKey(t, "b", "1", 0)})
	if !strings.HasPrefix(res.Reply, "ERR Target instance replied with error: WRONGPASS") || len(res.Moved) != 0 {
		t.Fatalf("wrong password: %+v", res)
	}
	req.Password = "pw"
	if res, _ := p.Migrate(req, []Key{stringKey(t, "a", "1", 0)}); res.Reply != "" {
		t.Fatal(res.Reply)
	}
	req.Username = "default"
	if res, _ := p.Migrate(req, []Key{stringKey(t, "b", "1", 0)}); res.Reply != "" {
		t.Fatal(res.Reply)
	}
}

// TestPayloadStreams: a payload written by its WriteTo in pieces reaches the target whole; one
// whose writer fails, or writes another length than it announced, is an error of Migrate, not
// the target's, and the connection is not kept.
func TestPayloadStreams(t *testing.T) {
	rs := redistest.New(t, nil)
	p := NewPool(new(counting).dial)
	defer p.Close()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	payload, _ := rdb.DumpString(big, &rdb.WriterOptions{NoCompression: true})
	k := Key{Name: []byte("big"), Open: func() (Payload, error) {
		return Payload{Len: int64(len(payload)), WriteTo: func(w io.Writer) (int64, error) {
			var n int64
			for off := 0; off < len(payload); off += 1000 {
				m, err := w.Write(payload[off:min(off+1000, len(payload))])
				n += int64(m)
				if err != nil {
					return n, err
				}
			}
			return n, nil
		}}, nil
	}}
	req := Request{Addr: rs.Addr, Timeout: 5 * time.Second}
	if res, err := p.Migrate(req, []Key{k}); err != nil || res.Reply != "" {
		t.Fatalf("%+v %v", res, err)
	}
	if v, _ := rs.Do("STRLEN", "big"); v != fmt.Sprint(len(big)) {
		t.Fatalf("STRLEN %s", v)
	}
	boom := errors.New("boom")
	bad := Key{Name: []byte("bad"), Open: func() (Payload, error) {
		return Payload{Len: 10, WriteTo: func(w io.Writer) (int64, error) { return 0, boom }}, nil
	}}
	if _, err := p.Migrate(req, []Key{bad}); !errors.Is(err, boom) {
		t.Fatalf("a failing payload: %v", err)
	}
	short := Key{Name: []byte("short"), Open: func() (Payload, error) {
		return Payload{Len: 10, WriteTo: func(w io.Writer) (int64, error) { return 3, nil }}, nil
	}}
	if _, err := p.Migrate(req, []Key{short}); err == nil {
		t.Fatal("a payload shorter than announced")
	}
	if p.Cached() != 0 {
		t.Fatal("a connection left in the middle of a command was cached")
	}
	if v, _ := rs.Do("PING"); v != "PONG" {
		t.Fatal(v)
	}
}
