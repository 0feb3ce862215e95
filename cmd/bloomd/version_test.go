package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOneVersion builds bloomd and bloom with one version set at link time, as the
// internal/version package documents, and finds that version in everything that reports it:
// bloomd --version, bloom --version, bloomd's start-up log and INFO server's bloomd_version,
// while redis_version stays the Redis release clients check.
func TestOneVersion(t *testing.T) {
	const v = "9.8.7-test"
	ldflags := "-X github.com/bloomd/bloom/internal/version.override=" + v
	dir := t.TempDir()
	for _, pkg := range []string{".", "../bloom"} {
		out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", dir+"/", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	bloomd, bloom := filepath.Join(dir, "bloomd"), filepath.Join(dir, "bloom")
	for bin, want := range map[string]string{
		bloomd: "bloomd v=" + v + " redis=7.0.15 bf=20628\n",
		bloom:  "bloom " + v + "\n",
	} {
		out, err := exec.Command(bin, "--version").Output()
		if err != nil || string(out) != want {
			t.Errorf("%s --version: %q, %v; want %q", filepath.Base(bin), out, err, want)
		}
	}

	d := start(t, bloomd, t.TempDir())
	info := infoServer(t, d.addr)
	for _, want := range []string{"\r\nbloomd_version:" + v + "\r\n", "\r\nredis_version:7.0.15\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO server lacks %q:\n%s", strings.TrimSpace(want), info)
		}
	}
	d.stop(t)
	if !strings.Contains(d.stderr.String(), "version="+v+" ") {
		t.Errorf("the start-up log does not say version=%s:\n%s", v, d.stderr)
	}
}

// infoServer returns the text of INFO server from the server at addr.
func infoServer(t *testing.T, addr string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(nc, "INFO server\r\n")
	r := bufio.NewReader(nc)
	var n int
	if _, err := fmt.Fscanf(r, "$%d\r\n", &n); err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	return string(b)
}
