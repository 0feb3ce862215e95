package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// build compiles bloomd once for the tests of this package.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bloomd")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
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

// TestBloomd runs the real binary: it serves, shuts down cleanly on SIGTERM, and reports a taken
// port naming --port.
func TestBloomd(t *testing.T) {
	bin := build(t)
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--loglevel", "notice")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if line, err := roundTrip(addr, "PING"); err == nil && line == "+PONG\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bloomd did not answer PING within 10s:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if line, _ := roundTrip(addr, "BF.ADD k x"); line != ":1\r\n" {
		t.Fatalf("BF.ADD: %q", line)
	}

	// A second bloomd on the same port fails, naming the flag to change.
	out, err := exec.Command(bin, "--port", fmt.Sprint(port)).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "--port") {
		t.Fatalf("second bloomd on port %d: %v\n%s", port, err, out)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("bloomd exited with %v after SIGTERM:\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("bloomd still running 15s after SIGTERM")
	}
	for _, want := range []string{"ready to accept connections", "received shutdown signal", "ready to exit"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestBloomdCommandLine checks --help, a bad flag and a config file.
func TestBloomdCommandLine(t *testing.T) {
	bin := build(t)
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Usage: bloomd") {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "--prot", "1").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "unknown option --prot") {
		t.Fatalf("--prot: %v\n%s", err, out)
	}
	conf := filepath.Join(t.TempDir(), "bloomd.conf")
	os.WriteFile(conf, []byte("port 0\n"), 0o644)
	out, err = exec.Command(bin, conf).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "nothing to listen on") {
		t.Fatalf("config file with port 0: %v\n%s", err, out)
	}
}
