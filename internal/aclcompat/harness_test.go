package aclcompat

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/internal/server"
	"github.com/bloomd/bloom/internal/servertest"
	"github.com/bloomd/bloom/internal/skipped"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// startBloomd runs a bloomd in this process (servertest.Start) and returns its address. mod may
// change the settings first.
func startBloomd(t testing.TB, mod func(*server.Config)) string {
	t.Helper()
	_, addr := servertest.Start(t, &servertest.Options{Config: mod})
	return addr
}

// startRedis runs a redis-server 7.0 for one test (skipping it when Redis is not installed, see
// redistest.Require) and returns its address.
func startRedis(t testing.TB, args ...string) string {
	t.Helper()
	return redistest.New(t, &redistest.Options{Args: args}).Addr
}

// A conn is one RESP connection to a server, for sending the same commands to Redis and bloomd.
type conn struct {
	t    testing.TB
	name string // "redis" or "bloomd", for messages
	nc   net.Conn
	rd   *resp.Reader
}

func dial(t testing.TB, name, addr string) *conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &conn{t: t, name: name, nc: nc, rd: resp.NewReader(nc)}
}

// errClosed reports that the server closed the connection instead of replying.
var errClosed = errors.New("connection closed by the server")

// send sends one command and returns its reply, or errClosed when the server closed the
// connection. Any other failure ends the test.
func (c *conn) send(args ...string) (resp.Value, error) {
	c.t.Helper()
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(resp.AppendCommand(nil, bs...)); err != nil {
		if isClosed(err) {
			return resp.Value{}, errClosed
		}
		c.t.Fatalf("%s: writing %q: %v", c.name, args, err)
	}
	return c.read()
}

// read reads one reply (or push message).
func (c *conn) read() (resp.Value, error) {
	c.t.Helper()
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	v, err := c.rd.ReadReply()
	if err != nil {
		if isClosed(err) {
			return resp.Value{}, errClosed
		}
		c.t.Fatalf("%s: reading a reply: %v", c.name, err)
	}
	return v, nil
}

func isClosed(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "connection reset")
}

// do sends a command that must get a reply (not a closed connection) and returns it.
func (c *conn) do(args ...string) resp.Value {
	c.t.Helper()
	v, err := c.send(args...)
	if err != nil {
		c.t.Fatalf("%s: %q: %v", c.name, args, err)
	}
	return v
}

// must sends a command that must succeed.
func (c *conn) must(args ...string) resp.Value {
	c.t.Helper()
	v := c.do(args...)
	if v.IsError() {
		c.t.Fatalf("%s: %q: %s", c.name, args, v.Str)
	}
	return v
}

// A pair is one connection to Redis and one to bloomd, used in lockstep.
type pair struct{ redis, bloomd *conn }

func dialPair(t testing.TB, redisAddr, bloomdAddr string) pair {
	t.Helper()
	return pair{dial(t, "redis", redisAddr), dial(t, "bloomd", bloomdAddr)}
}

// must sends a set-up command to both servers; it must succeed on both.
func (p pair) must(args ...string) {
	p.redis.t.Helper()
	p.redis.must(args...)
	p.bloomd.must(args...)
}

// outcome describes a reply for comparison: the exact text of an error or of a closed
// connection, the reply itself otherwise.
func outcome(v resp.Value, err error) string {
	if err != nil {
		return "(closed)"
	}
	return v.String()
}

// isDenial reports whether an error reply is one of the access-control errors.
func isDenial(v resp.Value) bool {
	if !v.IsError() {
		return false
	}
	for _, p := range []string{"NOPERM", "NOAUTH", "WRONGPASS", "EXECABORT"} {
		if strings.HasPrefix(string(v.Str), p) {
			return true
		}
	}
	return false
}

// decision reduces a reply to what access control decided: the exact error text of a denial,
// "(closed)" when the server closed the connection, and "allowed" for any other reply (whose
// content depends on data, not permissions).
func decision(v resp.Value, err error) string {
	switch {
	case err != nil:
		return "(closed)"
	case isDenial(v):
		return "(error) " + string(v.Str)
	default:
		return "allowed"
	}
}

// needProgram returns the path of an outside program, or skips the test when it is missing
// (fails it when the environment sets requireVar to 1).
func needProgram(t testing.TB, name, requireVar, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(requireVar) == "1" {
			t.Fatalf("%s is not installed, and %s=1 requires it (apt-get install %s)", name, requireVar, pkg)
		}
		skipped.Missing(t, name, fmt.Sprintf("%s is not installed (apt-get install %s); skipping (set %s=1 to make this a failure)", name, pkg, requireVar))
	}
	return p
}
