package rdb

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisbloom"
)

// recordedFiles are the RDB files written by Redis 7.0 + RedisBloom 2.6.28 (see record_test.go).
var recordedFiles = []string{"bloom-compressed.rdb", "bloom-plain.rdb"}

func loadFacts(t testing.TB, name string) fileFacts {
	t.Helper()
	js, err := os.ReadFile(filepath.Join("testdata", name+".facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fileFacts
	if err := json.Unmarshal(js, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// A decoded is a key's value decoded by this package.
type decoded struct {
	str    []byte
	hash   []HashField
	chain  *redisbloom.Chain
	cuckoo *bloom.Cuckoo
}

func decode(t *testing.T, e *Entry) decoded {
	t.Helper()
	var d decoded
	var err error
	switch e.Kind {
	case KindString:
		d.str, err = e.ReadString()
	case KindHash:
		d.hash, err = e.ReadHash()
	case KindBloom:
		d.chain, err = e.ReadChain(nil)
	case KindCuckoo:
		d.cuckoo, err = e.ReadCuckoo(nil)
	default:
		t.Fatalf("key %q: kind %d", e.Key, e.Kind)
	}
	if err != nil {
		t.Fatalf("key %q: %v", e.Key, err)
	}
	return d
}

// facts computes, from a decoded value, what Redis answered about it.
func (d decoded) facts() keyFacts {
	var f keyFacts
	probe := probeItems()
	switch {
	case d.str != nil:
		f.Type, f.Value = "string", hex.EncodeToString(d.str)
	case d.hash != nil:
		f.Type, f.Hash = "hash", map[string]string{}
		for _, h := range d.hash {
			f.Hash[string(h.Field)] = string(h.Value)
		}
	case d.chain != nil:
		c := d.chain
		f.Type = BloomModule
		exp := fmt.Sprint(c.Expansion())
		if c.NonScaling() {
			exp = "<nil>"
		}
		f.Info = []string{fmt.Sprintf("Capacity=%d", c.Capacity()), fmt.Sprintf("Size=%d", c.Size()),
			fmt.Sprintf("Number of filters=%d", c.NumFilters()), fmt.Sprintf("Number of items inserted=%d", c.Card()),
			"Expansion rate=" + exp}
		for it, data := range c.Chunks() {
			f.ScanDump = append(f.ScanDump, chunkFact(it, data))
		}
		var b strings.Builder
		for _, it := range probe {
			b.WriteString(map[bool]string{false: "0", true: "1"}[c.Exists([]byte(it.(string)))])
		}
		f.Exists = b.String()
	case d.cuckoo != nil:
		c := d.cuckoo
		i := c.Info()
		f.Type = CuckooModule
		f.Info = []string{fmt.Sprintf("Size=%d", c.Size()), fmt.Sprintf("Number of buckets=%d", i.Buckets),
			fmt.Sprintf("Number of filters=%d", i.Filters), fmt.Sprintf("Number of items inserted=%d", i.Items),
			fmt.Sprintf("Number of items deleted=%d", i.Deletes), fmt.Sprintf("Bucket size=%d", i.BucketSize),
			fmt.Sprintf("Expansion rate=%d", i.Expansion), fmt.Sprintf("Max iterations=%d", i.MaxIterations)}
		for it := int64(0); ; {
			next, data := redisbloom.CFScanDump(c, it)
			if next == 0 {
				break
			}
			f.ScanDump = append(f.ScanDump, chunkFact(next, data))
			it = next
		}
		var b strings.Builder
		counts := make([]string, len(probe))
		for j, it := range probe {
			b.WriteString(map[bool]string{false: "0", true: "1"}[c.Test([]byte(it.(string)))])
			counts[j] = fmt.Sprint(c.Count([]byte(it.(string))))
		}
		f.Exists, f.Count = b.String(), strings.Join(counts, ",")
	}
	return f
}

// checkFacts compares what this package decoded with what Redis answered.
func checkFacts(t *testing.T, where string, want keyFacts, d decoded, expire int64) {
	t.Helper()
	got := d.facts()
	got.DB, got.Key, got.Dump = want.DB, want.Key, want.Dump
	got.PExpireTime = -1
	if expire != 0 {
		got.PExpireTime = expire
	}
	if want.PExpireTime != got.PExpireTime && expire != -2 {
		t.Errorf("%s: key %q expires at %d, Redis says %d", where, want.Key, got.PExpireTime, want.PExpireTime)
	}
	got.PExpireTime = want.PExpireTime
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Errorf("%s: key %q:\n got %.600s\nwant %.600s", where, want.Key, gj, wj)
	}
}

// TestRecordedFiles reads the RDB files Redis 7.0 + RedisBloom 2.6.28 wrote and checks every key
// against what Redis answered about it: type, expiry, value, BF.INFO / CF.INFO, every SCANDUMP
// chunk, and the membership (and CF.COUNT) of 700 items.
func TestRecordedFiles(t *testing.T) {
	for _, name := range recordedFiles {
		facts := loadFacts(t, name)
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(bytes.NewReader(data), &ReaderOptions{Size: int64(len(data))})
		if err != nil {
			t.Fatal(err)
		}
		if r.Version() != Version70 {
			t.Errorf("%s: version %d", name, r.Version())
		}
		seen := map[string]bool{}
		byKey := map[string]keyFacts{}
		for _, k := range facts.Keys {
			byKey[fmt.Sprint(k.DB, k.Key)] = k
		}
		for {
			e, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			id := fmt.Sprint(e.DB, string(e.Key))
			want, ok := byKey[id]
			if !ok {
				t.Fatalf("%s: key %q of db %d is not in the facts", name, e.Key, e.DB)
			}
			seen[id] = true
			checkFacts(t, name, want, decode(t, e), e.Expire)
		}
		if len(seen) != len(facts.Keys) {
			t.Errorf("%s: read %d keys, Redis had %d", name, len(seen), len(facts.Keys))
		}
		if r.Offset() != int64(len(data)) {
			t.Errorf("%s: read %d of %d bytes", name, r.Offset(), len(data))
		}
		aux := map[string]string{}
		for _, a := range r.Aux() {
			aux[a.Name] = a.Value
		}
		if aux["redis-ver"] != "7.0.15" || aux["redis-bits"] != "64" {
			t.Errorf("%s: aux fields %v", name, aux)
		}
	}
}

// TestRecordedDumps restores every DUMP payload Redis made and checks it as TestRecordedFiles
// checks keys, then encodes the decoded value again and requires Redis's payload byte for byte.
func TestRecordedDumps(t *testing.T) {
	for _, name := range recordedFiles {
		facts := loadFacts(t, name)
		opts := &WriterOptions{NoCompression: strings.Contains(name, "plain")}
		for _, k := range facts.Keys {
			payload, err := hex.DecodeString(k.Dump)
			if err != nil {
				t.Fatal(err)
			}
			e, err := ReadDump(payload, Version70)
			if err != nil {
				t.Fatalf("%s: key %q: %v", name, k.Key, err)
			}
			d := decode(t, e)
			checkFacts(t, name+" DUMP", k, d, -2)
			var again []byte
			switch {
			case d.str != nil:
				again, err = DumpString(d.str, opts)
			case d.hash != nil:
				again, err = DumpHash(d.hash, opts)
			case d.chain != nil:
				again, err = DumpChain(d.chain, opts)
			case d.cuckoo != nil:
				again, err = DumpCuckoo(d.cuckoo, opts)
			}
			if err != nil {
				t.Fatalf("%s: key %q: %v", name, k.Key, err)
			}
			if !bytes.Equal(again, payload) {
				t.Errorf("%s: key %q: DUMP payload differs from Redis's:\n got %x\nwant %x", name, k.Key, again, payload)
			}
		}
	}
}

// TestRecordedOtherTypes reads a file holding lists, sets, sorted sets, a stream with a consumer
// group, RedisBloom's count-min sketch and a function library: refused by default with the
// key's name and type, skipped and counted when asked.
func TestRecordedOtherTypes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "other.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	var refused error
	for refused == nil {
		e, err := r.Next()
		if err != nil {
			refused = err
			break
		}
		decode(t, e)
	}
	var ue *UnsupportedError
	if !errors.As(refused, &ue) || !errors.Is(refused, ErrUnsupported) {
		t.Fatalf("first unsupported content: %v", refused)
	}
	t.Logf("refused: %v", refused)

	r, err = NewReader(bytes.NewReader(data), &ReaderOptions{Size: int64(len(data)), SkipUnsupported: true})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, string(e.Key))
	}
	want := map[string]int{"list": 1, "set": 2, "zset": 1, "stream": 1, "CMSk-TYPE": 1, "function": 1}
	if !reflect.DeepEqual(r.Skipped(), want) {
		t.Errorf("skipped %v, want %v", r.Skipped(), want)
	}
	if strings.Join(sortedCopy(keys), ",") != "bf,str" {
		t.Errorf("kept keys %v", keys)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
