package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/internal/skipped"
)

// requireEnv makes a missing external program fail the test instead of skipping it (CI sets it).
const requireEnv = "BLOOM_REQUIRE_REDIS"

// needProgram returns the path of an external program, or skips the test (fails it under
// BLOOM_REQUIRE_REDIS=1) if it is not installed.
func needProgram(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("%s is not installed, and %s=1 requires it (apt-get install redis-server redis-tools python3-redis)", name, requireEnv)
		}
		skipped.Missing(t, name, fmt.Sprintf("%s is not installed; skipping (set %s=1 to make this a failure)", name, requireEnv))
	}
	return p
}

// startServer runs a bloomd in this process on a free loopback port.
func startServer(t testing.TB, mod func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Logger = discardLogger()
	cfg.EventLoops = testLoops
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	serveFreePort(t, s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

// serveFreePort makes s serve a listener on a free loopback port.
func serveFreePort(t testing.TB, s *Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.addListener(ln); err != nil {
		t.Fatal(err)
	}
	if err := s.initCluster(); err != nil { // a cluster node knows its port from the listener
		t.Fatal(err)
	}
	s.startCluster()
	go s.acceptLoop(ln)
}

// testLoops is the io-threads setting of the servers tests start; forEachIOMode runs a test in
// each of ioModes.
var testLoops = 0

func forEachIOMode(t *testing.T, test func(t *testing.T)) {
	for _, m := range ioModes {
		if m.loops >= 0 && !loopsSupported {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			defer func(old int, ring, waiting bool) { testLoops, useRing, useWaiting = old, ring, waiting }(testLoops, useRing, useWaiting)
			testLoops, useRing, useWaiting = m.loops, m.ring, m.waiting
			test(t)
		})
	}
}

// ioModes are the ways of serving connections that forEachIOMode runs tests in: event loops
// that wait on io_uring (where the kernel can, and otherwise as "loops-batched" does), event
// loops in Go's poller with each iteration's reads and writes batched through io_uring (where
// the kernel has it), with a system call each, and a goroutine per connection.
var ioModes = []struct {
	name          string
	loops         int
	ring, waiting bool
}{
	{"loops", 0, true, true},
	{"loops-batched", 0, true, false},
	{"loops-syscalls", 0, false, false},
	{"goroutines", -1, true, true},
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// addr returns the address of the server's first listener.
func (s *Server) addr() string { return s.Addrs()[0].String() }

// A rawClient speaks RESP over one connection and records the exact bytes of each reply.
type rawClient struct {
	t   testing.TB
	nc  net.Conn
	rd  *resp.Reader
	rec *recorder
}

type recorder struct {
	r   io.Reader
	buf []byte
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

func dial(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	rec := &recorder{r: nc}
	return &rawClient{t: t, nc: nc, rd: resp.NewReader(rec), rec: rec}
}

// send writes one command as a RESP array.
func (c *rawClient) send(args ...[]byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(resp.AppendCommand(nil, args...)); err != nil {
		c.t.Fatal(err)
	}
}

// read reads one reply and returns its exact bytes with its value.
func (c *rawClient) read() ([]byte, resp.Value) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	v, err := c.rd.ReadReply()
	if err != nil {
		c.t.Fatalf("reading reply: %v", err)
	}
	n := len(c.rec.buf) - c.rd.Buffered()
	raw := bytes.Clone(c.rec.buf[:n])
	c.rec.buf = c.rec.buf[n:]
	return raw, v
}

// do sends a command given as strings and returns its reply.
func (c *rawClient) do(args ...string) resp.Value {
	c.t.Helper()
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	c.send(bs...)
	_, v := c.read()
	return v
}

// A block is one command of a transcript and the reply expected for it.
type block struct {
	file    string
	line    int
	cmd     string // the "> ..." line without "> "
	args    [][]byte
	reply   []byte   // expected bytes
	notes   []string // "# ..." lines before the block
	replyTx string   // the reply lines as written
}

// readTranscript parses a transcript file (format in testdata/redisbloom/README.md). Lines
// starting with "#" before a block are notes on it.
func readTranscript(t testing.TB, path string) []block {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseTranscript(path, string(data))
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

func parseTranscript(name, data string) ([]block, error) {
	var blocks []block
	lines := strings.Split(strings.TrimRight(data, "\n"), "\n")
	var notes []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case l == "":
			continue
		case strings.HasPrefix(l, "#"):
			notes = append(notes, strings.TrimSpace(strings.TrimPrefix(l, "#")))
			continue
		case !strings.HasPrefix(l, "> "):
			return nil, fmt.Errorf("%s:%d: expected a command line (> ...), got %q", name, i+1, l)
		}
		b := block{file: name, line: i + 1, cmd: l[2:], notes: notes}
		notes = nil
		for _, a := range strings.Split(l[2:], " ") {
			arg, err := decodeWord(a)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", name, i+1, err)
			}
			b.args = append(b.args, arg)
		}
		var reply []string
		for i+1 < len(lines) && lines[i+1] != "" {
			i++
			reply = append(reply, lines[i])
		}
		b.replyTx = strings.Join(reply, "\n")
		raw, err := encodeReplyLines(reply)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, b.line, err)
		}
		b.reply = raw
		blocks = append(blocks, b)
	}
	return blocks, nil
}

func decodeWord(w string) ([]byte, error) {
	if h, ok := strings.CutPrefix(w, "hex:"); ok {
		return hex.DecodeString(h)
	}
	return []byte(w), nil
}

// encodeReplyLines rebuilds the reply bytes from its lines: joined with CRLF, with the payload
// line after each bulk header decoded from hex when it starts with "hex:".
func encodeReplyLines(lines []string) ([]byte, error) {
	var out []byte
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		out = append(out, l...)
		out = append(out, '\r', '\n')
		if l == "" || !strings.ContainsRune("$=!", rune(l[0])) {
			continue
		}
		if n, err := strconv.Atoi(l[1:]); err != nil || n < 0 {
			continue
		}
		if i+1 >= len(lines) {
			return nil, fmt.Errorf("bulk header %q without payload", l)
		}
		i++
		p, err := decodeWord(lines[i])
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
		out = append(out, '\r', '\n')
	}
	return out, nil
}

// formatReply writes reply bytes back in transcript form, for failure messages.
func formatReply(raw []byte) string {
	r := resp.NewReader(bytes.NewReader(raw))
	var sb strings.Builder
	for {
		v, err := r.ReadReply()
		if err != nil {
			break
		}
		writeValueLines(&sb, v)
	}
	return strings.TrimRight(sb.String(), "\n")
}

func writeValueLines(sb *strings.Builder, v resp.Value) {
	enc := resp.AppendValue(nil, resp.Value{Kind: v.Kind, Str: v.Str, Int: v.Int, Null: v.Null, Elems: nil})
	switch {
	case v.Null || v.Kind == '_':
		sb.WriteString(strings.TrimRight(string(enc), "\r\n") + "\n")
	case v.Kind == '$' || v.Kind == '=' || v.Kind == '!':
		fmt.Fprintf(sb, "%c%d\n", v.Kind, len(v.Str))
		if printableASCII(v.Str) {
			sb.WriteString(string(v.Str) + "\n")
		} else {
			sb.WriteString("hex:" + hex.EncodeToString(v.Str) + "\n")
		}
	case v.Kind == '*' || v.Kind == '%' || v.Kind == '~' || v.Kind == '>':
		n := len(v.Elems)
		if v.Kind == '%' {
			n /= 2
		}
		fmt.Fprintf(sb, "%c%d\n", v.Kind, n)
		for _, e := range v.Elems {
			writeValueLines(sb, e)
		}
	default:
		sb.WriteString(strings.TrimRight(string(enc), "\r\n") + "\n")
	}
}

func printableASCII(b []byte) bool {
	if len(b) == 0 || bytes.HasPrefix(b, []byte("hex:")) {
		return false
	}
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
