// Command bitload drives SETBIT or GETBIT at random offsets against a Redis server (bloomd or
// redis-server), for bench/server-cpu.sh: redis-benchmark's __rand_int__ is zero-padded to 12
// digits ("000012345678"), which Redis refuses as a bit offset, so redis-benchmark cannot make
// these commands. It prints one CSV line as redis-benchmark --csv does: the command and the
// requests per second.
//
//	go run ./bitload -addr 127.0.0.1:6379 -cmd SETBIT -key bits -c 50 -n 1000000 -P 16 -r 100000000
//
// Each of -c connections sends its share of -n commands in batches of -P, then reads the batch's
// replies, which must all be integers (an error reply stops the run).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	cmd := flag.String("cmd", "SETBIT", "SETBIT or GETBIT")
	key := flag.String("key", "bits", "the bitmap's key")
	conns := flag.Int("c", 50, "connections")
	n := flag.Int("n", 100000, "commands in all")
	pipe := flag.Int("P", 1, "commands per pipelined batch")
	r := flag.Int64("r", 100000000, "offsets are random in [0, r)")
	flag.Parse()
	if *cmd != "SETBIT" && *cmd != "GETBIT" || *conns < 1 || *pipe < 1 || *r < 1 {
		fmt.Fprintln(os.Stderr, "bitload: -cmd SETBIT|GETBIT, and positive -c, -P and -r")
		os.Exit(2)
	}
	per := *n / *conns
	var wg sync.WaitGroup
	errs := make(chan error, *conns)
	start := time.Now()
	for i := range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(*addr, *cmd, *key, per, *pipe, *r, uint64(i)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	close(errs)
	if err := <-errs; err != nil {
		fmt.Fprintln(os.Stderr, "bitload:", err)
		os.Exit(1)
	}
	fmt.Printf("\"%s\",\"%.2f\"\n", *cmd, float64(per**conns)/secs)
}

func run(addr, cmd, key string, n, pipe int, r int64, seed uint64) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	rng := rand.New(rand.NewPCG(seed, 1))
	w, rd := bufio.NewWriter(nc), bufio.NewReader(nc)
	head := fmt.Sprintf("*%d\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", 3+b2i(cmd == "SETBIT"), len(cmd), cmd, len(key), key)
	for done := 0; done < n; {
		batch := min(pipe, n-done)
		for range batch {
			off := strconv.FormatInt(rng.Int64N(r), 10)
			w.WriteString(head)
			fmt.Fprintf(w, "$%d\r\n%s\r\n", len(off), off)
			if cmd == "SETBIT" {
				w.WriteString("$1\r\n1\r\n")
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		for range batch {
			line, err := rd.ReadString('\n')
			if err != nil {
				return err
			}
			if line[0] != ':' {
				return fmt.Errorf("%s: %q", cmd, line)
			}
		}
		done += batch
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
