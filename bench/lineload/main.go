// Command lineload sends one command over and over to a RESP server from several connections,
// pipelined, and prints the commands per second. Every reply must be one line (an integer, a
// simple string or an error such as -MOVED), which is how replies are counted without parsing;
// unlike redis-benchmark, an error reply is counted rather than fatal, so that it measures what
// answering -MOVED costs (bench/cluster.sh).
//
//	go run ./lineload -addr 127.0.0.1:7000 -c 10 -P 1 -n 200000 BF.EXISTS key item
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	conns := flag.Int("c", 10, "connections")
	depth := flag.Int("P", 1, "commands per pipelined batch")
	n := flag.Int("n", 100000, "commands in all")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: lineload [-addr host:port] [-c conns] [-P depth] [-n total] COMMAND ARGS...")
		os.Exit(2)
	}
	var cmd []byte
	cmd = append(cmd, '*')
	cmd = strconv.AppendInt(cmd, int64(flag.NArg()), 10)
	cmd = append(cmd, "\r\n"...)
	for _, a := range flag.Args() {
		cmd = append(cmd, '$')
		cmd = strconv.AppendInt(cmd, int64(len(a)), 10)
		cmd = append(cmd, "\r\n"...)
		cmd = append(cmd, a...)
		cmd = append(cmd, "\r\n"...)
	}
	var batch []byte
	for range *depth {
		batch = append(batch, cmd...)
	}
	per := max(*n / *conns / *depth, 1)
	var wg sync.WaitGroup
	errs := make(chan error, *conns)
	start := time.Now()
	for range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", *addr)
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			rd := bufio.NewReader(nc)
			for range per {
				if _, err := nc.Write(batch); err != nil {
					errs <- err
					return
				}
				for range *depth {
					if _, err := rd.ReadSlice('\n'); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		fmt.Fprintln(os.Stderr, "lineload:", err)
		os.Exit(1)
	}
	total := per * *depth * *conns
	fmt.Printf("%.0f\n", float64(total)/time.Since(start).Seconds())
}
