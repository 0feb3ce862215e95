package server

import (
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
)

// migrateSteps are MIGRATE commands and the commands that check them, run on a source server
// against a target; TARGET and PORT stand for the target's host and port, PWPORT for a target
// with requirepass pw, DEADPORT for a port nothing listens on.
var migrateSteps = [][]string{
	{"SET", "a", "1"}, {"SET", "b", "2"}, {"SET", "c", "3"}, {"SET", "t", "x", "PX", "100000"},
	{"MIGRATE", "TARGET", "PORT", "nokey", "0", "1000"},
	{"MIGRATE", "TARGET", "PORT", "a", "0", "1000"},
	{"EXISTS", "a"},
	{"MIGRATE", "TARGET", "PORT", "b", "0", "1000", "COPY"},
	{"EXISTS", "b"},
	{"MIGRATE", "TARGET", "PORT", "b", "0", "1000"},
	{"EXISTS", "b"},
	{"MIGRATE", "TARGET", "PORT", "b", "0", "1000", "REPLACE", "COPY"},
	{"MIGRATE", "TARGET", "PORT", "", "0", "1000", "KEYS", "b", "c", "nokey", "t"},
	{"EXISTS", "b", "c", "t"},
	{"SET", "a", "1"},
	{"MIGRATE", "TARGET", "PORT", "a", "0", "1000", "KEYS", "a"},
	{"MIGRATE", "TARGET", "PORT", "", "0", "1000", "KEYS"},
	{"MIGRATE", "TARGET", "PORT", "", "0", "1000", "KEYS", "nokey"},
	{"MIGRATE", "TARGET", "PORT", "a", "0", "x"},
	{"MIGRATE", "TARGET", "PORT", "a", "x", "1000"},
	{"MIGRATE", "TARGET", "PORT", "a", "0", "1000", "FOO"},
	{"MIGRATE", "TARGET", "PORT", "a", "0", "1000", "AUTH"},
	{"MIGRATE", "TARGET", "PORT", "a", "0", "1000", "AUTH2", "u"},
	{"MIGRATE", "TARGET", "PORT", "a"},
	{"MIGRATE", "TARGET", "PWPORT", "a", "0", "1000"},
	{"MIGRATE", "TARGET", "PWPORT", "a", "0", "1000", "AUTH", "wrong"},
	{"MIGRATE", "TARGET", "PWPORT", "a", "0", "1000", "AUTH2", "default", "wrong"},
	{"MIGRATE", "TARGET", "PWPORT", "a", "0", "1000", "COPY", "AUTH", "pw"},
	{"MIGRATE", "TARGET", "PWPORT", "a", "0", "1000", "REPLACE", "AUTH2", "default", "pw"},
	{"EXISTS", "a"},
	{"SET", "a", "1"},
	{"MIGRATE", "TARGET", "DEADPORT", "a", "0", "1000"},
	{"MIGRATE", "TARGET", "PORT", "a", "-1", "0"},
	{"EXISTS", "a"},
	{"MULTI"}, {"MIGRATE", "TARGET", "PORT", "a", "0", "1000", "REPLACE"}, {"EXISTS", "a"}, {"EXEC"},
}

// runMigrateSteps runs migrateSteps on a source whose targets are fresh redis-servers, and
// returns each reply, then each target's keys.
func runMigrateSteps(t *testing.T, src string) []string {
	t.Helper()
	target := redistest.New(t, nil)
	pwTarget := redistest.New(t, &redistest.Options{Password: "pw"})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	_, port, _ := net.SplitHostPort(target.Addr)
	_, pwPort, _ := net.SplitHostPort(pwTarget.Addr)
	c := dial(t, src)
	var out []string
	for _, step := range migrateSteps {
		args := make([]string, len(step))
		for i, a := range step {
			switch a {
			case "TARGET":
				a = "127.0.0.1"
			case "PORT":
				a = port
			case "PWPORT":
				a = pwPort
			case "DEADPORT":
				a = fmt.Sprint(dead)
			}
			args[i] = a
		}
		out = append(out, strings.Join(step, " ")+" -> "+c.do(args...).String())
	}
	for _, tg := range []*redistest.Server{target, pwTarget} {
		keys, err := tg.Do("KEYS", "*")
		if err != nil {
			t.Fatal(err)
		}
		names := strings.Fields(keys)
		slices.Sort(names)
		out = append(out, "target keys: "+strings.Join(names, " "))
	}
	return out
}

// TestMigrateMatchesRedis runs the same MIGRATEs from a redis-server and from bloomd to fresh
// redis-servers: every reply (NOKEY, OK, the target's BUSYKEY and WRONGPASS passed on, the
// connection error, argument errors, COPY, REPLACE, KEYS, AUTH, AUTH2, inside MULTI) and what
// each target holds afterwards must be the same.
func TestMigrateMatchesRedis(t *testing.T) {
	forEachIOMode(t, func(t *testing.T) {
		rs := redistest.New(t, nil)
		want := runMigrateSteps(t, rs.Addr)
		got := runMigrateSteps(t, startServer(t, nil).addr())
		for i := range want {
			if i >= len(got) || got[i] != want[i] {
				t.Errorf("step %d:\nbloomd       %s\nredis-server %s", i, got[min(i, len(got)-1)], want[i])
			}
		}
	})
}

// TestMigrateBothWays moves every key with MIGRATE ... KEYS from a redis-server to bloomd, from
// bloomd to another redis-server, and from bloomd to bloomd: strings with and without expiry
// times and, with REDISBLOOM_SO, filters (one of them large enough to be streamed). Each
// target must then hold what the source held, and the source nothing.
func TestMigrateBothWays(t *testing.T) {
	args, filters := redisBloomArgs(t)
	src := redistest.New(t, &redistest.Options{Args: args})
	sc := dial(t, src.Addr)
	fillKeys(t, sc, "k:", filters)
	if filters {
		sc.do("BF.RESERVE", "k:big", "0.001", "6000000") // 10 MiB: streamed when bloomd sends it
		sc.do("BF.ADD", "k:big", "x")
	}
	want := clientState(t, sc)
	moveAll := func(from *rawClient, to string) {
		t.Helper()
		host, port, _ := net.SplitHostPort(to)
		cmd := []string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}
		for _, k := range from.do("KEYS", "*").Elems {
			cmd = append(cmd, string(k.Str))
		}
		if v := from.do(cmd...); v.Text() != "OK" {
			t.Fatalf("MIGRATE to %s: %v", to, v)
		}
		if v := from.do("DBSIZE"); v.Int != 0 {
			t.Fatalf("the source still holds %d keys", v.Int)
		}
	}
	b1 := startServer(t, nil)
	moveAll(sc, b1.addr())
	b1c := dial(t, b1.addr())
	compareMoved(t, "bloomd after MIGRATE from Redis", want, clientState(t, b1c))
	b2 := startServer(t, nil)
	moveAll(b1c, b2.addr())
	b2c := dial(t, b2.addr())
	compareMoved(t, "bloomd after MIGRATE from bloomd", want, clientState(t, b2c))
	back := redistest.New(t, &redistest.Options{Args: append(args, "--proto-max-bulk-len", "1gb")})
	moveAll(b2c, back.Addr)
	compareMoved(t, "Redis after MIGRATE from bloomd", want, clientState(t, dial(t, back.Addr)))
}

// compareMoved is compareStates for keys moved by MIGRATE, which sends a time to live: the
// expiry times may differ by the time the move took (at most two seconds here).
func compareMoved(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	split := func(m map[string]string) (map[string]string, map[string]int64) {
		rest, at := map[string]string{}, map[string]int64{}
		for k, v := range m {
			f := strings.SplitN(v, " ", 3)
			var e int64
			fmt.Sscanf(f[1], "expire=%d", &e)
			at[k] = e
			rest[k] = f[0] + " " + strings.Join(f[2:], " ")
		}
		return rest, at
	}
	w, wat := split(want)
	g, gat := split(got)
	compareStates(t, what, w, g)
	for k, e := range wat {
		if d := gat[k] - e; (e < 0) != (gat[k] < 0) || d < -2000 || d > 2000 {
			t.Errorf("%s: key %q expires at %d, want %d", what, k, gat[k], e)
		}
	}
}

// A gatedProxy forwards one way from its clients to target only once opened, and the other
// way at once: a target that does not read until the test says so.
type gatedProxy struct {
	ln   net.Listener
	open chan struct{}
	got  chan struct{} // closed once the first bytes arrived
	once sync.Once
}

func newGatedProxy(t *testing.T, target string) *gatedProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &gatedProxy{ln: ln, open: make(chan struct{}), got: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				return
			}
			go func() { io.Copy(c, up); c.Close() }()
			go func() {
				buf := make([]byte, 64<<10)
				n, err := c.Read(buf)
				p.once.Do(func() { close(p.got) })
				<-p.open
				if err == nil {
					up.Write(buf[:n])
					io.Copy(up, c)
				}
				up.Close()
			}()
		}
	}()
	return p
}

// TestMigrateHoldsWrites moves a filter of 12 MiB (streamed) through a target that reads
// nothing until told to: meanwhile a write to another key and a read of the filter are served,
// and an add to the filter waits. Once the target acknowledged, the filter is on the target with
// the adds made before the move, and the waiting add (and an EXEC that adds) ran after the move:
// they made a new filter on the source, and the target's copy does not have them. Nothing added
// is lost.
func TestMigrateHoldsWrites(t *testing.T) {
	forEachIOMode(t, func(t *testing.T) {
		target := startServer(t, nil)
		src := startServer(t, nil)
		c := dial(t, src.addr())
		c.do("BF.RESERVE", "f", "0.001", "7000000") // 12 MiB
		c.do("BF.ADD", "f", "before")
		proxy := newGatedProxy(t, target.addr())
		_, port, _ := net.SplitHostPort(proxy.ln.Addr().String())
		done := make(chan string, 1)
		go func() {
			m := dial(t, src.addr())
			done <- m.do("MIGRATE", "127.0.0.1", port, "f", "0", "10000").Text()
		}()
		select {
		case <-proxy.got:
		case <-time.After(10 * time.Second):
			t.Fatal("MIGRATE did not start sending")
		}
		other := dial(t, src.addr())
		if v := other.do("BF.ADD", "g", "x"); v.Int != 1 {
			t.Fatalf("a write to another key during the move: %v", v)
		}
		if v := other.do("BF.EXISTS", "f", "before"); v.Int != 1 {
			t.Fatalf("a read of the key being moved: %v", v)
		}
		held := dial(t, src.addr())
		held.send([]byte("BF.ADD"), []byte("f"), []byte("during"))
		heldReply := make(chan string, 1)
		go func() { _, v := held.read(); heldReply <- v.Text() }()
		tx := dial(t, src.addr())
		tx.do("MULTI")
		tx.do("BF.ADD", "f", "in-exec")
		tx.send([]byte("EXEC"))
		execReply := make(chan string, 1)
		go func() { _, v := tx.read(); execReply <- v.String() }()
		select {
		case r := <-heldReply:
			t.Fatalf("an add to the key being moved ran during the move: %s", r)
		case r := <-execReply:
			t.Fatalf("an EXEC adding to the key being moved ran during the move: %s", r)
		case <-time.After(100 * time.Millisecond):
		}
		close(proxy.open)
		if r := <-done; r != "OK" {
			t.Fatalf("MIGRATE: %s", r)
		}
		if r := <-heldReply; r != "1" {
			t.Fatalf("held add: %s", r)
		}
		if r := <-execReply; r != "[(integer) 1]" {
			t.Fatalf("held EXEC: %s", r)
		}
		tc := dial(t, target.addr())
		if v := tc.do("BF.EXISTS", "f", "before"); v.Int != 1 {
			t.Fatal("the target lacks the item added before the move")
		}
		if v := tc.do("BF.EXISTS", "f", "during"); v.Int != 0 {
			t.Fatal("the add held during the move reached the target's copy")
		}
		if v := c.do("BF.EXISTS", "f", "during"); v.Int != 1 {
			t.Fatal("the add held during the move is lost")
		}
		if v := tc.do("BF.EXISTS", "f", "in-exec"); v.Int != 0 {
			t.Fatal("the EXEC held during the move reached the target's copy")
		}
		if v := c.do("BF.CARD", "f"); v.Int != 2 {
			t.Fatalf("the source's new filter counts %d items", v.Int)
		}
	})
}
