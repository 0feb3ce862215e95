package server

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// infoFields parses an INFO reply into its name:value fields.
func infoFields(info string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			m[k] = v
		}
	}
	return m
}

// TestInfoMemoryRSS: used_memory_rss is the process's resident size as the kernel reports it
// (VmRSS), not what the Go runtime has mapped, which is reported as go_memory_total.
func TestInfoMemoryRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("resident size is read from /proc on Linux only")
	}
	s := startServer(t, nil)
	c := dial(t, s.addr())
	f := infoFields(string(c.do("INFO", "memory").Str))
	rss, err1 := strconv.ParseInt(f["used_memory_rss"], 10, 64)
	goTotal, err2 := strconv.ParseInt(f["go_memory_total"], 10, 64)
	if err1 != nil || err2 != nil || f["used_memory_rss_human"] == "" {
		t.Fatalf("INFO memory fields: %q", f)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var vmRSS int64
	for line := range bytes.Lines(status) {
		if fs := bytes.Fields(line); len(fs) == 3 && string(fs[0]) == "VmRSS:" {
			kb, _ := strconv.ParseInt(string(fs[1]), 10, 64)
			vmRSS = kb << 10
		}
	}
	// The two reads are moments apart; the race detector's own memory counts in both.
	if rss < vmRSS*3/4 || rss > vmRSS*4/3 {
		t.Fatalf("used_memory_rss %d, kernel's VmRSS %d (go_memory_total %d)", rss, vmRSS, goTotal)
	}
	if goTotal <= 0 {
		t.Fatalf("go_memory_total %d", goTotal)
	}
}
