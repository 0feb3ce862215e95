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
