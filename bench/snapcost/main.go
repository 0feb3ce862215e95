// Command snapcost measures what a snapshot costs the clients of a server holding one large
// filter: the latency redis-benchmark sees while the server saves, the time a save takes, and
// the memory the save adds. bench/snapshot.sh drives it against bloomd and Redis + RedisBloom.
//
//	snapcost fill -addr 127.0.0.1:PORT -items 1200000000 -error 0.001
//	snapcost run -addr 127.0.0.1:PORT -pid PID -op BGSAVE -requests 400000 -label bloomd
//
// fill makes the filter bf (BF.RESERVE bf ERROR ITEMS NONSCALING) and writes random bytes over
// all of its bits with BF.LOADCHUNK, in 16 MiB chunks, so that every page of it is in memory and
// the snapshot holds every byte (a sparse snapshot would skip zero blocks); random bits at half
// density leave a new item testing present with probability about p, so adds stay real writes.
//
// run runs redis-benchmark (BF.ADD bf __rand_int__, -P 1) and, for -op BGSAVE or BGREWRITEAOF,
// starts that command again each time the previous one ends, from just before the benchmark
// starts until it ends, so that every request is served while a snapshot is being written. It
// polls INFO persistence every 20 ms (also with -op none, so that the baseline carries the same
// polling) and times each snapshot from its command to the poll that sees it over; it samples
// the proportional set size (Pss, /proc/PID/smaps_rollup) of the server and its child processes
// every 250 ms. It prints one line of tab-separated fields: the label, the operation,
// redis-benchmark's p50, p99 and max latency in ms and its requests per second, the snapshots
// completed, their median seconds (-1 for none), and the largest Pss seen above the Pss before
// the run, in MiB.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bloomd/bloom/internal/resp"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: snapcost fill|run [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "fill":
		err = fill(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "snapcost:", err)
		os.Exit(1)
	}
}

// A client is one connection speaking RESP2.
type client struct {
	c  net.Conn
	rd *resp.Reader
	bw *bufio.Writer
}

func dial(addr string) (*client, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	rd := resp.NewReader(c)
	rd.Limits.MaxBulk = 1 << 30
	return &client{c: c, rd: rd, bw: bufio.NewWriterSize(c, 1<<20)}, nil
}

func (cl *client) send(args ...[]byte) error {
	_, err := cl.bw.Write(resp.AppendCommand(nil, args...))
	return err
}

func (cl *client) do(args ...string) (resp.Value, error) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	if err := cl.send(b...); err != nil {
		return resp.Value{}, err
	}
	if err := cl.bw.Flush(); err != nil {
		return resp.Value{}, err
	}
	v, err := cl.rd.ReadReply()
	if err == nil && v.IsError() {
		err = fmt.Errorf("%s: %s", args[0], v.Str)
	}
	return v, err
}

func fill(args []string) error {
	fs := flag.NewFlagSet("fill", flag.ExitOnError)
	addr := fs.String("addr", "", "server address")
	items := fs.Int64("items", 1_200_000_000, "the filter's capacity")
	errRate := fs.String("error", "0.001", "the filter's error rate")
	fs.Parse(args)
	cl, err := dial(*addr)
	if err != nil {
		return err
	}
	defer cl.c.Close()
	if _, err := cl.do("BF.RESERVE", "bf", *errRate, strconv.FormatInt(*items, 10), "NONSCALING"); err != nil {
		return err
	}
	v, err := cl.do("BF.SCANDUMP", "bf", "0")
	if err != nil {
		return err
	}
	if len(v.Elems) != 2 || len(v.Elems[1].Str) < 28 {
		return fmt.Errorf("BF.SCANDUMP bf 0: unexpected reply %v", v)
	}
	size := int64(binary.LittleEndian.Uint64(v.Elems[1].Str[20:]))
	const chunk = 16 << 20
	rng := rand.NewChaCha8([32]byte{1})
	buf := make([]byte, chunk)
	// Two chunks in flight: the server copies one while the next is on the wire.
	pending := 0
	for off := int64(0); off < size; off += chunk {
		n := min(chunk, size-off)
		rng.Read(buf[:n])
		if err := cl.send([]byte("BF.LOADCHUNK"), []byte("bf"), strconv.AppendInt(nil, off+1+n, 10), buf[:n]); err != nil {
			return err
		}
		if err := cl.bw.Flush(); err != nil {
			return err
		}
		if pending++; pending == 2 {
			if err := readOK(cl); err != nil {
				return err
			}
			pending--
		}
	}
	for ; pending > 0; pending-- {
		if err := readOK(cl); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "snapcost: %s: filter bf of %d bytes filled\n", *addr, size)
	return nil
}

func readOK(cl *client) error {
	v, err := cl.rd.ReadReply()
	if err == nil && v.IsError() {
		err = fmt.Errorf("BF.LOADCHUNK: %s", v.Str)
	}
	return err
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	addr := fs.String("addr", "", "server address")
	pid := fs.Int("pid", 0, "the server's process id")
	op := fs.String("op", "none", "none, BGSAVE or BGREWRITEAOF")
	requests := fs.Int("requests", 400000, "redis-benchmark's -n")
	clients := fs.Int("clients", 20, "redis-benchmark's -c")
	keyRange := fs.Int("range", 2_000_000_000, "redis-benchmark's -r (at most 2147483647: it is a C int)")
	label := fs.String("label", "server", "the row's first cell")
	fs.Parse(args)
	if *keyRange <= 0 || *keyRange > 1<<31-1 {
		return fmt.Errorf("-range %d does not fit redis-benchmark's int", *keyRange)
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return err
	}
	cl, err := dial(*addr)
	if err != nil {
		return err
	}
	defer cl.c.Close()
	field := map[string]string{"BGSAVE": "rdb_bgsave_in_progress", "BGREWRITEAOF": "aof_rewrite_in_progress"}[*op]
	if *op != "none" && field == "" {
		return fmt.Errorf("-op %q: want none, BGSAVE or BGREWRITEAOF", *op)
	}
	// Wait for a snapshot that something else started (AOF's first rewrite) to end.
	for {
		busy, err := saving(cl)
		if err != nil {
			return err
		}
		if !busy {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	base := pss(*pid)
	var (
		mu    sync.Mutex
		peak  = base
		done  = make(chan struct{})
		wg    sync.WaitGroup
		saves []time.Duration
		fail  error
	)
	wg.Add(2)
	go func() { // Pss sampler
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if p := pss(*pid); p > 0 {
				mu.Lock()
				peak = max(peak, p)
				mu.Unlock()
			}
		}
	}()
	started := make(chan struct{})
	go func() { // poller, and saver
		defer wg.Done()
		var since time.Time
		running := false
		first := true
		for {
			stop := false
			select {
			case <-done:
				stop = true
			default:
			}
			if field != "" && !running && !stop {
				if _, err := cl.do(*op); err != nil {
					mu.Lock()
					fail = err
					mu.Unlock()
					if first {
						close(started)
					}
					return
				}
				since, running = time.Now(), true
			}
			if first {
				close(started)
				first = false
			}
			busy, err := saving(cl)
			if err != nil {
				mu.Lock()
				fail = err
				mu.Unlock()
				return
			}
			if running && !busy {
				mu.Lock()
				saves = append(saves, time.Since(since))
				mu.Unlock()
				running = false
			}
			if stop && !running {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	<-started
	bench := exec.Command("redis-benchmark", "-h", host, "-p", port, "-c", strconv.Itoa(*clients),
		"-n", strconv.Itoa(*requests), "-r", strconv.Itoa(*keyRange), "-P", "1", "--csv", "--precision", "3",
		"BF.ADD", "bf", "__rand_int__")
	out, err := bench.Output()
	close(done)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("redis-benchmark: %w", err)
	}
	if fail != nil {
		return fail
	}
	// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	rec := strings.Split(strings.ReplaceAll(lines[len(lines)-1], `"`, ""), ",")
	if len(rec) < 8 {
		return fmt.Errorf("redis-benchmark printed %q", out)
	}
	save := -1.0
	if len(saves) > 0 {
		slices.Sort(saves)
		save = saves[len(saves)/2].Seconds()
	}
	fmt.Printf("%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.2f\t%.0f\n", *label, *op, rec[4], rec[6], rec[7], rec[1],
		len(saves), save, float64(peak-base)/(1<<20))
	return nil
}

func atof(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }

// saving reports whether the server is writing a snapshot (either kind).
func saving(cl *client) (bool, error) {
	v, err := cl.do("INFO", "persistence")
	if err != nil {
		return false, err
	}
	for _, f := range []string{"rdb_bgsave_in_progress:1", "aof_rewrite_in_progress:1"} {
		if bytes.Contains(v.Str, []byte(f)) {
			return true, nil
		}
	}
	return false, nil
}

// pss returns the Pss in bytes of pid and of its children (a Redis snapshot is a child).
func pss(pid int) int64 {
	total := pssOf(pid)
	for _, c := range children(pid) {
		total += pssOf(c)
	}
	return total
}

func pssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// children returns the process ids whose parent is pid.
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for f := range strings.FieldsSeq(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	if len(tasks) > 0 {
		return out
	}
	return childrenByScan(pid)
}

// childrenByScan finds children through every process's stat, where the kernel lacks
// /proc/PID/task/TID/children.
func childrenByScan(pid int) []int {
	var out []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		c, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 2 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}
