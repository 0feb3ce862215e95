//go:build linux

package server

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/bloomd/bloom/internal/resp"
)

// TestRingSmall runs many pipelining clients at once against a loop whose ring holds two
// operations, so that an iteration's reads and writes take several submissions each: every
// client gets its own replies, in order.
func TestRingSmall(t *testing.T) {
	defer func(old uint32, ring, waiting bool) { ringEntries, useRing, useWaiting = old, ring, waiting }(ringEntries, useRing, useWaiting)
	ringEntries, useRing, useWaiting = 2, true, false
	s := startServer(t, func(c *Config) { c.EventLoops = 1 })
	if s.loops[0].ring == nil {
		t.Skip("io_uring unavailable here")
	}
	const clients, rounds, depth = 24, 20, 8
	s.Exec([]byte("BF.RESERVE"), []byte("bf"), []byte("0.001"), []byte("100000"))
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		c := dial(t, s.addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				for d := range depth {
					item := []byte(fmt.Sprintf("c%d-r%d-d%d", i, r, d))
					b := resp.AppendCommand(nil, []byte("BF.ADD"), []byte("bf"), item)
					b = resp.AppendCommand(b, []byte("BF.EXISTS"), []byte("bf"), item)
					b = resp.AppendCommand(b, []byte("ECHO"), []byte(strconv.Itoa(i*1000+r*10+d)))
					if _, err := c.nc.Write(b); err != nil {
						errs <- err
						return
					}
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
					want := strconv.Itoa(i*1000 + r*10 + d)
					if v, err := c.rd.ReadReply(); err != nil || string(v.Str) != want {
						errs <- fmt.Errorf("client %d: ECHO reply %q, %v; want %q", i, v.Str, err, want)
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
