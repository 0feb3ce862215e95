package main

import (
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

// TestLogfileLine: with logfile set, bloomd's standard error gets one line, where the log goes;
// the log itself goes to the file.
func TestLogfileLine(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	logfile := filepath.Join(dir, "bloomd.log")
	d := start(t, bin, dir, "--logfile", logfile)
	d.stop(t)
	want := fmt.Sprintf("bloomd: logging to %s (pid %d)\n", logfile, d.cmd.Process.Pid)
	if got := d.stderr.String(); got != want {
		t.Errorf("standard error:\n%q\nwant:\n%q", got, want)
	}
	if b, _ := os.ReadFile(logfile); !strings.Contains(string(b), "ready to accept connections") || !strings.Contains(string(b), "ready to exit") {
		t.Errorf("log file:\n%s", b)
	}
}

// TestShutdownOnSignal: shutdown-on-sigterm nosave exits without the last snapshot that the
// save rules would take, and shutdown-on-sigint save takes one without save rules, as Redis 7.0
// does; the default follows the save rules.
func TestShutdownOnSignal(t *testing.T) {
	bin := build(t)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		args []string
		save bool
	}{
		{"sigterm nosave", syscall.SIGTERM, []string{"--save", "3600 1", "--shutdown-on-sigterm", "nosave"}, false},
		{"sigint save", syscall.SIGINT, []string{"--save", "", "--shutdown-on-sigint", "save now"}, true},
		{"sigint default, save rules", syscall.SIGINT, []string{"--save", "3600 1", "--shutdown-on-sigterm", "nosave"}, true},
		{"sigterm default, no save rules", syscall.SIGTERM, []string{"--save", "", "--shutdown-on-sigint", "save"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := start(t, bin, dir, append([]string{"--appendonly", "no"}, tc.args...)...)
			if line, _ := roundTrip(d.addr, "BF.ADD k x"); line != ":1\r\n" {
				t.Fatalf("BF.ADD: %q", line)
			}
			d.cmd.Process.Signal(tc.sig)
			select {
			case err := <-d.exited:
				if err != nil {
					t.Fatalf("exit: %v\n%s", err, d.stderr)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("bloomd still running 15s after the signal")
			}
			_, err := os.Stat(filepath.Join(dir, "dump.bdb"))
			if saved := err == nil; saved != tc.save {
				t.Errorf("snapshot saved: %v, want %v\n%s", saved, tc.save, d.stderr)
			}
			if want := fmt.Sprintf("signal=%s save=%v", tc.sig, tc.save); !strings.Contains(d.stderr.String(), want) {
				t.Errorf("log lacks %q:\n%s", want, d.stderr)
			}
		})
	}
}

// TestSalvageSnapshot damages one filter of a snapshot holding several: bloomd refuses to start
// and names the repair; "bloomd check-aof" recognises the snapshot and names the lost key;
// --fix keeps the damaged file beside it and writes every other key, which bloomd then serves
// with all its items.
func TestSalvageSnapshot(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	d := start(t, bin, dir, "--appendonly", "no", "--save", "")
	for _, cmd := range []string{"BF.RESERVE urls 0.01 1000", "BF.RESERVE emails 0.001 5000", "BF.RESERVE phones 0.01 100",
		"CF.RESERVE seen 1000", "SET note hello"} {
		if line, _ := roundTrip(d.addr, cmd); line != "+OK\r\n" {
			t.Fatalf("%s: %q", cmd, line)
		}
	}
	for i := range 50 {
		for _, cmd := range []string{"BF.ADD urls u%d", "BF.ADD emails e%d", "BF.ADD phones p%d", "CF.ADD seen s%d"} {
			if line, _ := roundTrip(d.addr, fmt.Sprintf(cmd, i)); line != ":1\r\n" {
				t.Fatalf("%s: %q", cmd, line)
			}
		}
	}
	if line, _ := roundTrip(d.addr, "SAVE"); line != "+OK\r\n" {
		t.Fatalf("SAVE: %q", line)
	}
	d.stop(t)

	// Flip a bit of the first piece of "emails", past its key and header (whose checksum
	// would hide the key's name).
	snap := filepath.Join(dir, "dump.bdb")
	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(string(data), "emails")
	if at < 0 {
		t.Fatal("no key emails in the snapshot")
	}
	data[at+len("emails")+(20+53)+4+1] ^= 1
	os.WriteFile(snap, data, 0o644)

	out, err := exec.Command(bin, "--port", fmt.Sprint(freePort(t)), "--dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "bloomd check-aof --fix "+snap) {
		t.Fatalf("bloomd on a damaged snapshot: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "check-aof", snap).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "a bloomd snapshot") ||
		!strings.Contains(string(out), `Lost: "emails".`) || !strings.Contains(string(out), "Intact: 4 keys (2 Bloom filters, 1 cuckoo filter, 1 string)") {
		t.Fatalf("check-aof on the snapshot: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "check-aof", "--fix", snap).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kept as "+snap+".damaged") {
		t.Fatalf("check-aof --fix: %v\n%s", err, out)
	}
	if kept, _ := os.ReadFile(snap + ".damaged"); string(kept) != string(data) {
		t.Fatal("the damaged snapshot is not kept as it was")
	}

	d = start(t, bin, dir, "--appendonly", "no", "--save", "")
	for i := range 50 {
		for _, cmd := range []string{"BF.EXISTS urls u%d", "BF.EXISTS phones p%d", "CF.EXISTS seen s%d"} {
			if line, _ := roundTrip(d.addr, fmt.Sprintf(cmd, i)); line != ":1\r\n" {
				t.Fatalf("after the repair, %s: %q", fmt.Sprintf(cmd, i), line)
			}
		}
	}
	for cmd, want := range map[string]string{"EXISTS emails": ":0\r\n", "GET note": "$5\r\n", "DBSIZE": ":4\r\n"} {
		if line, _ := roundTrip(d.addr, cmd); line != want {
			t.Errorf("after the repair, %s: %q, want %q", cmd, line, want)
		}
	}
	d.stop(t)
}

// TestSupervisedSystemd runs bloomd as a unit of Type=notify runs it (Debian's
// redis-server.service passes --supervised systemd, and its redis.conf a pidfile): it sends
// READY=1 on systemd's notify socket once it serves, with its pid in the pid file, and
// STOPPING=1 when a shutdown begins; the pid file goes when it exits.
func TestSupervisedSystemd(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := freePort(t)
	pidfile := filepath.Join(dir, "bloomd.pid")
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--dir", dir, "--supervised", "systemd", "--daemonize", "no", "--pidfile", pidfile)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	read := func() string {
		t.Helper()
		ln.SetReadDeadline(time.Now().Add(15 * time.Second))
		b := make([]byte, 4096)
		n, err := ln.Read(b)
		if err != nil {
			t.Fatalf("no notification: %v\n%s", err, stderr.String())
		}
		return string(b[:n])
	}
	if got := read(); !strings.HasPrefix(got, "READY=1\n") {
		t.Fatalf("first notification %q", got)
	}
	// Ready means serving.
	if line, err := roundTrip(fmt.Sprintf("127.0.0.1:%d", port), "PING"); line != "+PONG\r\n" {
		t.Fatalf("PING after READY=1: %q %v", line, err)
	}
	if b, err := os.ReadFile(pidfile); err != nil || string(b) != fmt.Sprintf("%d\n", cmd.Process.Pid) {
		t.Fatalf("pid file: %q %v, want pid %d", b, err, cmd.Process.Pid)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if got := read(); got != "STOPPING=1" {
		t.Fatalf("notification at shutdown %q", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there after the exit: %v", err)
	}
}
