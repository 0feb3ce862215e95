package server

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/internal/skipped"
)

// run runs a program with a deadline and returns its standard output.
func run(t *testing.T, stdin []byte, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errb.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%s %s: still running after 60s", name, strings.Join(args, " "))
	}
	return out.String()
}

// TestRedisCLI uses Debian's redis-cli as people do: one-shot commands, commands on standard
// input, RESP3 output, --scan, --pipe for mass insertion, and a password.
func TestRedisCLI(t *testing.T) {
	cli := needProgram(t, "redis-cli")
	s := startServer(t, func(c *Config) { c.Requirepass = "pw" })
	host, port, _ := strings.Cut(s.addr(), ":")
	base := []string{"-h", host, "-p", port, "-a", "pw", "--no-auth-warning"}
	rc := func(stdin []byte, args ...string) string {
		return run(t, stdin, cli, append(append([]string{}, base...), args...)...)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "PONG\n"},
		{[]string{"BF.RESERVE", "k", "0.01", "1000"}, "OK\n"},
		{[]string{"BF.MADD", "k", "a", "b", "a"}, "1\n1\n0\n"},
		{[]string{"BF.EXISTS", "k", "b"}, "1\n"},
		{[]string{"BF.INFO", "k", "CAPACITY"}, "1000\n"},
		{[]string{"BF.INFO", "k"}, "Capacity\n1000\nSize\n1480\nNumber of filters\n1\nNumber of items inserted\n2\nExpansion rate\n2\n"},
		{[]string{"-3", "BF.INFO", "k", "ITEMS"}, "Number of items inserted 2\n"},
		{[]string{"-3", "BF.EXISTS", "k", "zzz"}, "(false)\n"},
		{[]string{"BF.ADD", "k"}, "ERR wrong number of arguments for 'bf.add' command\n\n"},
		{[]string{"TYPE", "k"}, "MBbloom--\n"},
	} {
		if got := rc(nil, tt.args...); got != tt.want {
			t.Errorf("redis-cli %s:\n%q\nwant\n%q", strings.Join(tt.args, " "), got, tt.want)
		}
	}
	// Commands typed on standard input, one per line, including a quoted argument.
	got := rc([]byte("BF.ADD day:1 \"hello world\"\nBF.EXISTS day:1 \"hello world\"\nEXPIRE day:1 86400\nTTL day:1\n"))
	if got != "1\n1\n1\n86400\n" {
		t.Errorf("redis-cli with commands on stdin: %q", got)
	}
	for i := range 30 {
		rc(nil, "BF.ADD", fmt.Sprint("scan:", i), "x")
	}
	keys := strings.Fields(rc(nil, "--scan", "--pattern", "scan:*"))
	if len(keys) != 30 {
		t.Errorf("redis-cli --scan: %d keys: %v", len(keys), keys)
	}
	// Mass insertion with --pipe: 20000 commands in raw protocol.
	var raw []byte
	for i := range 20000 {
		raw = resp.AppendCommand(raw, []byte("BF.ADD"), []byte("bulk"), []byte(strconv.Itoa(i)))
	}
	if out := rc(raw, "--pipe"); !strings.Contains(out, "errors: 0, replies: 20000") {
		t.Errorf("redis-cli --pipe: %s", out)
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(rc(nil, "BF.CARD", "bulk"))); n < 19600 || n > 20000 { // about 1% are false positives of a default (1%) filter
		t.Errorf("BF.CARD after --pipe: %d", n)
	}
	if out := rc(nil, "INFO", "server"); !strings.Contains(out, "redis_version:7.0.15") {
		t.Errorf("INFO server: %s", out)
	}
	// Without the password, nothing but an error.
	out := run(t, nil, cli, "-h", host, "-p", port, "BF.ADD", "k", "x")
	if !strings.Contains(out, "NOAUTH") {
		t.Errorf("redis-cli without the password: %q", out)
	}
}

// python3 returns a Python with redis-py: Debian's /usr/bin/python3 first (python3-redis), then
// the one on PATH.
func python3(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import redis").Run() == nil {
			return path
		}
	}
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("no python3 with the redis module, and %s=1 requires it (apt-get install python3-redis)", requireEnv)
	}
	skipped.Missing(t, "python3-redis", "no python3 with the redis module (apt-get install python3-redis); skipping")
	return ""
}

// TestRedisPy runs testdata/python/client.py, which uses redis-py's BF and CF APIs.
func TestRedisPy(t *testing.T) {
	py := python3(t)
	for _, pass := range []string{"", "pw"} {
		s := startServer(t, func(c *Config) { c.Requirepass = pass })
		_, port, _ := strings.Cut(s.addr(), ":")
		args := []string{"testdata/python/client.py", port}
		if pass != "" {
			args = append(args, pass)
		}
		if out := run(t, nil, py, args...); out != "ok\n" {
			t.Fatalf("client.py: %q", out)
		}
	}
}
