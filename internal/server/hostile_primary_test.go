package server

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/rdb"
	"github.com/bloomd/bloom/internal/resp"
)

// hostilePrimary answers a replica's handshake and then, to PSYNC, sends payload and closes the
// connection (after a pause, so that what was sent is read first).
func hostilePrimary(t *testing.T, payload []byte) (port string, attempts chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	attempts = make(chan struct{}, 100)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				rd := resp.NewReader(nc)
				for {
					argv, err := rd.ReadCommand()
					if err != nil {
						return
					}
					switch strings.ToUpper(string(argv[0])) {
					case "PING":
						nc.Write([]byte("+PONG\r\n"))
					case "REPLCONF":
						nc.Write([]byte("+OK\r\n"))
					case "PSYNC":
						nc.Write(payload)
						attempts <- struct{}{}
						time.Sleep(200 * time.Millisecond)
						return
					}
				}
			}()
		}
	}()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p, attempts
}

// smallRDB returns an RDB file of one string key, "theirs", as Redis 7.0 writes one.
func smallRDB(t *testing.T) []byte {
	var b bytes.Buffer
	w, err := rdb.NewWriter(&b, rdb.DefaultAux("7.0.15", 1700000000, 1<<20), nil)
	if err != nil {
		t.Fatal(err)
	}
	w.SelectDB(0, 1, 0)
	w.WriteString([]byte("theirs"), []byte("v"), rdb.KeyMeta{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestReplicaHostilePrimary has a bloomd replica follow "primaries" that send damaged full syncs
// and streams: snapshots cut short behind both framings, lengths of petabytes, a wrong
// checksum, garbage where the length belongs, inline commands, a bad SELECT, an absurd bulk
// length, malformed +FULLRESYNC and +CONTINUE lines. Each time the replica stays up, says why in
// INFO replication (master_link_error) and its log, and allocates nothing the input does not
// hold. Holding keys, it keeps them when the transfer fails or is not a snapshot at all (it is
// received into a file before the keys go); one that arrives whole but does not load leaves it
// empty, as in Redis; a damaged stream after a good snapshot leaves it with the snapshot.
func TestReplicaHostilePrimary(t *testing.T) {
	id := strings.Repeat("f", 40)
	good := smallRDB(t)
	mark := strings.Repeat("m", 40)
	full := func(s string) []byte { return []byte("+FULLRESYNC " + id + " 100\r\n" + s) }
	withRDB := func(stream string) []byte {
		return append(full(fmt.Sprintf("$%d\r\n%s", len(good), good)), stream...)
	}
	badSum := append([]byte(nil), good...)
	badSum[len(badSum)-1] ^= 0xFF
	for _, tc := range []struct {
		name, why string
		payload   []byte
		keeps     string // the key the replica holds after it: its own, theirs, or none
	}{
		{"rdb cut short", "cut short", full(fmt.Sprintf("$%d\r\n%s", len(good)+100, good[:len(good)-20])), "mine"},
		{"eof rdb cut short", "cut short", full("$EOF:" + mark + "\r\n" + string(good[:len(good)-20])), "mine"},
		{"petabytes", "cut short", full("$999999999999999\r\nREDIS0010\xfa\x09redis-ver"), "mine"},
		{"eof mark short", "EOF mark", full("$EOF:abc\r\n"), "mine"},
		{"wrong checksum", "checksum", full(fmt.Sprintf("$%d\r\n%s", len(badSum), badSum)), ""},
		{"garbage length", "where the snapshot's length belongs", full("garbage\r\n"), "mine"},
		{"negative length", "where the snapshot's length belongs", full("$-5\r\n"), "mine"},
		{"not a snapshot", "neither an RDB file nor a bloomd snapshot", full("$12\r\nHELLO WORLD!"), "mine"},
		{"inline command", "inline command", withRDB("SET a b\r\n"), "theirs"},
		{"bad select", "malformed SELECT", withRDB("*2\r\n$6\r\nSELECT\r\n$3\r\nabc\r\n"), "theirs"},
		{"absurd bulk", "not RESP", withRDB("*2\r\n$3\r\nSET\r\n$99999999999999\r\nab"), "theirs"},
		{"bad fullresync", "malformed +FULLRESYNC", []byte("+FULLRESYNC short -1\r\n"), "mine"},
		{"bad continue", "malformed +CONTINUE", []byte("+CONTINUE 1234\r\n"), "mine"},
		{"refused", "PSYNC refused", []byte("-ERR no\r\n"), "mine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port, attempts := hostilePrimary(t, tc.payload)
			_, r := startReplServer(t)
			r.do("SET", "mine", "kept")
			r.do("REPLICAOF", "127.0.0.1", port)
			for range 2 {
				select {
				case <-attempts:
				case <-time.After(10 * time.Second):
					t.Fatal("the replica did not try again")
				}
			}
			waitFor(t, func() bool { return strings.Contains(infoField(t, r, "replication", "master_link_error"), tc.why) })
			// No more attempts: the data stays as the last left it. A snapshot received whole
			// may still be loading, and REPLICAOF is then answered -LOADING, as in Redis, until
			// it ends. Once promoted, the server has its own replication ID, not the primary's.
			waitFor(t, func() bool { return !r.do("REPLICAOF", "NO", "ONE").IsError() })
			keys := r.do("KEYS", "*")
			if got := infoField(t, r, "replication", "master_replid"); got == id {
				t.Errorf("promoted, the replica took the primary's replication ID %s", got)
			}
			if got := fmt.Sprint(keys); tc.keeps == "" && len(keys.Elems) != 0 || tc.keeps != "" && (len(keys.Elems) != 1 || string(keys.Elems[0].Str) != tc.keeps) {
				t.Errorf("the replica holds %s, want %q", got, tc.keeps)
			}
		})
	}
}

// TestReplicaHostilePrimaryEmpty: a replica that holds no key loads a full sync straight from the
// link (repl-diskless-load on-empty-db); a damaged one leaves it empty, not with part of it.
func TestReplicaHostilePrimaryEmpty(t *testing.T) {
	var two bytes.Buffer // two keys, the second cut short
	w, _ := rdb.NewWriter(&two, rdb.DefaultAux("7.0.15", 1700000000, 1<<20), &rdb.WriterOptions{NoCompression: true})
	w.SelectDB(0, 2, 0)
	w.WriteString([]byte("first"), []byte("v"), rdb.KeyMeta{})
	w.WriteString([]byte("second"), bytes.Repeat([]byte("x"), 1000), rdb.KeyMeta{})
	w.Close()
	cut := two.Bytes()[:two.Len()-200]
	payload := []byte("+FULLRESYNC " + strings.Repeat("f", 40) + " 0\r\n$" + strconv.Itoa(two.Len()) + "\r\n" + string(cut))
	port, attempts := hostilePrimary(t, payload)
	_, r := startReplServer(t)
	r.do("REPLICAOF", "127.0.0.1", port)
	<-attempts
	<-attempts
	waitFor(t, func() bool { return strings.Contains(infoField(t, r, "replication", "master_link_error"), "cut short") })
	if v := r.do("DBSIZE"); v.Int != 0 {
		t.Errorf("a snapshot cut short left %d keys", v.Int)
	}
}
