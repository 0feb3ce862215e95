package server

import (
	"strconv"
	"testing"

	"github.com/bloomd/bloom/internal/resp"
)

// BenchmarkExecuteBFAdd measures the server's own work per BF.ADD, without a network: reading
// from a buffer, lookup, accounting (the per-command statistics), the filter and the reply,
// in batches of 32 as a pipelining client sends them. It is the measure of what the hot path's
// bookkeeping costs (compare with the commit before the statistics; see BENCHMARKS.md).
func BenchmarkExecuteBFAdd(b *testing.B) { benchmarkExecuteBFAdd(b, nil) }

// BenchmarkExecuteRestrictedBFAdd is BenchmarkExecuteBFAdd run by a user with three key
// patterns, the last one matching: the ACL check's ordinary worst case, against the default
// user's one flag test.
func BenchmarkExecuteRestrictedBFAdd(b *testing.B) {
	benchmarkExecuteBFAdd(b, []string{"on", "nopass", "-@all", "+@bloom", "~jobs:*", "%R~urls:*", "%W~bf*"})
}

func benchmarkExecuteBFAdd(b *testing.B, rules []string) {
	s := startServer(b, nil)
	s.Exec([]byte("BF.RESERVE"), []byte("bf"), []byte("0.01"), []byte("10000000"))
	var in []byte
	for i := range 32 {
		in = resp.AppendCommand(in, []byte("BF.ADD"), []byte("bf"), []byte(strconv.Itoa(i*7919)))
	}
	rw := &loopConn{in: in}
	c := s.newConn(rw)
	defer c.close()
	if rules != nil {
		if err := s.acl.users.SetUser("bench", rules); err != nil {
			b.Fatal(err)
		}
		c.acct.Store(s.acl.users.Get("bench"))
	}
	executeBatches(b, c, rw)
}

// BenchmarkExecuteCFAddNX is BenchmarkExecuteBFAdd for CF.ADDNX on an existing cuckoo filter
// (whose path reads cf-max-expansions on every command); ADDNX, since CF.ADD of the same items
// again and again would fill their buckets.
func BenchmarkExecuteCFAddNX(b *testing.B) {
	s := startServer(b, nil)
	s.Exec([]byte("CF.RESERVE"), []byte("cf"), []byte("10000000"))
	var in []byte
	for i := range 32 {
		in = resp.AppendCommand(in, []byte("CF.ADDNX"), []byte("cf"), []byte(strconv.Itoa(i*7919)))
	}
	rw := &loopConn{in: in}
	c := s.newConn(rw)
	defer c.close()
	executeBatches(b, c, rw)
}

// executeBatches runs the 32 commands of rw's input on c over and over, b.N commands in all,
// as the server's read loop would: read, execute, and flush the replies once per batch.
func executeBatches(b *testing.B, c *Conn, rw *loopConn) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 32 {
		rw.off = 0
		rw.out.Reset()
		c.rd.Reset(rw)
		for range 32 {
			args, err := c.rd.ReadCommand()
			if err != nil {
				b.Fatal(err)
			}
			c.execute(args)
		}
		if err := c.flush(); err != nil {
			b.Fatal(err)
		}
	}
}
