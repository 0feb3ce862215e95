package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/childproc"
	"github.com/bloomd/bloom/internal/skipped"
)

// RequireEnv is the environment variable that turns a missing redis-server into a test failure.
const RequireEnv = "BLOOM_REQUIRE_REDIS"

// Options configure a server or cluster. The zero value (or nil) means no password and no extra
// configuration.
type Options struct {
	// Password, if set, is configured as requirepass (and as masterauth in a cluster).
	Password string

	// Args are extra redis-server arguments, such as "--maxmemory", "10mb".
	Args []string
}

// Server is one running redis-server process.
type Server struct {
	Addr     string // "127.0.0.1:port"
	Password string
	Dir      string // the server's working directory

	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
	mu     sync.Mutex
	closed bool
	owned  bool // Dir is ours to remove
	stderr *strings.Builder
	bin    string // the program and its arguments, for Restart
	args   []string
}

// Cluster is a Redis Cluster of masters only, every slot assigned.
type Cluster struct {
	Addrs    []string
	Password string
	Servers  []*Server
	dir      string
}

// Available reports whether redis-server and redis-cli are installed, and if not, why.
func Available() error {
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("redistest: %s not found in PATH (install Debian's redis-server and redis-tools)", bin)
		}
	}
	return nil
}

// Require skips tb when redis-server or redis-cli is missing, or fails it when the environment
// sets BLOOM_REQUIRE_REDIS=1.
func Require(tb testing.TB) {
	tb.Helper()
	if err := Available(); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("%v, and %s=1", err, RequireEnv)
		}
		skipped.Missing(tb, "redis-server/redis-cli", fmt.Sprintf("%v; skipping (set %s=1 to make this a failure)", err, RequireEnv))
	}
}

// New starts a standalone server for one test and stops it in tb's Cleanup.
func New(tb testing.TB, opt *Options) *Server {
	tb.Helper()
	Require(tb)
	s, err := Start(opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// NewCluster starts a cluster of the given number of masters for one test and stops it in tb's
// Cleanup.
func NewCluster(tb testing.TB, masters int, opt *Options) *Cluster {
	tb.Helper()
	Require(tb)
	c, err := StartCluster(masters, opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// Start starts a standalone redis-server on a free loopback port and waits until it answers.
// The caller must Close it.
func Start(opt *Options) (*Server, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	s, err := startIn(dir, opt, false)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.owned = true
	return s, nil
}

// startIn starts a server in dir, retrying with another port if the chosen one was taken
// between probing and binding.
func startIn(dir string, opt *Options, cluster bool) (*Server, error) {
	if opt == nil {
		opt = &Options{}
	}
	return startProgram("127.0.0.1", dir, opt.Password, cluster, func(port int) (string, []string) {
		return "redis-server", redisArgs(dir, port, opt, cluster)
	})
}

// startProgram starts a RESP server on a free port, retrying with another port if the chosen one
// was taken between probing and binding.
func startProgram(host, dir, password string, cluster bool, command func(port int) (string, []string)) (*Server, error) {
	var lastErr error
	for range 5 {
		port, err := freePort(cluster)
		if err != nil {
			return nil, err
		}
		bin, args := command(port)
		s, err := launch(host, dir, port, password, bin, args)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// StartProgram starts another RESP server, such as bloomd, on a free loopback port with the
// arguments args returns for that port and a fresh temporary directory, and waits until it
// answers PING (after AUTH password, if password is set). The caller must Close it.
func StartProgram(bin string, password string, args func(port int, dir string) []string) (*Server, error) {
	return StartProgramAt("127.0.0.1", bin, password, args)
}

// StartProgramAt is StartProgram for a server that listens on another loopback address, such
// as 127.0.0.2 (args must make it listen there): Addr and Do use host.
func StartProgramAt(host, bin string, password string, args func(port int, dir string) []string) (*Server, error) {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	s, err := startProgram(host, dir, password, false, func(port int) (string, []string) { return bin, args(port, dir) })
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.owned = true
	return s, nil
}

func redisArgs(dir string, port int, opt *Options, cluster bool) []string {
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", "",
		"--loglevel", "warning",
	}
	if opt.Password != "" {
		args = append(args, "--requirepass", opt.Password)
	}
	if cluster {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", fmt.Sprintf("nodes-%d.conf", port),
			"--cluster-node-timeout", "5000")
		if opt.Password != "" {
			args = append(args, "--masterauth", opt.Password)
		}
	}
	return append(args, opt.Args...)
}

func launch(host, dir string, port int, password, bin string, args []string) (*Server, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := childproc.Start(cmd); err != nil {
		return nil, fmt.Errorf("redistest: starting %s: %w", bin, err)
	}
	s := &Server{
		Addr:     net.JoinHostPort(host, strconv.Itoa(port)),
		Password: password,
		Dir:      dir,
		cmd:      cmd,
		done:     make(chan struct{}),
		stderr:   &stderr,
		bin:      bin,
		args:     args,
	}
	go func() { cmd.Wait(); close(s.done) }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("redistest: %s on port %d exited at start: %s", bin, port, strings.TrimSpace(stderr.String()))
		default:
		}
		if _, err := s.Do("PING"); err == nil {
			return s, nil
		} else if time.Now().After(deadline) {
			s.Close()
			return nil, fmt.Errorf("redistest: %s on port %d did not answer within 10s: %v", bin, port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Do sends one command to the server on a fresh connection (authenticating first when the server
// has a password) and returns the reply flattened to a string: simple strings, integers and bulk
// strings as their text, arrays as their elements joined by newlines. An error reply is returned
// as an error. It is for test set-up and inspection, not for load.
func (s *Server) Do(args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", s.Addr, 2*time.Second)
	if err != nil {
		return "", fmt.Errorf("redistest: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if s.Password != "" {
		if _, err := roundTrip(conn, r, "AUTH", s.Password); err != nil {
			return "", err
		}
	}
	return roundTrip(conn, r, args...)
}

func roundTrip(conn net.Conn, r *bufio.Reader, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", fmt.Errorf("redistest: %w", err)
	}
	return readReply(r)
}

// readReply reads one RESP2 reply. It trusts the server: this is a test helper talking to a real
// redis-server, not a parser of untrusted input.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("redistest: reading reply: %w", err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("redistest: empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redistest: %s", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		parts := make([]string, 0, n)
		for range n {
			p, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", fmt.Errorf("redistest: unexpected reply %q", line)
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, fmt.Errorf("redistest: %w", err)
		}
	}
	return n, nil
}

// Kill stops the server abruptly (SIGKILL), as a crash or a network partition would look to a
// client, and waits for it to exit. Its directory stays until Close.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
	}
	<-s.done
}

// Stop stops the server gracefully (SIGTERM) and waits for it to exit, killing it after 10
// seconds. Its directory stays until Close.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// Restart starts the server again after Kill, with the same program, arguments, port and
// directory, and waits until it answers PING.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	host, port, _ := net.SplitHostPort(s.Addr)
	p, _ := strconv.Atoi(port)
	ns, err := launch(host, s.Dir, p, s.Password, s.bin, s.args)
	if err != nil {
		return err
	}
	s.cmd, s.done, s.stderr = ns.cmd, ns.done, ns.stderr
	return nil
}

// Close stops the server and removes its directory (if Start created it). It is safe to call
// more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cmd.Process.Kill()
	<-s.done
	if s.owned {
		return os.RemoveAll(s.Dir)
	}
	return nil
}

// StartCluster starts masters redis-server processes in cluster mode, joins them with
// redis-cli --cluster create (every slot assigned, no replicas) and waits until every node
// reports cluster_state:ok. The caller must Close it.
func StartCluster(masters int, opt *Options) (*Cluster, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if masters < 3 {
		return nil, fmt.Errorf("redistest: a cluster needs at least 3 masters, not %d", masters)
	}
	if opt == nil {
		opt = &Options{}
	}
	dir, err := os.MkdirTemp("", "redistest-cluster-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	c := &Cluster{Password: opt.Password, dir: dir}
	fail := func(err error) (*Cluster, error) {
		c.Close()
		return nil, err
	}
	for i := range masters {
		sub := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(sub, 0o700); err != nil {
			return fail(fmt.Errorf("redistest: %w", err))
		}
		s, err := startIn(sub, opt, true)
		if err != nil {
			return fail(err)
		}
		c.Servers = append(c.Servers, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cmd := exec.Command("redis-cli", args...)
	if opt.Password != "" {
		// REDISCLI_AUTH keeps the password off the command line and its warning off stderr.
		cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+opt.Password)
	}
	cmd.Dir = dir
	if out, err := runTimeout(cmd, 60*time.Second); err != nil {
		return fail(fmt.Errorf("redistest: redis-cli --cluster create: %v: %s", err, out))
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range c.Servers {
		for {
			info, err := s.Do("CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:16384") {
				break
			}
			if time.Now().After(deadline) {
				return fail(fmt.Errorf("redistest: cluster at %s not ready within 30s: %v %q", s.Addr, err, info))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c, nil
}

func runTimeout(cmd *exec.Cmd, d time.Duration) (string, error) {
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := childproc.Start(cmd); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		return out.String(), fmt.Errorf("timed out after %v", d)
	}
}

// Close stops every node and removes the cluster's directory. It is safe to call more than once.
func (c *Cluster) Close() error {
	for _, s := range c.Servers {
		s.Close()
	}
	c.Servers = nil
	if c.dir == "" {
		return nil
	}
	dir := c.dir
	c.dir = ""
	return os.RemoveAll(dir)
}

// freePort returns a loopback TCP port that was free a moment ago. For cluster nodes the cluster
// bus port (port+10000) must be free too.
func freePort(cluster bool) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: finding a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !cluster {
			return port, nil
		}
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, errors.New("redistest: no free port pair for a cluster node")
}

// The shared servers of this test binary, started on first use and stopped by Main.
var shared struct {
	mu         sync.Mutex
	atExit     []func()
	server     *Server
	serverErr  error
	cluster    *Cluster
	clusterErr error
}

// SharedPassword is the requirepass of the server that Shared returns.
const SharedPassword = "redistest-secret"

// Shared returns the test binary's standalone server (with requirepass SharedPassword), starting
// it on first use. Tests share it, so each should use its own key names. The package's TestMain
// must call Main so that it is stopped.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	Require(tb)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.server == nil && shared.serverErr == nil {
		shared.server, shared.serverErr = Start(&Options{Password: SharedPassword})
	}
	if shared.serverErr != nil {
		tb.Fatal(shared.serverErr)
	}
	return shared.server
}

// SharedCluster returns the test binary's 3-master cluster (no password), starting it on first
// use. The package's TestMain must call Main so that it is stopped.
func SharedCluster(tb testing.TB) *Cluster {
	tb.Helper()
	Require(tb)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster == nil && shared.clusterErr == nil {
		shared.cluster, shared.clusterErr = StartCluster(3, nil)
	}
	if shared.clusterErr != nil {
		tb.Fatal(shared.clusterErr)
	}
	return shared.cluster
}

// Main runs the tests, stops the shared servers and prints the package's line of tests skipped
// for a missing program (see package skipped). Call it from TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	shared.mu.Lock()
	for i := len(shared.atExit) - 1; i >= 0; i-- {
		shared.atExit[i]()
	}
	if shared.server != nil {
		shared.server.Close()
	}
	if shared.cluster != nil {
		shared.cluster.Close()
	}
	shared.mu.Unlock()
	skipped.Report()
	os.Exit(code)
}

// AtExit registers f to run when Main's tests have finished, before the shared servers stop: the
// place to stop a server a package shares across its tests, or remove a binary it built.
func AtExit(f func()) {
	shared.mu.Lock()
	shared.atExit = append(shared.atExit, f)
	shared.mu.Unlock()
}
