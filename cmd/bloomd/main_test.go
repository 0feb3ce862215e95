package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// build compiles bloomd for a test as README.md says to build it: without cgo.
func build(t *testing.T) string {
	t.Helper()
	return buildWith(t, "CGO_ENABLED=0")
}

// buildWith compiles bloomd with the given environment variables added.
func buildWith(t *testing.T, env ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bloomd")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build (%s): %v\n%s", env, err, out)
	}
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// roundTrip sends one inline command and returns the first reply line.
func roundTrip(addr, cmd string) (string, error) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(nc, "%s\r\n", cmd)
	return bufio.NewReader(nc).ReadString('\n')
}

// A daemon is one bloomd process.
type daemon struct {
	cmd    *exec.Cmd
	addr   string
	stderr *bytes.Buffer
	exited chan error
}

// start runs bin on a free port with its data files in dir and waits until it answers PING.
func start(t *testing.T, bin, dir string, args ...string) *daemon {
	t.Helper()
	return startWrapped(t, nil, bin, dir, args...)
}

// startWrapped is start with bin run by a wrapper command (such as prlimit) given as its
// argv, which ends in the argument that precedes bin.
func startWrapped(t *testing.T, wrapper []string, bin, dir string, args ...string) *daemon {
	t.Helper()
	port := freePort(t)
	d := &daemon{addr: fmt.Sprintf("127.0.0.1:%d", port), stderr: new(bytes.Buffer), exited: make(chan error, 1)}
	argv := append(append(slices.Clone(wrapper), bin, "--port", fmt.Sprint(port), "--dir", dir), args...)
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() { d.cmd.Process.Kill() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if line, err := roundTrip(d.addr, "PING"); err == nil && line == "+PONG\r\n" {
			return d
		}
		select {
		case err := <-d.exited:
			t.Fatalf("bloomd exited while starting: %v\n%s", err, d.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("bloomd did not answer PING within 10s:\n%s", d.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.exited:
		if err != nil {
			t.Fatalf("bloomd exited with %v after SIGTERM:\n%s", err, d.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("bloomd still running 15s after SIGTERM")
	}
}

// TestBloomd runs the real binary: it serves, reports a taken port naming --port, shuts down
// cleanly on SIGTERM, and finds its filters again when it restarts on the same directory.
func TestBloomd(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	d := start(t, bin, dir, "--loglevel", "notice")
	if line, _ := roundTrip(d.addr, "BF.ADD k x"); line != ":1\r\n" {
		t.Fatalf("BF.ADD: %q", line)
	}

	// A second bloomd on the same port fails, naming the flag to change.
	port := d.addr[strings.LastIndexByte(d.addr, ':')+1:]
	out, err := exec.Command(bin, "--port", port, "--dir", t.TempDir()).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "--port") {
		t.Fatalf("second bloomd on port %s: %v\n%s", port, err, out)
	}
	// A second bloomd on the same data directory fails, naming it.
	out, err = exec.Command(bin, "--port", fmt.Sprint(freePort(t)), "--dir", dir).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "another bloomd uses the data files in "+dir) {
		t.Fatalf("second bloomd on dir %s: %v\n%s", dir, err, out)
	}

	d.stop(t)
	for _, want := range []string{"ready to accept connections", "data loaded", "received shutdown signal", "snapshot saved", "ready to exit"} {
		if !strings.Contains(d.stderr.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, d.stderr)
		}
	}

	d = start(t, bin, dir)
	for cmd, want := range map[string]string{"BF.EXISTS k x": ":1\r\n", "BF.EXISTS k y": ":0\r\n", "BF.CARD k": ":1\r\n"} {
		if line, err := roundTrip(d.addr, cmd); line != want {
			t.Errorf("after restart, %s: %q %v (want %q)", cmd, line, err, want)
		}
	}
	d.stop(t)
}

// TestCheckAOF damages a log of a killed bloomd: the restart refuses to start, naming the file,
// the offset and the repair; "bloomd check-aof" reports the damage (exit 1), --fix truncates the
// log with the count of records lost; then bloomd starts with every record before the damage.
func TestCheckAOF(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	d := start(t, bin, dir, "--save", "", "--appendfsync", "always")
	for i := range 10 {
		if line, _ := roundTrip(d.addr, fmt.Sprintf("BF.ADD k item%d", i)); line != ":1\r\n" {
			t.Fatalf("BF.ADD: %q", line)
		}
	}
	d.cmd.Process.Kill()
	<-d.exited

	log := filepath.Join(dir, "appendonly.aof.1")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// Flip a byte in the middle of the log: not a torn tail, so not repaired silently.
	b[len(b)*2/3] ^= 0x40
	if err := os.WriteFile(log, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--port", fmt.Sprint(freePort(t)), "--dir", dir).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), log) ||
		!strings.Contains(string(out), "offset") || !strings.Contains(string(out), "check-aof --fix") {
		t.Fatalf("bloomd on a damaged log: %v\n%s", err, out)
	}

	out, err = exec.Command(bin, "check-aof", log).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "damage at byte offset") {
		t.Fatalf("check-aof: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "check-aof", "--fix", log).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Records lost:") {
		t.Fatalf("check-aof --fix: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "check-aof", log).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("check-aof after --fix: %v\n%s", err, out)
	}

	d = start(t, bin, dir, "--save", "")
	line, _ := roundTrip(d.addr, "BF.CARD k")
	var card int
	if _, err := fmt.Sscanf(line, ":%d", &card); err != nil || card < 1 || card >= 10 {
		t.Fatalf("BF.CARD after the repair: %q (want the items before the damage: 1 to 9)", line)
	}
	for i := range card {
		if line, _ := roundTrip(d.addr, fmt.Sprintf("BF.EXISTS k item%d", i)); line != ":1\r\n" {
			t.Errorf("item%d, before the damage, is missing after the repair: %q", i, line)
		}
	}
	d.stop(t)
}

// TestBloomdCommandLine checks --help and --version (standard output, exit 0), a bad setting
// (one line naming it on standard error, exit 1), a config file, and that "bloomd version" is
// the version rather than a config file name.
func TestBloomdCommandLine(t *testing.T) {
	bin := build(t)
	run := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir()
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		if out, errOut, code := run(args...); code != 0 || !strings.HasPrefix(out, "Usage: bloomd") || errOut != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if out, errOut, code := run(args...); code != 0 || !strings.HasPrefix(out, "bloomd v=") || errOut != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	for args, want := range map[string]string{
		"--prot 1":       "bloomd: unknown setting --prot; did you mean --port? (bloomd --help lists every setting)\n",
		"--port 99999":   "bloomd: port: argument must be an integer between 0 and 65535\n",
		"--appendonly x": "bloomd: appendonly: argument must be 'yes' or 'no'\n",
	} {
		if out, errOut, code := run(strings.Fields(args)...); code != 1 || out != "" || errOut != want {
			t.Errorf("%s: exit %d, stdout %q, stderr %q (want %q)", args, code, out, errOut, want)
		}
	}
	conf := filepath.Join(t.TempDir(), "bloomd.conf")
	os.WriteFile(conf, []byte("port 0\n"), 0o644)
	if _, errOut, code := run(conf); code != 1 || !strings.Contains(errOut, "nothing to listen on") {
		t.Fatalf("config file with port 0: exit %d\n%s", code, errOut)
	}
}

// TestBloomdStartLog: a --dir that does not exist is created, and the start-up log names the
// version, the pid, the absolute data directory, the persistence settings, the bind addresses
// and whether a password is set.
func TestBloomdStartLog(t *testing.T) {
	bin := build(t)
	dir := filepath.Join(t.TempDir(), "new", "data")
	d := start(t, bin, dir, "--appendfsync", "always", "--save", "60 5")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("--dir %s was not created: %v", dir, err)
	}
	d.stop(t)
	log := d.stderr.String()
	for _, want := range []string{
		"created the data directory", "version=", fmt.Sprintf("pid=%d", d.cmd.Process.Pid), "dir=" + dir,
		"appendonly=yes", "appendfsync=always", `save="60 5"`, "bind=127.0.0.1", "password=no", "protected-mode=yes",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("start-up log lacks %q:\n%s", want, log)
		}
	}
}

// TestDebugPort checks that --debug-port serves Go's profiles on loopback, says so in the log,
// and that the port is off by default; that it refuses a Host that is not a loopback name (DNS
// rebinding) unless --http-allowed-hosts lists it; and that its /debug/pprof/cmdline and the
// log show no password of the command line.
func TestDebugPort(t *testing.T) {
	bin := build(t)
	off := start(t, bin, t.TempDir())
	if line, err := roundTrip(off.addr, "CONFIG GET debug-port"); err != nil || line != "*2\r\n" {
		t.Fatalf("CONFIG GET debug-port: %q, %v", line, err)
	}
	off.stop(t) // then its log is complete
	if strings.Contains(off.stderr.String(), "pprof") {
		t.Errorf("the debug port is on by default:\n%s", off.stderr)
	}

	port := freePort(t)
	d := start(t, bin, t.TempDir(), "--debug-port", fmt.Sprint(port), "--http-allowed-hosts", "profiler.internal",
		"--masterauth", "ma-SECRET", "--masteruser=mu-SECRET", "--user", "app on >app-SECRET ~* +@all")
	get := func(path, host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	if code, body := get("/debug/pprof/goroutine?debug=1", ""); code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Fatalf("GET /debug/pprof/goroutine: status %d\n%s", code, body)
	}
	for host, want := range map[string]int{"rebound.example": 403, fmt.Sprintf("localhost:%d", port): 200, "profiler.internal": 200} {
		if code, _ := get("/debug/pprof/", host); code != want {
			t.Errorf("GET /debug/pprof/ with Host %s: %d, want %d", host, code, want)
		}
	}
	code, cmdline := get("/debug/pprof/cmdline", "")
	if code != 200 || strings.Contains(cmdline, "SECRET") || !strings.Contains(cmdline, "--masterauth\x00(redacted)") || !strings.Contains(cmdline, "app on (redacted) ~*") {
		t.Errorf("/debug/pprof/cmdline: %d %q", code, cmdline)
	}
	d.stop(t)
	if strings.Contains(d.stderr.String(), "SECRET") {
		t.Errorf("the log shows a password:\n%s", d.stderr)
	}
	if want := fmt.Sprintf("127.0.0.1:%d/debug/pprof/", port); !strings.Contains(d.stderr.String(), want) {
		t.Errorf("the log does not name %s:\n%s", want, d.stderr)
	}
}
