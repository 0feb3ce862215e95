package server

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/resp"
)

// benchPipelined runs b.N commands made by mk over conns connections, depth commands per
// pipelined batch (redistest.PipelinedLoad), and reports commands per second. The client side
// allocates nothing per command, so the allocations reported are the server's.
func benchPipelined(b *testing.B, conns, depth int, mk func(i int) [][]byte) {
	s := startServer(b, nil)
	c := dial(b, s.addr())
	c.do("BF.RESERVE", "bf", "0.01", "10000000")
	b.ResetTimer()
	start := time.Now()
	n := redistest.PipelinedLoad(b, s.addr(), conns, depth, b.N, mk)
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "cmds/s")
}

func BenchmarkServerBFAdd(b *testing.B) {
	for _, depth := range []int{1, 16} {
		b.Run(fmt.Sprintf("P%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			benchPipelined(b, 50, depth, func(i int) [][]byte {
				return [][]byte{[]byte("BF.ADD"), []byte("bf"), []byte(strconv.Itoa(i * 7919))}
			})
		})
	}
}

func BenchmarkServerBFExists(b *testing.B) {
	for _, depth := range []int{1, 16} {
		b.Run(fmt.Sprintf("P%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			benchPipelined(b, 50, depth, func(i int) [][]byte {
				return [][]byte{[]byte("BF.EXISTS"), []byte("bf"), []byte(strconv.Itoa(i * 7919))}
			})
		})
	}
}

// TestHotPathAllocs checks that a pipelined batch of BF.ADD, BF.EXISTS, BF.MADD, BF.MEXISTS and
// BF.INSERT on an existing filter allocates nothing in the server: reading, lookup, the filter,
// and the replies.
func TestHotPathAllocs(t *testing.T) { hotPathAllocs(t, startServer(t, nil)) }

// TestHotPathAllocsCluster: in cluster mode, the routing of each command's key costs no
// allocation either.
func TestHotPathAllocsCluster(t *testing.T) {
	s := startClusterServer(t, nil)
	s.Exec([]byte("CLUSTER"), []byte("ADDSLOTSRANGE"), []byte("0"), []byte("16383"))
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.Contains(s.Exec([]byte("CLUSTER"), []byte("INFO")), []byte("cluster_state:ok")) {
		if time.Now().After(deadline) {
			t.Fatal("a node with every slot is not ok within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	hotPathAllocs(t, s)
}

// batchAllocFree runs the cmds commands encoded in in on one connection of s, as the event loop
// does (read, execute, flush), and requires every reply to succeed and a repeat of the batch to
// allocate nothing. It returns the connection, whose writes count the batch's flushes.
func batchAllocFree(t *testing.T, s *Server, in []byte, cmds int) *loopConn {
	t.Helper()
	rw := &loopConn{in: in}
	c := s.newConn(rw)
	defer c.close()
	run := func() {
		rw.off = 0
		rw.out.Reset()
		c.rd.Reset(rw)
		for range cmds {
			args, err := c.rd.ReadCommand()
			if err != nil {
				t.Fatal(err)
			}
			c.execute(args)
		}
		if err := c.flush(); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if bytes.Contains(rw.out.Bytes(), []byte("-")) {
		t.Fatalf("a command of the batch failed: %q", rw.out.Bytes())
	}
	if a := testing.AllocsPerRun(100, run); a != 0 {
		t.Fatalf("a batch of %d commands allocates %v times", cmds, a)
	}
	return rw
}

func hotPathAllocs(t *testing.T, s *Server) {
	s.Exec([]byte("BF.RESERVE"), []byte("bf"), []byte("0.01"), []byte("100000"))
	var in []byte
	cmds := 0
	for i := range 16 {
		in = resp.AppendCommand(in, []byte("BF.ADD"), []byte("bf"), []byte(strconv.Itoa(i)))
		in = resp.AppendCommand(in, []byte("bf.exists"), []byte("bf"), []byte(strconv.Itoa(i)))
		cmds += 2
	}
	var items [][]byte
	for i := range 10 {
		items = append(items, []byte(strconv.Itoa(100+i)))
	}
	for _, cmd := range [][][]byte{
		append([][]byte{[]byte("BF.MADD"), []byte("bf")}, items...),
		append([][]byte{[]byte("BF.MEXISTS"), []byte("bf")}, items...),
		append([][]byte{[]byte("BF.INSERT"), []byte("bf"), []byte("ITEMS")}, items...),
		append([][]byte{[]byte("BF.INSERT"), []byte("bf"), []byte("NOCREATE"), []byte("ITEMS")}, items[:3]...),
		append([][]byte{[]byte("BF.MEXISTS"), []byte("bf")}, items[:1]...),
	} {
		in = resp.AppendCommand(in, cmd...)
		cmds++
	}
	rw := batchAllocFree(t, s, in, cmds)
	if rw.writes != 102 { // run above, AllocsPerRun's warm-up run, and 100 runs
		t.Fatalf("%d writes for 102 batches; want one per batch", rw.writes)
	}
}

// loopConn is a net.Conn that serves the same input to each reader Reset and counts writes.
type loopConn struct {
	net.Conn
	in     []byte
	off    int
	out    bytes.Buffer
	writes int
}

func (l *loopConn) Read(p []byte) (int, error) {
	if l.off == len(l.in) {
		return 0, io.EOF
	}
	n := copy(p, l.in[l.off:])
	l.off += n
	return n, nil
}

func (l *loopConn) Write(p []byte) (int, error) { l.writes++; return l.out.Write(p) }
func (l *loopConn) Close() error                { return nil }
func (l *loopConn) RemoteAddr() net.Addr        { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (l *loopConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (l *loopConn) SetReadDeadline(time.Time) error {
	return nil
}

// TestLoopAllocs checks that an event loop serving pipelined BF.ADD, BF.EXISTS, BF.MADD,
// BF.MEXISTS and BF.INSERT (and preparing each batch's filter memory) allocates nothing per request (measured over the whole process; the client side allocates nothing).
func TestLoopAllocs(t *testing.T) {
	if !loopsSupported {
		t.Skip("no event loops on this system")
	}
	for _, m := range ioModes {
		if m.loops < 0 {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			defer func(ring, waiting bool) { useRing, useWaiting = ring, waiting }(useRing, useWaiting)
			useRing, useWaiting = m.ring, m.waiting
			testLoopAllocs(t)
		})
	}
}

func testLoopAllocs(t *testing.T) {
	s := startServer(t, func(c *Config) { c.EventLoops = 1 })
	s.Exec([]byte("BF.RESERVE"), []byte("bf"), []byte("0.01"), []byte("100000"))
	nc, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var batch []byte
	for i := range 16 {
		batch = resp.AppendCommand(batch, []byte("BF.ADD"), []byte("bf"), []byte(strconv.Itoa(i)))
		batch = resp.AppendCommand(batch, []byte("BF.EXISTS"), []byte("bf"), []byte(strconv.Itoa(i)))
	}
	items := make([][]byte, 10)
	for i := range items {
		items[i] = []byte(strconv.Itoa(100 + i))
	}
	for _, name := range []string{"BF.MADD", "BF.MEXISTS"} {
		batch = resp.AppendCommand(batch, append([][]byte{[]byte(name), []byte("bf")}, items...)...)
	}
	batch = resp.AppendCommand(batch, append([][]byte{[]byte("BF.INSERT"), []byte("bf"), []byte("ITEMS")}, items...)...)
	reply := make([]byte, 32*4+3*(5+10*4)) // 32 integers, 3 arrays of 10
	round := func(n int) {
		for range n {
			if _, err := nc.Write(batch); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(nc, reply); err != nil {
				t.Fatal(err)
			}
		}
	}
	round(100)
	if bytes.Contains(reply, []byte("-")) || reply[len(reply)-1] != '\n' {
		t.Fatalf("unexpected replies: %q", reply)
	}
	// The count is the whole process's, so timers and goroutines of other tests add to it, more
	// the slower the machine: the fewest of three tries is taken. An allocation per batch would
	// give at least 1000 in every try.
	fewest := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		round(1000)
		runtime.ReadMemStats(&after)
		fewest = min(fewest, after.Mallocs-before.Mallocs)
		if fewest <= 200 {
			return
		}
	}
	t.Fatalf("%d allocations for 35000 requests, in the best of three tries", fewest)
}
