package repl_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/resp"
)

// processCPU returns the CPU time (user + system) a process has used, from /proc.
func processCPU(tb testing.TB, pid string) time.Duration {
	tb.Helper()
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// BenchmarkPrimaryCPU measures what replicas cost a bloomd primary: CPU time of the primary's
// process per pipelined BF.ADD (50 connections, 16 commands per batch), with 0, 1 and 2 bloomd
// replicas attached, each server its own process. CPU time per command, unlike throughput, does
// not depend much on what else the machine runs.
//
//	go test -run '^$' -bench BenchmarkPrimaryCPU -benchtime 400000x -count 5 ./internal/repl
func BenchmarkPrimaryCPU(b *testing.B) {
	for _, n := range []int{0, 1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			primary := startBloomdB(b, "appendonly no")
			var replicas []*redistest.Server
			for range n {
				replicas = append(replicas, startBloomdB(b, "appendonly no", "replicaof "+strings.Replace(primary.Addr, ":", " ", 1)))
			}
			primary.Do("BF.RESERVE", "bf", "0.01", "10000000")
			for _, r := range replicas {
				for info(r, "master_link_status") != "up" {
					time.Sleep(10 * time.Millisecond)
				}
			}
			pid := info(primary, "process_id")
			const conns, depth, batches = 50, 16, 64
			enc := make([][]byte, batches)
			for i := range enc {
				for j := range depth {
					enc[i] = resp.AppendCommand(enc[i], []byte("BF.ADD"), []byte("bf"), []byte(strconv.Itoa((i*depth+j)*7919)))
				}
			}
			per := max(b.N/conns, depth)
			var wg sync.WaitGroup
			b.ResetTimer()
			cpu0, start := processCPU(b, pid), time.Now()
			for k := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					nc, err := net.Dial("tcp", primary.Addr)
					if err != nil {
						b.Error(err)
						return
					}
					defer nc.Close()
					buf := make([]byte, 4*depth)
					for i := 0; i < per; i += depth {
						if _, err := nc.Write(enc[(k+i/depth)%batches]); err != nil {
							b.Error(err)
							return
						}
						if _, err := io.ReadFull(nc, buf); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			el, cpu := time.Since(start), processCPU(b, pid)-cpu0
			b.StopTimer()
			cmds := float64(per * conns)
			b.ReportMetric(cmds/el.Seconds(), "cmds/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/cmds, "primary-cpu-ns/cmd")
		})
	}
}

// startBloomdB is startBloomd for benchmarks.
func startBloomdB(b *testing.B, extra ...string) *redistest.Server {
	b.Helper()
	return startBloomdTB(b, extra...)
}
