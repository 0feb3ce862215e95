package repl_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
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
			b.ResetTimer()
			cpu0, start := processCPU(b, pid), time.Now()
			n := redistest.PipelinedLoad(b, primary.Addr, 50, 16, b.N, func(i int) [][]byte {
				return [][]byte{[]byte("BF.ADD"), []byte("bf"), []byte(strconv.Itoa(i * 7919))}
			})
			el, cpu := time.Since(start), processCPU(b, pid)-cpu0
			b.StopTimer()
			cmds := float64(n)
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

// BenchmarkReplicationLag measures replication lag under load: while redis-benchmark sends
// pipelined BF.ADD to a bloomd primary (50 connections, 16 per batch), a probe client adds an
// item and waits with WAIT 1 0 until the replica acknowledged it, every 10 ms; it reports the
// probe's p50 and p99 time from sending the add to WAIT's reply (the lag plus one round trip for
// the acknowledgement), and the load's throughput is redis-benchmark's own.
//
//	go test -run '^$' -bench BenchmarkReplicationLag -benchtime 300x ./internal/repl
func BenchmarkReplicationLag(b *testing.B) {
	rb, err := exec.LookPath("redis-benchmark")
	if err != nil {
		b.Skip("redis-benchmark is not installed (apt-get install redis-tools)")
	}
	primary := startBloomdB(b, "appendonly no")
	replica := startBloomdB(b, "appendonly no", "replicaof "+strings.Replace(primary.Addr, ":", " ", 1))
	primary.Do("BF.RESERVE", "bf", "0.01", "100000000")
	for info(replica, "master_link_status") != "up" {
		time.Sleep(10 * time.Millisecond)
	}
	host, port, _ := net.SplitHostPort(primary.Addr)
	load := exec.Command(rb, "-h", host, "-p", port, "-c", "50", "-P", "16", "-n", "100000000", "-r", "100000000", "-q", "BF.ADD", "bf", "__rand_int__")
	if err := load.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { load.Process.Kill(); load.Wait() }()
	time.Sleep(500 * time.Millisecond)
	nc, err := net.Dial("tcp", primary.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	rd := resp.NewReader(nc)
	lags := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		nc.Write(resp.AppendCommand(resp.AppendCommand(nil, []byte("BF.ADD"), []byte("probe"), []byte(strconv.Itoa(i))),
			[]byte("WAIT"), []byte("1"), []byte("0")))
		if _, err := rd.ReadReply(); err != nil {
			b.Fatal(err)
		}
		v, err := rd.ReadReply()
		if err != nil || v.Int != 1 {
			b.Fatalf("WAIT 1 0: %v %v", v, err)
		}
		lags = append(lags, time.Since(start))
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	slices.Sort(lags)
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(processCPU(b, info(primary, "process_id")).Milliseconds()), "primary-cpu-ms")
}
