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
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom/bench/internal/rawserver"
)

var (
	bloomdBin = flag.String("bloomd", "", "the bloomd binary")
	module    = flag.String("redisbloom", os.Getenv("REDISBLOOM_SO"), "RedisBloom's module (redisbloom.so)")
	gb        = flag.Float64("gb", 1, "the filter's size in GB")
	workDir   = flag.String("dir", "", "scratch directory (files of several GB)")
)

// start runs a server of kind ("bloomd" or "redis") on dir, and returns once it answers PING
// with PONG (the load, if any, done), with how long that took.
func start(kind, dir string) (*rawserver.Server, time.Duration) {
	port := rawserver.FreePort()
	common := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--dbfilename", "dump.rdb",
		"--save", "", "--appendonly", "no", "--proto-max-bulk-len", "2000mb", "--loglevel", "warning"}
	if kind == "bloomd" {
		return rawserver.Start(kind, dir, *bloomdBin, port, common...)
	}
	return rawserver.Start(kind, dir, "redis-server", port, append(common, "--loadmodule", *module)...)
}

func timed(fn func()) time.Duration {
	t0 := time.Now()
	fn()
	return time.Since(t0)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	rawserver.Check(err)
	return fi.Size()
}

func mbs(bytes int64, d time.Duration) string {
	return fmt.Sprintf("%.0f", float64(bytes)/1e6/d.Seconds())
}

// probe adds to another key in a loop until stop is set, and returns the longest wait for a
// reply.
func probe(s *rawserver.Server, stop *atomic.Bool, done chan<- time.Duration) {
	c := s.Conn()
	defer c.Close()
	var worst time.Duration
	for i := 0; !stop.Load(); i++ {
		t0 := time.Now()
		rawserver.Do(c, "BF.ADD", "other", strconv.Itoa(i))
		worst = max(worst, time.Since(t0))
	}
	done <- worst
}

func main() {
	flag.Parse()
	if *bloomdBin == "" || *module == "" || *workDir == "" {
		rawserver.Check(fmt.Errorf("need -bloomd, -redisbloom (or REDISBLOOM_SO) and -dir"))
	}
	// RedisBloom's sizing: bits = -n ln(p) / ln(2)^2, so n for the bytes asked.
	capacity := uint64(*gb * 1e9 * 8 * 0.4804530139182014 / 4.605170185988091)
	mk := func(name string) string {
		d := filepath.Join(*workDir, name)
		rawserver.Check(os.MkdirAll(d, 0o755))
		return d
	}
	type row struct{ what, secs, rate, note string }
	var rows []row
	add := func(what string, d time.Duration, bytes int64, note string) {
		rows = append(rows, row{what, fmt.Sprintf("%.2f", d.Seconds()), mbs(bytes, d), note})
	}

	rs, _ := start("redis", mk("redis"))
	bs, _ := start("bloomd", mk("bloomd"))
	rawserver.Fill(rs, capacity)
	rawserver.Fill(bs, capacity)
	rc, bc := rs.Conn(), bs.Conn()
	info := rawserver.Do(rc, "BF.INFO", "f", "SIZE").String()
	same := func(a, b net.Conn) bool {
		for _, it := range []string{"1", "2"} {
			va, vb := rawserver.Do(a, "BF.SCANDUMP", "f", it), rawserver.Do(b, "BF.SCANDUMP", "f", it)
			if !bytes.Equal(va.Elems[1].Str, vb.Elems[1].Str) {
				return false
			}
		}
		return true
	}
	if !same(rc, bc) {
		rawserver.Check(fmt.Errorf("the two filters differ"))
	}

	// SAVE, then a start on the file, for each program; then each on the other's file.
	var sizes = map[string]int64{}
	for _, s := range []*rawserver.Server{rs, bs} {
		c := s.Conn()
		d := timed(func() { rawserver.Do(c, "SAVE") })
		c.Close()
		sizes[s.Name] = fileSize(filepath.Join(s.Dir, "dump.rdb"))
		add(s.Name+": SAVE", d, sizes[s.Name], fmt.Sprintf("dump.rdb of %.2f GB", float64(sizes[s.Name])/1e9))
	}
	rs.Stop()
	bs.Stop()
	for _, s := range []*rawserver.Server{rs, bs} {
		again, d := start(s.Name, s.Dir)
		add(s.Name+": start on its own dump.rdb", d, sizes[s.Name], "")
		again.Stop()
	}
	for _, pair := range [][2]string{{"bloomd", "redis"}, {"redis", "bloomd"}} {
		loader, writer := pair[0], pair[1]
		d := mk(loader + "-loads-" + writer)
		src := filepath.Join(*workDir, writer, "dump.rdb")
		rawserver.Check(os.Rename(src, filepath.Join(d, "dump.rdb")))
		s, took := start(loader, d)
		add(fmt.Sprintf("%s: start on %s's dump.rdb", loader, writer), took, sizes[writer], "")
		c := s.Conn()
		if got := rawserver.Do(c, "BF.INFO", "f", "SIZE").String(); got != info {
			rawserver.Check(fmt.Errorf("%s loaded %s, want %s", loader, got, info))
		}
		c.Close()
		s.Stop()
		rawserver.Check(os.Rename(filepath.Join(d, "dump.rdb"), src))
	}

	// MIGRATE ... COPY from each program to a fresh one of each, with a client adding to
	// another key on the source meanwhile.
	for _, from := range []string{"bloomd", "redis"} {
		src, _ := start(from, filepath.Join(*workDir, from))
		for _, to := range []string{"bloomd", "redis"} {
			dst, _ := start(to, mk("target-"+to))
			c := src.Conn()
			var stop atomic.Bool
			worst := make(chan time.Duration)
			go probe(src, &stop, worst)
			time.Sleep(100 * time.Millisecond)
			var reply string
			d := timed(func() {
				reply = rawserver.Do(c, "MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), "f", "0", "600000", "COPY").Text()
			})
			stop.Store(true)
			w := <-worst
			if reply != "OK" {
				rawserver.Check(fmt.Errorf("MIGRATE %s to %s: %s", from, to, reply))
			}
			dc := dst.Conn()
			if !same(c, dc) {
				rawserver.Check(fmt.Errorf("MIGRATE %s to %s: the filters differ", from, to))
			}
			dc.Close()
			c.Close()
			add(fmt.Sprintf("MIGRATE %s to %s", from, to), d, sizes[from], fmt.Sprintf("longest BF.ADD to another key meanwhile: %.0f ms", w.Seconds()*1000))
			dst.Stop()
			os.RemoveAll(dst.Dir)
		}
		src.Stop()
	}

	fmt.Printf("Filter: BF.RESERVE f 0.01 %d NONSCALING, %s, bits set at random (incompressible).\n\n", capacity, strings.ReplaceAll(info, "\n", " "))
	fmt.Println("| operation | seconds | MB/s | |")
	fmt.Println("|---|---:|---:|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s |\n", r.what, r.secs, r.rate, r.note)
	}
}
