package server

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
)

// BenchmarkReplicatedBFAdd measures pipelined BF.ADD on a primary with 0, 1 and 2 replicas
// attached (all in this process, on loopback), 50 connections, 16 commands per batch; it
// reports commands per second and, with replicas, how long the slowest replica took to catch
// up after the last reply.
//
//	go test -run '^$' -bench BenchmarkReplicatedBFAdd -benchtime 200000x -count 5 ./internal/server
func BenchmarkReplicatedBFAdd(b *testing.B) {
	for _, n := range []int{0, 1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			ps := startServer(b, func(c *Config) { c.Dir = dir })
			p := dial(b, ps.addr())
			p.do("BF.RESERVE", "bf", "0.01", "10000000")
			var replicas []*rawClient
			for range n {
				rdir := b.TempDir()
				rs := startServer(b, func(c *Config) { c.Dir = rdir })
				r := dial(b, rs.addr())
				r.do("REPLICAOF", "127.0.0.1", portOf(ps))
				replicas = append(replicas, r)
			}
			for _, r := range replicas {
				waitSynced(b, p, r)
			}
			b.ResetTimer()
			start := time.Now()
			n := redistest.PipelinedLoad(b, ps.addr(), 50, 16, b.N, func(i int) [][]byte {
				return [][]byte{[]byte("BF.ADD"), []byte("bf"), []byte(strconv.Itoa(i * 7919))}
			})
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(n)/el.Seconds(), "cmds/s")
			if n > 0 {
				caught := time.Now()
				for _, r := range replicas {
					waitSynced(b, p, r)
				}
				b.ReportMetric(float64(time.Since(caught).Microseconds())/1000, "catchup-ms")
			}
		})
	}
}
