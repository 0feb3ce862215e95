// Package rawserver starts the servers that bench's Go programs measure (bloomd, redis-server) on
// free loopback ports and talks RESP to them over plain connections, with no client library
// between the program and the server's bytes. The programs are short-lived measurements: every
// error ends the program with a message (Check), as a shell script's set -e would.
package rawserver

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bloomd/bloom/internal/resp"
)

// Check ends the program with err, if any, prefixed with the program's name.
func Check(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
		os.Exit(1)
	}
}

// FreePort returns a loopback TCP port that nothing listened on a moment ago.
func FreePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Check(err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// A Server is a server process started by Start.
type Server struct {
	Name string // what the measurements call it
	Dir  string // its --dir, which holds its log file too
	Port int
	Cmd  *exec.Cmd
}

// Start runs bin with args (which must include "--port", port, where port is a FreePort, and
// "--dir", dir) with its output in dir/NAME.log, and returns once it answers PING with PONG,
// with how long that took; a server that does not within a minute ends the program.
func Start(name, dir, bin string, port int, args ...string) (*Server, time.Duration) {
	s := &Server{Name: name, Dir: dir, Port: port, Cmd: exec.Command(bin, args...)}
	log, err := os.Create(filepath.Join(dir, name+".log"))
	Check(err)
	s.Cmd.Stdout, s.Cmd.Stderr = log, log
	t0 := time.Now()
	Check(s.Cmd.Start())
	for deadline := t0.Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if c, err := net.Dial("tcp", s.Addr()); err == nil {
			r := Do(c, "PING")
			c.Close()
			if r.Text() == "PONG" {
				return s, time.Since(t0)
			}
		}
	}
	Check(fmt.Errorf("%s on %s did not answer within a minute", name, dir))
	return nil, 0
}

// Addr is the server's loopback address.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// Stop kills the server (SIGKILL) and waits for it.
func (s *Server) Stop() {
	s.Cmd.Process.Signal(syscall.SIGKILL)
	s.Cmd.Wait()
}

// Conn opens a new connection to the server.
func (s *Server) Conn() net.Conn {
	c, err := net.Dial("tcp", s.Addr())
	Check(err)
	return c
}

// Info returns field of INFO section, or "".
func (s *Server) Info(section, field string) string {
	c := s.Conn()
	defer c.Close()
	for _, l := range strings.Split(Do(c, "INFO", section).Text(), "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == field {
			return v
		}
	}
	return ""
}

var (
	readersMu sync.Mutex
	readers   = map[net.Conn]*resp.Reader{} // each connection's reader, which keeps what it buffered
)

// Do sends one command on c and returns its reply.
func Do(c net.Conn, args ...string) resp.Value {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return DoBytes(c, bs...)
}

// DoBytes sends one command of byte arguments on c and returns its reply (bulk strings up to
// 2 GiB).
func DoBytes(c net.Conn, args ...[]byte) resp.Value {
	_, err := c.Write(resp.AppendCommand(nil, args...))
	Check(err)
	readersMu.Lock()
	r := readers[c]
	if r == nil {
		r = resp.NewReader(bufio.NewReaderSize(c, 1<<20))
		r.Limits.MaxBulk = 1 << 31
		readers[c] = r
	}
	readersMu.Unlock()
	v, err := r.ReadReply()
	Check(err)
	return v
}

// Fill makes the filter f on s (BF.RESERVE f 0.01 capacity NONSCALING) and sets its bits at
// random from a fixed seed through BF.SCANDUMP's chunks and BF.LOADCHUNK: half of them set, as
// in a full filter, so that nothing compresses.
func Fill(s *Server, capacity uint64) {
	c := s.Conn()
	defer c.Close()
	if v := Do(c, "BF.RESERVE", "f", "0.01", strconv.FormatUint(capacity, 10), "NONSCALING"); v.IsError() {
		Check(fmt.Errorf("%s: BF.RESERVE: %s", s.Name, v.Text()))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	it := Do(c, "BF.SCANDUMP", "f", "0").Elems[0].Int
	for {
		v := Do(c, "BF.SCANDUMP", "f", strconv.FormatInt(it, 10))
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
		if v := DoBytes(c, []byte("BF.LOADCHUNK"), []byte("f"), []byte(strconv.FormatInt(next, 10)), data); v.IsError() {
			Check(fmt.Errorf("%s: BF.LOADCHUNK: %s", s.Name, v.Text()))
		}
		it = next
	}
}
