// Command fullsync measures a replica's full sync of a large Bloom filter while clients add to
// it: bloomd to bloomd against a plain copy of the same bytes on the same disk (cp, then sync),
// and, with RedisBloom, a Redis replica's full sync from bloomd against one from Redis, and
// bloomd's from Redis. bench/fullsync.sh builds bloomd and runs it; the table is BENCHMARKS.md's
// "How long does a full sync take?".
//
// The filter is BF.RESERVE f 0.01 CAPACITY NONSCALING, sized to the -gb given, with its bits set
// at random (a fixed seed) through BF.LOADCHUNK, half of them set as a full filter's are, so
// that nothing compresses. A full sync's time runs from REPLICAOF to the replica's
// master_link_status:up (the snapshot loaded, and on bloomd and Redis replicas written to their
// data files and synced); it starts once the primary writes none of its own files and the disk's
// caches are flushed, as the copy starts. Meanwhile -clients connections send BF.ADD f to the primary one after
// another; the longest wait for a reply is reported.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom/bench/internal/rawserver"
)

var (
	bloomdBin = flag.String("bloomd", "", "the bloomd binary")
	module    = flag.String("redisbloom", os.Getenv("REDISBLOOM_SO"), "RedisBloom's module (redisbloom.so); without it only bloomd to bloomd is measured")
	gb        = flag.Float64("gb", 1, "the filter's size in GB")
	clients   = flag.Int("clients", 4, "connections adding to the filter during each full sync")
	workDir   = flag.String("dir", "", "scratch directory (files of several GB)")
)

// start runs bloomd or redis-server on a fresh dir, with its data files as a replica keeps them
// (bloomd: dump.bdb and an append-only log; Redis: dump.rdb, which a full sync writes), and
// returns once it answers PING.
func start(kind, name string) *rawserver.Server {
	dir := filepath.Join(*workDir, name)
	rawserver.Check(os.MkdirAll(dir, 0o755))
	port := rawserver.FreePort()
	common := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
		"--proto-max-bulk-len", "2000mb", "--loglevel", "notice", "--repl-backlog-size", "256mb",
		"--client-output-buffer-limit", "replica 0 0 0"}
	var s *rawserver.Server
	if kind == "bloomd" {
		s, _ = rawserver.Start(name, dir, *bloomdBin, port, append(common, "--appendonly", "yes", "--rdbcompression", "no")...)
	} else {
		s, _ = rawserver.Start(name, dir, "redis-server", port, append(common, "--appendonly", "no", "--loadmodule", *module,
			"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0", "--rdbcompression", "no")...)
	}
	return s
}

// stop kills s and removes its files (several GB).
func stop(s *rawserver.Server) {
	s.Stop()
	os.RemoveAll(s.Dir)
}

type load struct {
	stop  atomic.Bool
	wg    sync.WaitGroup
	mu    sync.Mutex
	worst time.Duration
	adds  atomic.Int64
}

func startLoad(s *rawserver.Server, seed int) *load {
	l := &load{}
	for k := range *clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c := s.Conn()
			defer c.Close()
			for i := 0; !l.stop.Load(); i++ {
				t0 := time.Now()
				rawserver.Do(c, "BF.ADD", "f", fmt.Sprintf("add-%d-%d-%d", seed, k, i))
				d := time.Since(t0)
				l.adds.Add(1)
				l.mu.Lock()
				l.worst = max(l.worst, d)
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *load) end() (int64, time.Duration) {
	l.stop.Store(true)
	l.wg.Wait()
	return l.adds.Load(), l.worst
}

// settle waits until s writes none of its own data files (the fill makes a bloomd primary
// rewrite its log into a snapshot of the whole filter), then flushes the disk's caches (sync), so
// that a full sync starts on an idle disk, as the copy does.
func settle(s *rawserver.Server) {
	for t0 := time.Now(); s.Info("persistence", "rdb_bgsave_in_progress") != "0" || s.Info("persistence", "aof_rewrite_in_progress") != "0"; {
		time.Sleep(50 * time.Millisecond)
		if time.Since(t0) > 10*time.Minute {
			rawserver.Check(fmt.Errorf("%s did not finish writing its data files", s.Name))
		}
	}
	exec.Command("sync").Run()
}

// fullSync makes replica follow primary under the add load, and returns the time from REPLICAOF
// to link up, the adds made meanwhile and the longest wait of one.
func fullSync(primary, replica *rawserver.Server, seed int) (time.Duration, int64, time.Duration) {
	settle(primary)
	l := startLoad(primary, seed)
	time.Sleep(200 * time.Millisecond)
	c := replica.Conn()
	t0 := time.Now()
	if v := rawserver.Do(c, "REPLICAOF", "127.0.0.1", strconv.Itoa(primary.Port)); v.IsError() {
		rawserver.Check(fmt.Errorf("REPLICAOF: %s", v.Text()))
	}
	c.Close()
	for replica.Info("replication", "master_link_status") != "up" {
		time.Sleep(20 * time.Millisecond)
		if time.Since(t0) > 30*time.Minute {
			rawserver.Check(fmt.Errorf("%s did not sync with %s", replica.Name, primary.Name))
		}
	}
	d := time.Since(t0)
	adds, worst := l.end()
	for replica.Info("replication", "slave_repl_offset") != primary.Info("replication", "master_repl_offset") {
		time.Sleep(20 * time.Millisecond)
	}
	if !sameFilter(primary, replica) {
		rawserver.Check(fmt.Errorf("%s's filter differs from %s's after the full sync", replica.Name, primary.Name))
	}
	return d, adds, worst
}

func sameFilter(a, b *rawserver.Server) bool {
	ca, cb := a.Conn(), b.Conn()
	defer ca.Close()
	defer cb.Close()
	if rawserver.Do(ca, "BF.INFO", "f").String() != rawserver.Do(cb, "BF.INFO", "f").String() {
		return false
	}
	for it := int64(0); ; {
		va, vb := rawserver.Do(ca, "BF.SCANDUMP", "f", strconv.FormatInt(it, 10)), rawserver.Do(cb, "BF.SCANDUMP", "f", strconv.FormatInt(it, 10))
		if va.String() != vb.String() {
			return false
		}
		if it = va.Elems[0].Int; it == 0 {
			return true
		}
	}
}

// copyTime copies file to a new file beside it and syncs it (cp, then sync), as an operator
// copies a snapshot, and returns how long that took.
func copyTime(file string) time.Duration {
	dst := file + ".copy"
	exec.Command("sync").Run()
	t0 := time.Now()
	if out, err := exec.Command("sh", "-c", fmt.Sprintf("cp '%s' '%s' && sync", file, dst)).CombinedOutput(); err != nil {
		rawserver.Check(fmt.Errorf("cp: %v %s", err, out))
	}
	d := time.Since(t0)
	os.Remove(dst)
	return d
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	rawserver.Check(err)
	return fi.Size()
}

func main() {
	flag.Parse()
	if *bloomdBin == "" || *workDir == "" {
		rawserver.Check(fmt.Errorf("need -bloomd and -dir"))
	}
	capacity := uint64(*gb * 1e9 * 8 * 0.4804530139182014 / 4.605170185988091)
	type row struct {
		what  string
		d     time.Duration
		adds  int64
		worst time.Duration
	}
	var rows []row
	var base time.Duration

	bp := start("bloomd", "bloomd-primary")
	rawserver.Fill(bp, capacity)
	br := start("bloomd", "bloomd-replica")
	d, adds, worst := fullSync(bp, br, 1)
	rows = append(rows, row{"bloomd to bloomd (bloomd's format, written to the replica's files as it arrives)", d, adds, worst})
	snap := filepath.Join(br.Dir, "dump.bdb")
	size := fileSize(snap)
	base = copyTime(snap)
	stop(br)
	if *module != "" {
		rr := start("redis", "redis-replica-of-bloomd")
		d, adds, worst = fullSync(bp, rr, 2)
		rows = append(rows, row{"bloomd to redis-server (an RDB file, the filter copied at the snapshot's instant)", d, adds, worst})
		stop(rr)
	}
	stop(bp)
	if *module != "" {
		rp := start("redis", "redis-primary")
		rawserver.Fill(rp, capacity)
		rr := start("redis", "redis-replica-of-redis")
		d, adds, worst = fullSync(rp, rr, 3)
		rows = append(rows, row{"redis-server to redis-server (diskless; the replica writes dump.rdb, then loads it)", d, adds, worst})
		stop(rr)
		br := start("bloomd", "bloomd-replica-of-redis")
		d, adds, worst = fullSync(rp, br, 4)
		rows = append(rows, row{"redis-server to bloomd (diskless; loaded from the link, written to the replica's files as it arrives)", d, adds, worst})
		stop(br)
		stop(rp)
	}
	fmt.Printf("Filter: BF.RESERVE f 0.01 %d NONSCALING, %.2f GB of bits set at random; the bloomd replica's snapshot file: %.2f GB; %d clients adding meanwhile.\n\n",
		capacity, *gb, float64(size)/1e9, *clients)
	fmt.Println("| full sync | seconds | × cp + sync | adds meanwhile | longest add |")
	fmt.Println("|---|---:|---:|---:|---:|")
	fmt.Printf("| cp + sync of the bloomd replica's snapshot file (same disk) | %.2f | 1.00 | | |\n", base.Seconds())
	for _, r := range rows {
		fmt.Printf("| %s | %.2f | %.2f | %d | %.0f ms |\n", r.what, r.d.Seconds(), r.d.Seconds()/base.Seconds(), r.adds, r.worst.Seconds()*1000)
	}
}
