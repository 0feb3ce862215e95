package server

import (
	"fmt"
	"strings"
	"testing"
)

// TestCompactRefusedOnReplica runs CF.COMPACT on a read-only replica: it is refused with Redis's
// READONLY error, so the replica's filter stays its primary's (RedisBloom registers CF.COMPACT
// read-only, so a Redis replica runs it and drifts). COMMAND still shows RedisBloom's flags; the
// primary's CF.COMPACT reaches the replica through the stream, and a writable replica may run
// it.
func TestCompactRefusedOnReplica(t *testing.T) {
	ps, p := startReplServer(t)
	_, r := startReplServer(t)
	p.do("CF.RESERVE", "c", "64", "BUCKETSIZE", "1", "EXPANSION", "1")
	for i := range 150 {
		p.do("CF.ADD", "c", fmt.Sprint("item", i))
	}
	for i := range 120 {
		p.do("CF.DEL", "c", fmt.Sprint("item", i))
	}
	r.do("REPLICAOF", "127.0.0.1", portOf(ps))
	waitSynced(t, p, r)
	before := cfDigest(t, r, "c")

	r.send([]byte("CF.COMPACT"), []byte("c"))
	if raw, _ := r.read(); string(raw) != "-READONLY You can't write against a read only replica.\r\n" {
		t.Errorf("CF.COMPACT on a read-only replica: %q", raw)
	}
	if cfDigest(t, r, "c") != before {
		t.Error("a refused CF.COMPACT changed the replica's filter")
	}
	if flags := fmt.Sprint(r.do("COMMAND", "INFO", "cf.compact").Elems[0].Elems[2]); !strings.Contains(flags, "readonly") || strings.Contains(flags, "write") {
		t.Errorf("COMMAND INFO cf.compact flags: %s, want RedisBloom's (readonly)", flags)
	}

	if v := p.do("CF.COMPACT", "c"); v.Text() != "OK" {
		t.Fatalf("CF.COMPACT on the primary: %v", v)
	}
	waitSynced(t, p, r)
	if cfDigest(t, r, "c") != cfDigest(t, p, "c") {
		t.Error("the primary's CF.COMPACT did not reach the replica")
	}

	r.do("CONFIG", "SET", "replica-read-only", "no")
	if v := r.do("CF.COMPACT", "c"); v.Text() != "OK" {
		t.Errorf("CF.COMPACT on a writable replica: %v", v)
	}
}
