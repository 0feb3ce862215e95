// Command rdbmove measures how fast a large Bloom filter moves in Redis's formats, bloomd against
// Redis with RedisBloom, both measured in the same run on the same filter: an RDB file saved
// (SAVE) and loaded at start, each program loading the other's file, and MIGRATE between every
// pair of the two, with the longest wait of another client's BF.ADD (to another key) during
// each MIGRATE. bench/rdb.sh builds bloomd and runs it; the table is BENCHMARKS.md's "Moving a
// large filter in Redis's formats".
//
// The filter is BF.RESERVE f 0.01 CAPACITY NONSCALING, sized to the -gb given, with its bits
// set at random (a fixed seed) through BF.LOADCHUNK: half of them set, as a full filter's are,
// so LZF compression finds nothing to shrink, the case that costs most.
package main

import (
	"bufio"
	"bytes"
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
	module    = flag.String("redisbloom", os.Getenv("REDISBLOOM_SO"), "RedisBloom's module (redisbloom.so)")
	gb        = flag.Float64("gb", 1, "the filter's size in GB")
	workDir   = flag.String("dir", "", "scratch directory (files of several GB)")
)

type server struct {
	name string // "bloomd" or "redis"
	dir  string
	port int
	cmd  *exec.Cmd
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "rdbmove:", err)
		os.Exit(1)
	}
}

// start runs a server of kind ("bloomd" or "redis") on dir, and returns once it answers PING
// with PONG (the load, if any, done), with how long that took.
func start(kind, dir string) (*server, time.Duration) {
	s := &server{name: kind, dir: dir, port: freePort()}
	common := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", dir, "--dbfilename", "dump.rdb",
		"--save", "", "--appendonly", "no", "--proto-max-bulk-len", "2000mb", "--loglevel", "warning"}
	if kind == "bloomd" {
		s.cmd = exec.Command(*bloomdBin, common...)
	} else {
		s.cmd = exec.Command("redis-server", append(common, "--loadmodule", *module)...)
	}
	log, err := os.Create(filepath.Join(dir, kind+".log"))
	check(err)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	t0 := time.Now()
	check(s.cmd.Start())
	for range 60000 {
		if c, err := net.Dial("tcp", s.addr()); err == nil {
			r := do(c, "PING")
			c.Close()
			if r.Text() == "PONG" {
				return s, time.Since(t0)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	check(fmt.Errorf("%s on %s did not answer", kind, dir))
	return nil, 0
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
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

// fill makes the filter f on s, its bits random from seed.
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

func timed(fn func()) time.Duration {
	t0 := time.Now()
	fn()
	return time.Since(t0)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	check(err)
	return fi.Size()
}

func mbs(bytes int64, d time.Duration) string {
	return fmt.Sprintf("%.0f", float64(bytes)/1e6/d.Seconds())
}

// probe adds to another key in a loop until stop is set, and returns the longest wait for a
// reply.
func probe(s *server, stop *atomic.Bool, done chan<- time.Duration) {
	c := s.conn()
	defer c.Close()
	var worst time.Duration
	for i := 0; !stop.Load(); i++ {
		t0 := time.Now()
		do(c, "BF.ADD", "other", strconv.Itoa(i))
		worst = max(worst, time.Since(t0))
	}
	done <- worst
}

func main() {
	flag.Parse()
	if *bloomdBin == "" || *module == "" || *workDir == "" {
		check(fmt.Errorf("need -bloomd, -redisbloom (or REDISBLOOM_SO) and -dir"))
	}
	// RedisBloom's sizing: bits = -n ln(p) / ln(2)^2, so n for the bytes asked.
	capacity := uint64(*gb * 1e9 * 8 * 0.4804530139182014 / 4.605170185988091)
	mk := func(name string) string {
		d := filepath.Join(*workDir, name)
		check(os.MkdirAll(d, 0o755))
		return d
	}
	type row struct{ what, secs, rate, note string }
	var rows []row
	add := func(what string, d time.Duration, bytes int64, note string) {
		rows = append(rows, row{what, fmt.Sprintf("%.2f", d.Seconds()), mbs(bytes, d), note})
	}

	rs, _ := start("redis", mk("redis"))
	bs, _ := start("bloomd", mk("bloomd"))
	fill(rs, capacity)
	fill(bs, capacity)
	rc, bc := rs.conn(), bs.conn()
	info := do(rc, "BF.INFO", "f", "SIZE").String()
	same := func(a, b net.Conn) bool {
		for _, it := range []string{"1", "2"} {
			va, vb := do(a, "BF.SCANDUMP", "f", it), do(b, "BF.SCANDUMP", "f", it)
			if !bytes.Equal(va.Elems[1].Str, vb.Elems[1].Str) {
				return false
			}
		}
		return true
	}
	if !same(rc, bc) {
		check(fmt.Errorf("the two filters differ"))
	}

	// SAVE, then a start on the file, for each program; then each on the other's file.
	var sizes = map[string]int64{}
	for _, s := range []*server{rs, bs} {
		c := s.conn()
		d := timed(func() { do(c, "SAVE") })
		c.Close()
		sizes[s.name] = fileSize(filepath.Join(s.dir, "dump.rdb"))
		add(s.name+": SAVE", d, sizes[s.name], fmt.Sprintf("dump.rdb of %.2f GB", float64(sizes[s.name])/1e9))
	}
	rs.stop()
	bs.stop()
	for _, s := range []*server{rs, bs} {
		again, d := start(s.name, s.dir)
		add(s.name+": start on its own dump.rdb", d, sizes[s.name], "")
		again.stop()
	}
	for _, pair := range [][2]string{{"bloomd", "redis"}, {"redis", "bloomd"}} {
		loader, writer := pair[0], pair[1]
		d := mk(loader + "-loads-" + writer)
		src := filepath.Join(*workDir, writer, "dump.rdb")
		check(os.Rename(src, filepath.Join(d, "dump.rdb")))
		s, took := start(loader, d)
		add(fmt.Sprintf("%s: start on %s's dump.rdb", loader, writer), took, sizes[writer], "")
		c := s.conn()
		if got := do(c, "BF.INFO", "f", "SIZE").String(); got != info {
			check(fmt.Errorf("%s loaded %s, want %s", loader, got, info))
		}
		c.Close()
		s.stop()
		check(os.Rename(filepath.Join(d, "dump.rdb"), src))
	}

	// MIGRATE ... COPY from each program to a fresh one of each, with a client adding to
	// another key on the source meanwhile.
	for _, from := range []string{"bloomd", "redis"} {
		src, _ := start(from, filepath.Join(*workDir, from))
		for _, to := range []string{"bloomd", "redis"} {
			dst, _ := start(to, mk("target-"+to))
			c := src.conn()
			var stop atomic.Bool
			worst := make(chan time.Duration)
			go probe(src, &stop, worst)
			time.Sleep(100 * time.Millisecond)
			var reply string
			d := timed(func() {
				reply = do(c, "MIGRATE", "127.0.0.1", strconv.Itoa(dst.port), "f", "0", "600000", "COPY").Text()
			})
			stop.Store(true)
			w := <-worst
			if reply != "OK" {
				check(fmt.Errorf("MIGRATE %s to %s: %s", from, to, reply))
			}
			dc := dst.conn()
			if !same(c, dc) {
				check(fmt.Errorf("MIGRATE %s to %s: the filters differ", from, to))
			}
			dc.Close()
			c.Close()
			add(fmt.Sprintf("MIGRATE %s to %s", from, to), d, sizes[from], fmt.Sprintf("longest BF.ADD to another key meanwhile: %.0f ms", w.Seconds()*1000))
			dst.stop()
			os.RemoveAll(dst.dir)
		}
		src.stop()
	}

	fmt.Printf("Filter: BF.RESERVE f 0.01 %d NONSCALING, %s, bits set at random (incompressible).\n\n", capacity, strings.ReplaceAll(info, "\n", " "))
	fmt.Println("| operation | seconds | MB/s | |")
	fmt.Println("|---|---:|---:|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s |\n", r.what, r.secs, r.rate, r.note)
	}
}
