//go:build unix

package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/bloomd/bloom/internal/childproc"
	"github.com/bloomd/bloom/internal/skipped"
)

// RequireEnv is the environment variable that turns a missing PostgreSQL into a test failure.
const RequireEnv = "BLOOM_REQUIRE_POSTGRES"

// Server is one running postgres process.
type Server struct {
	DSN  string // a pgx connection string for the database "postgres" as user "postgres"
	Addr string // "127.0.0.1:port"

	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
	output *strings.Builder
}

// binDir returns the directory holding initdb and postgres.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // the newest version first
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				return d, nil
			}
		}
	}
	return "", errors.New("pgtest: initdb and postgres not found in PATH or /usr/lib/postgresql/*/bin (install Debian's postgresql)")
}

// Available reports whether PostgreSQL's server binaries are installed, and if not, why.
func Available() error {
	_, err := binDir()
	return err
}

// Require skips tb when PostgreSQL is missing, or fails it when BLOOM_REQUIRE_POSTGRES=1.
func Require(tb testing.TB) {
	tb.Helper()
	if err := Available(); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("%v, and %s=1", err, RequireEnv)
		}
		skipped.Missing(tb, "postgres", fmt.Sprintf("%v; skipping (set %s=1 to make this a failure)", err, RequireEnv))
	}
}

// New starts a server for one test and stops it in tb's Cleanup.
func New(tb testing.TB) *Server {
	tb.Helper()
	Require(tb)
	s, err := Start()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Open returns a database/sql handle (driver pgx) of a server started by New, closed in tb's
// Cleanup.
func Open(tb testing.TB) *sql.DB {
	tb.Helper()
	s := New(tb)
	db, err := sql.Open("pgx", s.DSN)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// Start runs initdb and postgres and waits until the server accepts connections. The caller must
// Close it.
func Start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	cred, err := credential(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	initdb.Dir = dir
	initdb.SysProcAttr = procAttr(cred)
	initdb.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v: %s", err, out)
	}
	var lastErr error
	for range 3 { // the free port may be taken between our probe and postgres's bind
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s, err := launch(bin, dir, data, port, cred)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func launch(bin, dir, data string, port int, cred *syscall.Credential) (*Server, error) {
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-h", "127.0.0.1", "-k", "", "-F", "-c", "max_connections=50", "-c", "shared_buffers=16MB")
	cmd.Dir = dir
	cmd.SysProcAttr = procAttr(cred)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := childproc.Start(cmd); err != nil {
		return nil, fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	s := &Server{
		Addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:    dir,
		cmd:    cmd,
		done:   make(chan struct{}),
		output: &out,
	}
	s.DSN = fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", s.Addr)
	go func() { cmd.Wait(); close(s.done) }()

	db, err := sql.Open("pgx", s.DSN)
	if err != nil {
		s.stop()
		return nil, err
	}
	defer db.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("pgtest: postgres on port %d exited at start: %s", port, strings.TrimSpace(out.String()))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("pgtest: postgres on port %d did not answer within 20s: %v: %s", port, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// credential returns the user to run PostgreSQL as (nil: this process's own) and gives it dir.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root and found no user postgres or nobody to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// stop ends the server process and waits for it.
func (s *Server) stop() {
	s.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	s.stop()
	return os.RemoveAll(s.dir)
}
