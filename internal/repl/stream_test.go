package repl_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/resp"
)

// record makes TestRecordRedisStream record testdata/redis70-stream/ from the real programs.
var record = flag.Bool("record", false, "re-record testdata/redis70-stream/ from redis-server and RedisBloom (needs REDISBLOOM_SO)")

const streamDir = "testdata/redis70-stream"

// streamFacts is what the recording knows besides the bytes: where the stream starts, where it
// ends, and every key as Redis described it at the end (keyState).
type streamFacts struct {
	Recorded string            `json:"recorded"`
	ReplID   string            `json:"replid"`
	Offset   int64             `json:"offset"`    // the full sync's offset: the stream's first byte is Offset+1
	End      int64             `json:"end"`       // master_repl_offset after the last command
	Keys     map[string]string `json:"keys"`      // keyState of the primary at the end
	GetAcks  []int64           `json:"getack_at"` // the offsets a replica acknowledges at each REPLCONF GETACK
	Commands map[string]int    `json:"commands"`  // how many of each command the stream holds
}

// TestRecordRedisStream records a replication stream of Debian's redis-server 7.0.15 with
// RedisBloom 2.6.28 loaded:
//
//	REDISBLOOM_SO=/path/to/redisbloom.so go test ./internal/repl -run TestRecordRedisStream -count=1 -record
//
// It fills the primary with a round of the workload (filters, strings, hashes, expiry times far
// in the future), then connects as a replica would (PING, REPLCONF listening-port and capa eof
// psync2, PSYNC ? -1) to a primary saving its RDB to disk for the sync, keeps the RDB it sends
// (fullsync.rdb) and, while two more rounds, a PUBLISH and a WAIT (which puts REPLCONF GETACK into
// the stream) run, every byte of the stream after it (stream.resp); facts.json holds the offsets
// and what Redis answers about every key at the end.
func TestRecordRedisStream(t *testing.T) {
	if !*record {
		t.Skip("records testdata/redis70-stream/ with -record")
	}
	so := os.Getenv("REDISBLOOM_SO")
	if so == "" {
		t.Fatal("-record needs REDISBLOOM_SO")
	}
	primary := redistest.New(t, &redistest.Options{Args: []string{"--loadmodule", so, "--repl-diskless-sync", "no"}})
	pc := client(t, primary)
	run(t, pc, workloadAt(0, true, true), true)

	nc, err := net.Dial("tcp", primary.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	line := func() string {
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if l = strings.TrimRight(l, "\r\n"); l != "" {
				return l
			}
		}
	}
	for _, c := range []string{"PING", "REPLCONF listening-port 1", "REPLCONF capa eof capa psync2"} {
		fmt.Fprintf(nc, "%s\r\n", c)
		if l := line(); l[0] == '-' {
			t.Fatalf("%s: %s", c, l)
		}
	}
	fmt.Fprintf(nc, "PSYNC ? -1\r\n")
	f := strings.Fields(line())
	if len(f) != 3 || f[0] != "+FULLRESYNC" {
		t.Fatalf("PSYNC: %v", f)
	}
	facts := streamFacts{Recorded: "redis-server 7.0.15 (Debian) with RedisBloom 2.6.28, repl-diskless-sync no", ReplID: f[1], Commands: map[string]int{}}
	facts.Offset, _ = strconv.ParseInt(f[2], 10, 64)
	size, err := strconv.Atoi(strings.TrimPrefix(line(), "$"))
	if err != nil {
		t.Fatal(err)
	}
	rdbData := make([]byte, size)
	if _, err := io.ReadFull(br, rdbData); err != nil {
		t.Fatal(err)
	}

	run(t, pc, workloadAt(1, true, true), true)
	pc.Publish(context.Background(), "news", "from the primary")
	pc.Do(context.Background(), "WAIT", 1, 100) // nobody acknowledges: it puts GETACK in the stream
	run(t, pc, workloadAt(2, true, true), true)
	end, _ := strconv.ParseInt(info(primary, "master_repl_offset"), 10, 64)
	stream := make([]byte, end-facts.Offset)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(br, stream); err != nil {
		t.Fatalf("reading %d bytes of stream: %v", len(stream), err)
	}
	facts.End = end
	facts.Keys = keyState(t, primary)
	facts.GetAcks = scanStream(t, stream, facts.Offset, facts.Commands)
	js, _ := json.MarshalIndent(facts, "", "  ")
	for name, data := range map[string][]byte{"fullsync.rdb": rdbData, "stream.resp": stream, "facts.json": append(js, '\n')} {
		if err := os.WriteFile(filepath.Join(streamDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("recorded an RDB of %d bytes and %d bytes of stream: %v", len(rdbData), len(stream), facts.Commands)
}

// scanStream counts the commands of a recorded stream and returns the offsets a replica
// acknowledges at each REPLCONF GETACK: that of the bytes before it.
func scanStream(t *testing.T, stream []byte, offset int64, counts map[string]int) []int64 {
	t.Helper()
	tr := &countReader{r: strings.NewReader(string(stream))}
	rd := resp.NewReader(tr)
	rd.Limits.MaxBulk = 1 << 30
	var acks []int64
	before := int64(0)
	for {
		argv, err := rd.ReadCommand()
		if err == io.EOF {
			return acks
		}
		if err != nil {
			t.Fatalf("the recorded stream does not parse: %v", err)
		}
		name := strings.ToLower(string(argv[0]))
		if name == "replconf" && strings.EqualFold(string(argv[1]), "getack") {
			acks = append(acks, offset+before)
		}
		counts[name]++
		before = tr.n - int64(rd.Buffered())
	}
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// fakeRedisPrimary serves a recorded full sync and stream to whoever connects, as redis-server
// served them, behind "$<length>" or, with eof, Redis's diskless "$EOF:<mark>" (and then, as
// Redis does, the stream only after the replica's first ACK). It collects the offsets the
// replica acknowledges.
type fakeRedisPrimary struct {
	ln    net.Listener
	facts streamFacts
	rdb   []byte
	rest  []byte
	eof   bool
	mu    sync.Mutex
	acks  map[int64]bool
}

func startFakeRedisPrimary(t *testing.T, facts streamFacts, rdbData, stream []byte, eof bool) *fakeRedisPrimary {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRedisPrimary{ln: ln, facts: facts, rdb: rdbData, rest: stream, eof: eof, acks: map[int64]bool{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(nc)
		}
	}()
	return f
}

func (f *fakeRedisPrimary) serve(nc net.Conn) {
	defer nc.Close()
	rd := resp.NewReader(nc)
	acked := make(chan struct{})
	var once sync.Once
	for {
		argv, err := rd.ReadCommand()
		if err != nil {
			return
		}
		switch strings.ToUpper(string(argv[0])) {
		case "PING":
			nc.Write([]byte("+PONG\r\n"))
		case "REPLCONF":
			if len(argv) >= 3 && strings.EqualFold(string(argv[1]), "ack") {
				off, _ := strconv.ParseInt(string(argv[2]), 10, 64)
				f.mu.Lock()
				f.acks[off] = true
				f.mu.Unlock()
				once.Do(func() { close(acked) })
				continue
			}
			nc.Write([]byte("+OK\r\n"))
		case "PSYNC":
			fmt.Fprintf(nc, "+FULLRESYNC %s %d\r\n", f.facts.ReplID, f.facts.Offset)
			if !f.eof {
				fmt.Fprintf(nc, "$%d\r\n", len(f.rdb))
				nc.Write(f.rdb)
				nc.Write(f.rest)
				continue
			}
			mark := strings.Repeat("0123456789", 4)
			fmt.Fprintf(nc, "$EOF:%s\r\n", mark)
			nc.Write(f.rdb)
			nc.Write([]byte(mark))
			go func() {
				<-acked
				nc.Write(f.rest)
			}()
		}
	}
}

func (f *fakeRedisPrimary) acked(off int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acks[off]
}

// TestReplayRedisStream replays the recorded full sync and stream of Redis 7.0 with RedisBloom
// (see TestRecordRedisStream) to a bloomd replica, behind both framings Redis uses: bloomd, which
// needs no module, ends holding every key exactly as Redis described it (type, expiry time,
// value, BF.INFO or CF.INFO and every SCANDUMP chunk), at exactly Redis's offset, and it answered
// each REPLCONF GETACK with the offset Redis's own replicas would.
func TestReplayRedisStream(t *testing.T) {
	js, err := os.ReadFile(filepath.Join(streamDir, "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var facts streamFacts
	if err := json.Unmarshal(js, &facts); err != nil {
		t.Fatal(err)
	}
	rdbData, err := os.ReadFile(filepath.Join(streamDir, "fullsync.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := os.ReadFile(filepath.Join(streamDir, "stream.resp"))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	getacks := scanStream(t, stream, facts.Offset, counts)
	if len(getacks) == 0 || counts["multi"] == 0 || counts["bf.madd"] == 0 || counts["cf.insert"] == 0 || counts["publish"] == 0 {
		t.Fatalf("the recording lacks what this test is about: %v", counts)
	}
	for _, eof := range []bool{false, true} {
		t.Run(fmt.Sprintf("eof=%v", eof), func(t *testing.T) {
			redistest.Require(t)
			fake := startFakeRedisPrimary(t, facts, rdbData, stream, eof)
			replica := startBloomd(t)
			if _, err := replica.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(fake.ln.Addr().(*net.TCPAddr).Port)); err != nil {
				t.Fatal(err)
			}
			eventually(t, 30*time.Second, "the replica at the stream's end", func() bool {
				return info(replica, "slave_repl_offset") == strconv.FormatInt(facts.End, 10)
			})
			if got := info(replica, "master_replid"); got != facts.ReplID {
				t.Errorf("master_replid %s, want %s", got, facts.ReplID)
			}
			got := keyState(t, replica)
			for k, want := range facts.Keys {
				if got[k] != want {
					t.Errorf("key %q\n  Redis:  %s\n  bloomd: %s", k, want, got[k])
				}
			}
			for k, v := range got {
				if _, ok := facts.Keys[k]; !ok {
					t.Errorf("key %q only on bloomd: %s", k, v)
				}
			}
			for _, off := range append(getacks, facts.End) {
				eventually(t, 10*time.Second, fmt.Sprintf("REPLCONF ACK %d", off), func() bool { return fake.acked(off) })
			}
			if got := info(replica, "replication_skipped_commands"); got != "" {
				t.Errorf("the replica skipped %s commands", got)
			}
		})
	}
}
