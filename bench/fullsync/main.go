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
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bloomd/bloom/internal/resp"
)

var (
	bloomdBin = flag.String("bloomd", "", "the bloomd binary")
	module    = flag.String("redisbloom", os.Getenv("REDISBLOOM_SO"), "RedisBloom's module (redisbloom.so); without it only bloomd to bloomd is measured")
	gb        = flag.Float64("gb", 1, "the filter's size in GB")
	clients   = flag.Int("clients", 4, "connections adding to the filter during each full sync")
	workDir   = flag.String("dir", "", "scratch directory (files of several GB)")
)

type server struct {
	name string
	dir  string
	port int
	cmd  *exec.Cmd
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "fullsync:", err)
		os.Exit(1)
	}
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// start runs bloomd or redis-server on a fresh dir, with its data files as a replica keeps them
// (bloomd: dump.bdb and an append-only log; Redis: dump.rdb, which a full sync writes), and
// returns once it answers PING.
func start(kind, name string) *server {
	dir := filepath.Join(*workDir, name)
	check(os.MkdirAll(dir, 0o755))
	s := &server{name: name, dir: dir, port: freePort()}
	common := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
		"--proto-max-bulk-len", "2000mb", "--loglevel", "notice", "--repl-backlog-size", "256mb",
		"--client-output-buffer-limit", "replica 0 0 0"}
	if kind == "bloomd" {
		s.cmd = exec.Command(*bloomdBin, append(common, "--appendonly", "yes", "--rdbcompression", "no")...)
	} else {
		s.cmd = exec.Command("redis-server", append(common, "--appendonly", "no", "--loadmodule", *module,
			"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0", "--rdbcompression", "no")...)
	}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	check(err)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	check(s.cmd.Start())
	for range 6000 {
		if c, err := net.Dial("tcp", s.addr()); err == nil {
			r := do(c, "PING")
			c.Close()
			if r.Text() == "PONG" {
				return s
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	check(fmt.Errorf("%s did not answer", name))
	return nil
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	os.RemoveAll(s.dir)
}

func (s *server) conn() net.Conn {
	c, err := net.Dial("tcp", s.addr())
	check(err)
	return c
}

var (
	readersMu sync.Mutex
	readers   = map[net.Conn]*resp.Reader{}
)

func do(c net.Conn, args ...string) resp.Value {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return doBytes(c, bs...)
}

func doBytes(c net.Conn, args ...[]byte) resp.Value {
	_, err := c.Write(resp.AppendCommand(nil, args...))
	check(err)
	readersMu.Lock()
	r := readers[c]
	if r == nil {
		r = resp.NewReader(bufio.NewReaderSize(c, 1<<20))
		r.Limits.MaxBulk = 1 << 31
		readers[c] = r
	}
	readersMu.Unlock()
	v, err := r.ReadReply()
	check(err)
	return v
}

func (s *server) info(field string) string { return s.infoIn("replication", field) }

func (s *server) infoIn(section, field string) string {
	c := s.conn()
	defer c.Close()
	for _, l := range strings.Split(do(c, "INFO", section).Text(), "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// fill makes the filter f on s, its bits random from a fixed seed.
func fill(s *server, capacity uint64) {
	c := s.conn()
	defer c.Close()
	if v := do(c, "BF.RESERVE", "f", "0.01", strconv.FormatUint(capacity, 10), "NONSCALING"); v.IsError() {
		check(fmt.Errorf("%s: BF.RESERVE: %s", s.name, v.Text()))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	it := do(c, "BF.SCANDUMP", "f", "0").Elems[0].Int
	for {
		v := do(c, "BF.SCANDUMP", "f", strconv.FormatInt(it, 10))
		next, data := v.Elems[0].Int, v.Elems[1].Str
		if next == 0 {
			return
		}
		for i := 0; i+8 <= len(data); i += 8 {
			u := rng.Uint64()
			for j := range 8 {
				data[i+j] = byte(u >> (8 * j))
			}
		}
		if v := doBytes(c, []byte("BF.LOADCHUNK"), []byte("f"), []byte(strconv.FormatInt(next, 10)), data); v.IsError() {
			check(fmt.Errorf("%s: BF.LOADCHUNK: %s", s.name, v.Text()))
		}
		it = next
	}
}

// load adds to f on s from several connections until stopped, and reports the adds and the
// longest wait.
type load struct {
	stop  atomic.Bool
	wg    sync.WaitGroup
	mu    sync.Mutex
	worst time.Duration
	adds  atomic.Int64
}

func startLoad(s *server, seed int) *load {
	l := &load{}
	for k := range *clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c := s.conn()
			defer c.Close()
			for i := 0; !l.stop.Load(); i++ {
				t0 := time.Now()
				do(c, "BF.ADD", "f", fmt.Sprintf("add-%d-%d-%d", seed, k, i))
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
func settle(s *server) {
	for t0 := time.Now(); s.infoIn("persistence", "rdb_bgsave_in_progress") != "0" || s.infoIn("persistence", "aof_rewrite_in_progress") != "0"; {
		time.Sleep(50 * time.Millisecond)
		if time.Since(t0) > 10*time.Minute {
			check(fmt.Errorf("%s did not finish writing its data files", s.name))
		}
	}
	exec.Command("sync").Run()
}

// fullSync makes replica follow primary under the add load, and returns the time from REPLICAOF
// to link up, the adds made meanwhile and the longest wait of one.
func fullSync(primary, replica *server, seed int) (time.Duration, int64, time.Duration) {
	settle(primary)
	l := startLoad(primary, seed)
	time.Sleep(200 * time.Millisecond)
	c := replica.conn()
	t0 := time.Now()
	if v := do(c, "REPLICAOF", "127.0.0.1", strconv.Itoa(primary.port)); v.IsError() {
		check(fmt.Errorf("REPLICAOF: %s", v.Text()))
	}
	c.Close()
	for replica.info("master_link_status") != "up" {
		time.Sleep(20 * time.Millisecond)
		if time.Since(t0) > 30*time.Minute {
			check(fmt.Errorf("%s did not sync with %s", replica.name, primary.name))
		}
	}
	d := time.Since(t0)
	adds, worst := l.end()
	for replica.info("slave_repl_offset") != primary.info("master_repl_offset") {
		time.Sleep(20 * time.Millisecond)
	}
	if !sameFilter(primary, replica) {
		check(fmt.Errorf("%s's filter differs from %s's after the full sync", replica.name, primary.name))
	}
	return d, adds, worst
}

func sameFilter(a, b *server) bool {
	ca, cb := a.conn(), b.conn()
	defer ca.Close()
	defer cb.Close()
	if do(ca, "BF.INFO", "f").String() != do(cb, "BF.INFO", "f").String() {
		return false
	}
	for it := int64(0); ; {
		va, vb := do(ca, "BF.SCANDUMP", "f", strconv.FormatInt(it, 10)), do(cb, "BF.SCANDUMP", "f", strconv.FormatInt(it, 10))
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
		check(fmt.Errorf("cp: %v %s", err, out))
	}
	d := time.Since(t0)
	os.Remove(dst)
	return d
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	check(err)
	return fi.Size()
}

func main() {
	flag.Parse()
	if *bloomdBin == "" || *workDir == "" {
		check(fmt.Errorf("need -bloomd and -dir"))
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
	fill(bp, capacity)
	br := start("bloomd", "bloomd-replica")
	d, adds, worst := fullSync(bp, br, 1)
	rows = append(rows, row{"bloomd to bloomd (bloomd's format, written to the replica's files as it arrives)", d, adds, worst})
	snap := filepath.Join(br.dir, "dump.bdb")
	size := fileSize(snap)
	base = copyTime(snap)
	br.stop()
	if *module != "" {
		rr := start("redis", "redis-replica-of-bloomd")
		d, adds, worst = fullSync(bp, rr, 2)
		rows = append(rows, row{"bloomd to redis-server (an RDB file, the filter copied at the snapshot's instant)", d, adds, worst})
		rr.stop()
	}
	bp.stop()
	if *module != "" {
		rp := start("redis", "redis-primary")
		fill(rp, capacity)
		rr := start("redis", "redis-replica-of-redis")
		d, adds, worst = fullSync(rp, rr, 3)
		rows = append(rows, row{"redis-server to redis-server (diskless; the replica writes dump.rdb, then loads it)", d, adds, worst})
		rr.stop()
		br := start("bloomd", "bloomd-replica-of-redis")
		d, adds, worst = fullSync(rp, br, 4)
		rows = append(rows, row{"redis-server to bloomd (diskless; loaded from the link, written to the replica's files as it arrives)", d, adds, worst})
		br.stop()
		rp.stop()
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
