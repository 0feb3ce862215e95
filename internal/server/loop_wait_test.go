//go:build linux

package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/internal/uring"
)

// canWait skips the test where the kernel cannot make a waiting loop's ring.
func canWait(t *testing.T) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := uring.NewWaiting(8, 16, 1, 64)
	if err != nil {
		t.Skipf("io_uring cannot wait for multishot receives here: %v", err)
	}
	r.Close()
}

// waitingServer starts a server whose one event loop waits on io_uring, and returns once the
// loop does.
func waitingServer(t *testing.T, mod func(*Config)) *Server {
	t.Helper()
	canWait(t)
	defer func(old bool) { useWaiting = old }(useWaiting)
	useWaiting = true
	s := startServer(t, func(c *Config) {
		c.EventLoops = 1
		if mod != nil {
			mod(c)
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for !s.loops[0].waiting.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the event loop does not wait on io_uring")
		}
		time.Sleep(time.Millisecond)
	}
	return s
}

// pipelineClients runs clients that each send rounds of pipelined requests (BF.ADD of a new item
// named after run, BF.EXISTS, and an ECHO of extra bytes beside a number), check that every
// reply is theirs, in order, and close.
func pipelineClients(t *testing.T, addr, run string, clients, rounds, depth, extra int) {
	t.Helper()
	pad := strings.Repeat("x", extra)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		c := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.nc.Close()
			c.nc.SetDeadline(time.Now().Add(30 * time.Second))
			for r := range rounds {
				var b []byte
				for d := range depth {
					item := []byte(fmt.Sprintf("%s-c%d-r%d-d%d", run, i, r, d))
					b = resp.AppendCommand(b, []byte("BF.ADD"), []byte("bf"), item)
					b = resp.AppendCommand(b, []byte("BF.EXISTS"), []byte("bf"), item)
					b = resp.AppendCommand(b, []byte("ECHO"), []byte(strconv.Itoa(i*100000+r*100+d)+pad))
				}
				if _, err := c.nc.Write(b); err != nil {
					errs <- err
					return
				}
				for d := range depth {
					if v, err := c.rd.ReadReply(); err != nil || v.Int != 1 {
						errs <- fmt.Errorf("client %d: BF.ADD reply %v, %v", i, v, err)
						return
					}
					if v, err := c.rd.ReadReply(); err != nil || v.Int != 1 {
						errs <- fmt.Errorf("client %d: BF.EXISTS reply %v, %v", i, v, err)
						return
					}
					want := strconv.Itoa(i*100000+r*100+d) + pad
					if v, err := c.rd.ReadReply(); err != nil || string(v.Str) != want {
						errs <- fmt.Errorf("client %d: ECHO reply of %d bytes, %v; want %d bytes", i, len(v.Str), err, len(want))
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestWaitingFewBuffers runs pipelining clients, with requests of tens of kilobytes among
// small ones, against a waiting loop that has two provided buffers of 64 bytes: receives end
// for want of buffers (-ENOBUFS) and are armed again over and over, and every client still gets
// its own replies, in order.
func TestWaitingFewBuffers(t *testing.T) {
	defer func(n uint16, size int) { waitBufCount, waitBufSize = n, size }(waitBufCount, waitBufSize)
	waitBufCount, waitBufSize = 2, 64
	s := waitingServer(t, nil)
	s.Exec([]byte("BF.RESERVE"), []byte("bf"), []byte("0.001"), []byte("100000"))
	pipelineClients(t, s.addr(), "small", 16, 10, 8, 0)
	pipelineClients(t, s.addr(), "large", 4, 4, 4, 20000)
}

// TestWaitingSmallRing is TestWaitingFewBuffers with a ring of two entries and a completion
// queue of four: an iteration's sends, receives armed and cancellations take several
// submissions, and completions overflow the queue into the kernel's backlog.
func TestWaitingSmallRing(t *testing.T) {
	defer func(old, cq uint32) { ringEntries, waitCQ = old, cq }(ringEntries, waitCQ)
	ringEntries, waitCQ = 2, 4
	s := waitingServer(t, nil)
	s.Exec([]byte("BF.RESERVE"), []byte("bf"), []byte("0.001"), []byte("100000"))
	pipelineClients(t, s.addr(), "a", 24, 10, 8, 0)
}

// TestWaitingReconnects opens and closes connections while others pipeline, so that new
// connections get the descriptors of closed ones while the ring still has operations of the
// old ones: no reply reaches the wrong client, and every closed client leaves.
func TestWaitingReconnects(t *testing.T) {
	s := waitingServer(t, nil)
	s.Exec([]byte("BF.RESERVE"), []byte("bf"), []byte("0.001"), []byte("100000"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipelineClients(t, s.addr(), "a", 4, 50, 8, 0)
	}()
	for i := range 200 {
		nc, err := net.Dial("tcp", s.addr())
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		want := "short-lived " + strconv.Itoa(i)
		nc.Write(resp.AppendCommand(nil, []byte("ECHO"), []byte(want)))
		if i%2 == 0 {
			// Half leave without reading, their reply possibly still being sent.
			nc.Close()
			continue
		}
		v, err := resp.NewReader(nc).ReadReply()
		nc.Close()
		if err != nil || string(v.Str) != want {
			t.Fatalf("connection %d: %q, %v", i, v.Str, err)
		}
	}
	<-done
	c := dial(t, s.addr())
	deadline := time.Now().Add(5 * time.Second)
	for {
		v := c.do("CLIENT", "LIST")
		if n := strings.Count(string(v.Str), "\n"); n == 1 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%d clients listed after the others left:\n%s", n, v.Str)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWaitingFallback makes the waiting ring fail, as on a kernel without it: the loop serves
// in Go's poller instead, with its reads and writes batched through io_uring where it can.
func TestWaitingFallback(t *testing.T) {
	defer func(old func(uint32, uint32, uint16, int) (*uring.Ring, error), w bool) {
		newWaitingRing, useWaiting = old, w
	}(newWaitingRing, useWaiting)
	newWaitingRing = func(uint32, uint32, uint16, int) (*uring.Ring, error) {
		return nil, errors.New("no io_uring_setup flags for this test")
	}
	useWaiting = true
	s := startServer(t, func(c *Config) { c.EventLoops = 1 })
	s.Exec([]byte("BF.RESERVE"), []byte("bf"), []byte("0.001"), []byte("100000"))
	pipelineClients(t, s.addr(), "a", 8, 5, 8, 0)
	if s.loops[0].waiting.Load() {
		t.Fatal("the loop waits on a ring that failed")
	}
}

// TestRepliesBeforeClientCloses sends requests and closes the sending side at once, as `redis-cli
// < file` and netcat do: the server answers everything it received before it sees the end, as
// redis-server does.
func TestRepliesBeforeClientCloses(t *testing.T) {
	check := func(t *testing.T, addr string) {
		for i := range 20 {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			var b []byte
			for j := range 50 {
				b = resp.AppendCommand(b, []byte("ECHO"), []byte(strconv.Itoa(i*100+j)))
			}
			nc.Write(b)
			nc.(*net.TCPConn).CloseWrite()
			got, err := io.ReadAll(nc)
			nc.Close()
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			for j := range 50 {
				want = resp.AppendBulk(want, []byte(strconv.Itoa(i*100+j)))
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("round %d: got %q\nwant %q", i, got, want)
			}
		}
	}
	t.Run("redis-server", func(t *testing.T) { check(t, redistest.New(t, nil).Addr) })
	forEachIOMode(t, func(t *testing.T) { check(t, startServer(t, nil).addr()) })
}

// TestWaitingBusyScript runs a script past busy-reply-threshold on a waiting loop's connection
// while other connections of the loop come and go: the helper answers them (-BUSY, SCRIPT
// KILL) with system calls of its own, then the loop takes them back into its ring, those that
// connected meanwhile included, and serves them as before.
func TestWaitingBusyScript(t *testing.T) {
	s := waitingServer(t, nil)
	a, b := dial(t, s.addr()), dial(t, s.addr())
	b.do("CONFIG", "SET", "busy-reply-threshold", "50")
	a.send([]byte("EVAL"), []byte("while true do end"), []byte("0"))
	untilBusy(t, b)
	// Connections made and left while the helper serves the loop, whose descriptors new
	// connections then get.
	for range 5 {
		nc, err := net.Dial("tcp", s.addr())
		if err != nil {
			t.Fatal(err)
		}
		nc.Close()
	}
	c := dial(t, s.addr())
	if v := c.do("PING"); !strings.HasPrefix(v.Text(), "BUSY") {
		t.Fatalf("PING during the script: %v", v)
	}
	if v := c.do("SCRIPT", "KILL"); v.Text() != "OK" {
		t.Fatalf("SCRIPT KILL: %v", v)
	}
	if _, v := a.read(); !v.IsError() {
		t.Fatalf("the killed script's reply: %v", v)
	}
	for i, cl := range []*rawClient{a, b, c, dial(t, s.addr())} {
		for j := range 3 {
			want := fmt.Sprintf("after %d %d", i, j)
			if v := cl.do("ECHO", want); string(v.Str) != want {
				t.Fatalf("client %d after the script: %v", i, v)
			}
		}
	}
	if !s.loops[0].waiting.Load() {
		t.Fatal("the loop no longer waits on its ring")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		v := b.do("CLIENT", "LIST")
		if n := strings.Count(string(v.Str), "\n"); n == 4 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%d clients listed, want 4:\n%s", n, v.Str)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
