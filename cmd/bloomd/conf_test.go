package main

import (
	"fmt"
	"os"
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
