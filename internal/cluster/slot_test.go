package cluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
)

// slotKeys are keys whose slots are pinned: plain keys, hash tags and their edge cases.
var slotKeys = []string{
	"", "a", "b", "foo", "bar", "123456789", "user:1000", "{user1000}.following", "{user1000}.followers",
	"foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{}", "{", "}", "{a", "a}", "}{a}", "{{}}", "x{y}z",
	"bf:{tenant-7}:urls", "\x00\xff\x80binary", "{\x00}", strings.Repeat("long", 300),
}

// TestKeySlotGolden checks KeySlot against slots that redis-server 7.0 computed (CLUSTER
// KEYSLOT, recorded in testdata/keyslots.txt), and against a live redis-server when installed.
func TestKeySlotGolden(t *testing.T) {
	if got := CRC16([]byte("123456789")); got != 0x31c3 {
		t.Errorf("CRC16(123456789) = %#x, want 0x31c3 (CRC-16/XMODEM)", got)
	}
	f, err := os.Open(filepath.Join("testdata", "keyslots.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		q, slotText, _ := strings.Cut(line, " ")
		key, err := strconv.Unquote(q)
		if err != nil {
			t.Fatalf("bad line %q", line)
		}
		want, _ := strconv.Atoi(slotText)
		if got := KeySlot([]byte(key)); got != want {
			t.Errorf("KeySlot(%q) = %d, Redis says %d", key, got, want)
		}
		n++
	}
	if n != len(slotKeys) {
		t.Errorf("%d recorded keys, %d in slotKeys", n, len(slotKeys))
	}
	if redistest.Available() != nil && os.Getenv(redistest.RequireEnv) != "1" {
		return
	}
	s := startClusterRedis(t)
	var out strings.Builder
	out.WriteString("# key (Go-quoted) and its slot, from redis-server 7.0's CLUSTER KEYSLOT (see README.md)\n")
	for _, k := range slotKeys {
		r, err := s.Do("CLUSTER", "KEYSLOT", k)
		if err != nil {
			t.Fatal(err)
		}
		if got := strconv.Itoa(KeySlot([]byte(k))); got != r {
			t.Errorf("KeySlot(%q) = %s, the live redis-server says %s", k, got, r)
		}
		fmt.Fprintf(&out, "%q %s\n", k, r)
	}
	if os.Getenv("BLOOM_RECORD_BUS") == "1" {
		os.WriteFile(filepath.Join("testdata", "keyslots.txt"), []byte(out.String()), 0o644)
	}
}

// startClusterRedis starts one cluster-enabled redis-server, not joined to any cluster.
func startClusterRedis(t *testing.T) *redistest.Server {
	t.Helper()
	redistest.Require(t)
	bus := freeTestPort(t)
	s, err := redistest.StartProgram("redis-server", "", func(port int, dir string) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no",
			"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus)}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestHashTag(t *testing.T) {
	for key, want := range map[string]string{
		"{user}.a": "user", "foo{}{bar}": "foo{}{bar}", "foo{{bar}}zap": "{bar", "foo{bar}{zap}": "bar", "{a": "{a", "plain": "plain",
	} {
		if got := string(HashTag([]byte(key))); got != want {
			t.Errorf("HashTag(%q) = %q, want %q", key, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { KeySlot([]byte("{user1000}.following")) }); n != 0 {
		t.Errorf("KeySlot allocates %v times", n)
	}
}
