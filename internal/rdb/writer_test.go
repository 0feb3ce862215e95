package rdb

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// readAll decodes every key of an RDB file.
func readAll(t *testing.T, data []byte, opts *ReaderOptions) ([]*Entry, []decoded) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), opts)
	if err != nil {
		t.Fatal(err)
	}
	var es []*Entry
	var ds []decoded
	for {
		e, err := r.Next()
		if err == io.EOF {
			return es, ds
		}
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
		ds = append(ds, decode(t, e))
	}
}

// rewrite writes the keys of a recorded file again with this package's writer.
func rewrite(t *testing.T, name string, opts *WriterOptions, keep func(d decoded) bool) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	es, ds := readAll(t, data, nil)
	var out bytes.Buffer
	w, err := NewWriter(&out, DefaultAux("7.0.15", 1700000000, 1<<20), opts)
	if err != nil {
		t.Fatal(err)
	}
	db := -1
	for i, e := range es {
		d := ds[i]
		if !keep(d) {
			continue
		}
		if e.DB != db {
			db = e.DB
			if err := w.SelectDB(db, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		m := KeyMeta{Expire: e.Expire}
		switch {
		case d.str != nil:
			err = w.WriteString(e.Key, d.str, m)
		case d.hash != nil:
			err = w.WriteHash(e.Key, d.hash, m)
		case d.chain != nil:
			err = w.WriteChain(e.Key, d.chain, nil, m)
		case d.cuckoo != nil:
			err = w.WriteCuckoo(e.Key, d.cuckoo, m)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Written() != int64(out.Len()) {
		t.Errorf("Written %d, wrote %d", w.Written(), out.Len())
	}
	return out.Bytes()
}

func all(decoded) bool { return true }

// TestWriterRoundTrip writes every recorded key with each writable version and compression
// setting and reads it back: the same facts as Redis recorded.
func TestWriterRoundTrip(t *testing.T) {
	for _, name := range recordedFiles {
		facts := loadFacts(t, name)
		byKey := map[string]keyFacts{}
		for _, k := range facts.Keys {
			byKey[fmt.Sprint(k.DB, k.Key)] = k
		}
		for _, v := range []int{Version62, Version70, Version72, Version74} {
			for _, nc := range []bool{false, true} {
				data := rewrite(t, name, &WriterOptions{Version: v, NoCompression: nc}, all)
				if got := string(data[:9]); got != fmt.Sprintf("REDIS%04d", v) {
					t.Fatalf("header %q", got)
				}
				es, ds := readAll(t, data, &ReaderOptions{Size: int64(len(data))})
				if len(es) != len(facts.Keys) {
					t.Fatalf("%s v%d: %d keys of %d", name, v, len(es), len(facts.Keys))
				}
				for i, e := range es {
					if v == Version62 && ds[i].hash != nil && e.Type != TypeHash {
						t.Errorf("version 9: hash %q written as type %d", e.Key, e.Type)
					}
					checkFacts(t, fmt.Sprintf("%s v%d compression %v", name, v, !nc), byKey[fmt.Sprint(e.DB, string(e.Key))], ds[i], e.Expire)
				}
			}
		}
	}
}

// TestWriterNoChecksum writes 0 as the checksum, which the reader (like Redis) does not check.
func TestWriterNoChecksum(t *testing.T) {
	data := rewrite(t, "bloom-plain.rdb", &WriterOptions{NoChecksum: true}, all)
	if !bytes.Equal(data[len(data)-8:], make([]byte, 8)) {
		t.Fatalf("checksum %x", data[len(data)-8:])
	}
	readAll(t, data, nil)
	data = rewrite(t, "bloom-plain.rdb", nil, all)
	data[len(data)-1] ^= 1
	r, _ := NewReader(bytes.NewReader(data), nil)
	var err error
	for err == nil {
		_, err = r.Next()
	}
	if !errors.Is(err, ErrChecksum) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a flipped checksum bit: %v", err)
	}
}

// liveFacts loads data as dump.rdb into a fresh redis-server (args added to its command line)
// and records every key as TestRecordTestdata does.
func liveFacts(t *testing.T, data []byte, args ...string) []keyFacts {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := redistest.New(t, &redistest.Options{Args: append([]string{"--dir", dir, "--dbfilename", "dump.rdb"}, args...)})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2})
	defer c.Close()
	return recordKeys(context.Background(), t, c)
}

// compareLive requires Redis to answer about the keys it loaded from this package's file as it
// answered about the originals (DUMP payloads aside: Redis re-encodes what it loads).
func compareLive(t *testing.T, got []keyFacts, want []keyFacts, keep func(keyFacts) bool) {
	t.Helper()
	var w []keyFacts
	for _, k := range want {
		if keep(k) {
			k.Dump = ""
			w = append(w, k)
		}
	}
	for i := range got {
		got[i].Dump = ""
	}
	sort.Slice(w, func(i, j int) bool { return fmt.Sprint(w[i].DB, w[i].Key) < fmt.Sprint(w[j].DB, w[j].Key) })
	sort.Slice(got, func(i, j int) bool { return fmt.Sprint(got[i].DB, got[i].Key) < fmt.Sprint(got[j].DB, got[j].Key) })
	if len(got) != len(w) {
		t.Fatalf("Redis loaded %d keys, want %d", len(got), len(w))
	}
	for i := range w {
		if !reflect.DeepEqual(got[i], w[i]) {
			t.Errorf("key %q: Redis answers\n %+v\nwant\n %+v", w[i].Key, got[i], w[i])
		}
	}
}

// TestWriterLoadsIntoRedis loads this package's files of the recorded strings and hashes (with
// their expiry times and databases) into a real redis-server, which must answer about every
// key as it did about the original. It needs only Debian's redis-server, so it runs in CI.
func TestWriterLoadsIntoRedis(t *testing.T) {
	redistest.Require(t)
	plainTypes := func(d decoded) bool { return d.str != nil || d.hash != nil }
	for _, name := range recordedFiles {
		for _, nc := range []bool{false, true} {
			data := rewrite(t, name, &WriterOptions{NoCompression: nc}, plainTypes)
			got := liveFacts(t, data)
			compareLive(t, got, loadFacts(t, name).Keys, func(k keyFacts) bool { return k.Type == "string" || k.Type == "hash" })
		}
	}
}

// TestWriterLoadsIntoRedisBloom loads this package's files of every recorded key, filters
// included, into redis-server with RedisBloom 2.6.28 (REDISBLOOM_SO): BF.INFO, CF.INFO, every
// SCANDUMP chunk and the answers for 700 items must be the original's.
func TestWriterLoadsIntoRedisBloom(t *testing.T) {
	so := os.Getenv("REDISBLOOM_SO")
	if so == "" {
		t.Skip("REDISBLOOM_SO is not set: no RedisBloom module to load this package's files into")
	}
	for _, name := range recordedFiles {
		for _, nc := range []bool{false, true} {
			data := rewrite(t, name, &WriterOptions{NoCompression: nc}, all)
			got := liveFacts(t, data, "--loadmodule", so)
			compareLive(t, got, loadFacts(t, name).Keys, func(keyFacts) bool { return true })
		}
	}
}

// TestDumpRestoreIntoRedis restores this package's DUMP payloads into a real redis-server
// (with RedisBloom when REDISBLOOM_SO is set; strings and hashes otherwise), which must answer
// as about the originals.
func TestDumpRestoreIntoRedis(t *testing.T) {
	redistest.Require(t)
	so := os.Getenv("REDISBLOOM_SO")
	var args []string
	if so != "" {
		args = []string{"--loadmodule", so}
	}
	srv := redistest.New(t, &redistest.Options{Args: args})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2})
	defer c.Close()
	ctx := context.Background()
	facts := loadFacts(t, "bloom-compressed.rdb")
	var want []keyFacts
	for _, k := range facts.Keys {
		if so == "" && k.Type != "string" && k.Type != "hash" || k.DB != 0 {
			continue
		}
		payload, _ := hex.DecodeString(k.Dump)
		e, err := ReadDump(payload, 0)
		if err != nil {
			t.Fatal(err)
		}
		d := decode(t, e)
		var mine []byte
		switch {
		case d.str != nil:
			mine, err = DumpString(d.str, nil)
		case d.hash != nil:
			mine, err = DumpHash(d.hash, nil)
		case d.chain != nil:
			mine, err = DumpChain(d.chain, nil)
		case d.cuckoo != nil:
			mine, err = DumpCuckoo(d.cuckoo, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		ttl := "0"
		args := []any{"RESTORE", k.Key, ttl, string(mine)}
		if k.PExpireTime > 0 {
			args = []any{"RESTORE", k.Key, fmt.Sprint(k.PExpireTime), string(mine), "ABSTTL"}
		}
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("RESTORE %s: %v", k.Key, err)
		}
		want = append(want, k)
	}
	got := recordKeys(ctx, t, c)
	compareLive(t, got, want, func(keyFacts) bool { return true })
	// A payload of a newer RDB version is refused as Redis 7.0 refuses it.
	p, _ := DumpString([]byte("x"), &WriterOptions{Version: Version74})
	if err := c.Do(ctx, "RESTORE", "newer", "0", string(p)).Err(); err == nil || !strings.Contains(err.Error(), "DUMP payload version or checksum are wrong") {
		t.Errorf("Redis 7.0 restoring a version 12 payload: %v", err)
	}
	if _, err := ReadDump(p, Version70); !errors.Is(err, ErrDumpPayload) {
		t.Errorf("ReadDump of a version 12 payload with 10 the newest: %v", err)
	}
}
