package procmem

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// vmRSS reads VmRSS from /proc/self/status, the kernel's other report of the same figure.
func vmRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range bytes.Lines(b) {
		if f := bytes.Fields(line); len(f) == 3 && string(f[0]) == "VmRSS:" {
			kb, _ := strconv.ParseInt(string(f[1]), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS line")
	return 0
}

// TestRSS: RSS agrees with the kernel's VmRSS, and grows by what the process touches.
func TestRSS(t *testing.T) {
	before, err := RSS()
	if err != nil {
		t.Fatal(err)
	}
	if v := vmRSS(t); before < v/2 || before > v*2 {
		t.Fatalf("RSS %d, VmRSS %d", before, v)
	}
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	after, _ := RSS()
	if after-before < 48<<20 {
		t.Fatalf("RSS grew by %d after touching 64 MiB", after-before)
	}
	buf[0] = 2 // keep buf alive
}

func TestParseStatm(t *testing.T) {
	if n, err := parseStatm([]byte("1000 250 100 1 0 300 0\n"), 4096); err != nil || n != 250*4096 {
		t.Fatalf("%d %v", n, err)
	}
	for _, bad := range []string{"", "12", "1 x", "1 -5"} {
		if _, err := parseStatm([]byte(bad), 4096); err == nil {
			t.Errorf("parseStatm(%q) accepted", bad)
		}
	}
}
