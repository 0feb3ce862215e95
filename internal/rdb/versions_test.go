package rdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
)

// Files of the other versions and encodings Redis 6.2 to 7.4 write, built field by field as
// rdb.c writes them (only Redis 7.0 is installed to record real ones).

type fileBuilder struct {
	b bytes.Buffer
	o *output
}

func newFile(version int) *fileBuilder {
	f := &fileBuilder{}
	f.o = newOutput(&f.b, WriterOptions{Version: version, NoCompression: true})
	f.o.write(fmt.Appendf(nil, "REDIS%04d", version))
	return f
}

func (f *fileBuilder) key(t Type, name string) { f.o.byte(byte(t)); f.o.str([]byte(name)) }

func (f *fileBuilder) done() []byte {
	f.o.byte(opEOF)
	f.o.flush()
	sum := f.o.crc
	f.o.write(binary.LittleEndian.AppendUint64(nil, sum))
	f.o.flush()
	return f.b.Bytes()
}

func ziplist(elems ...string) []byte {
	var body []byte
	prev, last := 0, 10
	for _, e := range elems {
		at := 10 + len(body)
		body = append(body, byte(prev))
		if v, ok := parseInt([]byte(e)); ok && v >= 0 && v <= 12 {
			body = append(body, 0xF1+byte(v))
		} else if ok && v >= -32768 && v <= 32767 {
			body = append(body, 0xC0, byte(v), byte(v>>8))
		} else {
			body = append(body, byte(len(e)))
			body = append(body, e...)
		}
		prev, last = 10+len(body)-at, at
	}
	zl := make([]byte, 10, 11+len(body))
	zl = append(zl, body...)
	zl = append(zl, 0xFF)
	binary.LittleEndian.PutUint32(zl, uint32(len(zl)))
	binary.LittleEndian.PutUint32(zl[4:], uint32(last))
	binary.LittleEndian.PutUint16(zl[8:], uint16(len(elems)))
	return zl
}

func TestVersionsAndEncodings(t *testing.T) {
	want := []HashField{{[]byte("a"), []byte("1"), 0}, {[]byte("bb"), []byte("-300"), 0}, {[]byte("c"), []byte("text"), 0}}
	for _, v := range []int{Version62, Version70, Version72, Version74} {
		f := newFile(v)
		f.o.byte(opSelectDB)
		f.o.length(3)
		// Redis 6.2's small hash: a ziplist.
		f.key(TypeHashZiplist, "ziplist")
		f.o.str(ziplist("a", "1", "bb", "-300", "c", "text"))
		// Redis 2.4's zipmap, still read by 7.x.
		f.key(TypeHashZipmap, "zipmap")
		f.o.str([]byte("\x03\x01a\x01\x001\x02bb\x04\x02-300xx\x01c\x04\x00text\xff"))
		// Redis 7.4's hashes with field expiry times: a table and a listpack, and their
		// release candidates' forms.
		f.key(TypeHashMetadata, "hfe-table")
		f.o.write(binary.LittleEndian.AppendUint64(nil, 1000))
		f.o.length(2)
		f.o.length(0)
		f.o.str([]byte("a"))
		f.o.str([]byte("1"))
		f.o.length(6) // 6 + 1000 - 1
		f.o.str([]byte("b"))
		f.o.str([]byte("2"))
		f.key(TypeHashListpackEx, "hfe-listpack")
		f.o.write(binary.LittleEndian.AppendUint64(nil, 1005))
		f.o.str(appendListpack(nil, [][]byte{[]byte("a"), []byte("1"), []byte("0"), []byte("b"), []byte("2"), []byte("1005")}))
		f.key(TypeHashMetadataPreGA, "hfe-table-rc")
		f.o.length(1)
		f.o.length(77)
		f.o.str([]byte("a"))
		f.o.str([]byte("1"))
		f.key(TypeHashListpackExPre, "hfe-listpack-rc")
		f.o.str(appendListpack(nil, [][]byte{[]byte("a"), []byte("1"), []byte("77")}))
		// Types to skip: 7.2's set listpack, 7.4's stream with consumers' active times, a
		// quicklist, a sorted set with text scores.
		f.key(TypeSetListpack, "set")
		f.o.str(appendListpack(nil, [][]byte{[]byte("x")}))
		f.key(TypeStreamListpacks3, "stream")
		f.o.length(1)
		f.o.str(make([]byte, 16))
		f.o.str(appendListpack(nil, [][]byte{[]byte("1")}))
		for range 8 {
			f.o.length(1)
		}
		f.o.length(1) // a group
		f.o.str([]byte("g"))
		f.o.length(1)
		f.o.length(1)
		f.o.length(1)
		f.o.length(1) // its pending entry
		f.o.write(make([]byte, 16+8))
		f.o.length(1)
		f.o.length(1) // a consumer
		f.o.str([]byte("c"))
		f.o.write(make([]byte, 16))
		f.o.length(1)
		f.o.write(make([]byte, 16))
		f.key(TypeListQuicklist2, "list")
		f.o.length(1)
		f.o.length(2)
		f.o.str(appendListpack(nil, [][]byte{[]byte("e")}))
		f.key(TypeZSet, "zset")
		f.o.length(2)
		f.o.str([]byte("m"))
		f.o.byte(3)
		f.o.write([]byte("1.5"))
		f.o.str([]byte("n"))
		f.o.byte(254)
		f.o.byte(opSlotInfo)
		f.o.length(1)
		f.o.length(2)
		f.o.length(3)
		f.key(TypeString, "last")
		f.o.str([]byte("end"))
		data := f.done()

		r, err := NewReader(bytes.NewReader(data), &ReaderOptions{Size: int64(len(data)), SkipUnsupported: true})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]HashField{}
		var last []byte
		for {
			e, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("version %d: %v", v, err)
			}
			if e.DB != 3 {
				t.Errorf("key %q in db %d", e.Key, e.DB)
			}
			if e.Kind == KindString {
				last, _ = e.ReadString()
				continue
			}
			h, err := e.ReadHash()
			if err != nil {
				t.Fatalf("version %d: %q: %v", v, e.Key, err)
			}
			got[string(e.Key)] = h
		}
		for _, k := range []string{"ziplist", "zipmap"} {
			if !reflect.DeepEqual(got[k], want) {
				t.Errorf("version %d: %s: %v", v, k, got[k])
			}
		}
		hfe := []HashField{{[]byte("a"), []byte("1"), 0}, {[]byte("b"), []byte("2"), 1005}}
		for _, k := range []string{"hfe-table", "hfe-listpack"} {
			if !reflect.DeepEqual(got[k], hfe) {
				t.Errorf("version %d: %s: %v", v, k, got[k])
			}
		}
		for _, k := range []string{"hfe-table-rc", "hfe-listpack-rc"} {
			if !reflect.DeepEqual(got[k], []HashField{{[]byte("a"), []byte("1"), 77}}) {
				t.Errorf("version %d: %s: %v", v, k, got[k])
			}
		}
		if string(last) != "end" || !reflect.DeepEqual(r.Skipped(), map[string]int{"set": 1, "stream": 1, "list": 1, "zset": 1}) {
			t.Errorf("version %d: last %q, skipped %v", v, last, r.Skipped())
		}
	}
	for _, v := range []string{"REDIS0008", "REDIS0013", "REDIX0010", "REDIS00a0"} {
		_, err := NewReader(bytes.NewReader([]byte(v+"\xff")), nil)
		if !errors.Is(err, ErrVersion) && !errors.Is(err, ErrNotRDB) {
			t.Errorf("%q: %v", v, err)
		}
	}
}

// TestCuckooOldEncoding reads a cuckoo filter in RedisBloom's encodings before 4 (no
// deletions, bucket size, iterations or expansion: RedisBloom's defaults, every sub-filter the
// first's size).
func TestCuckooOldEncoding(t *testing.T) {
	f := newFile(Version70)
	f.key(TypeModule2, "cf")
	id, _ := ModuleID(CuckooModule, 2)
	f.o.length(id)
	f.o.modUint(2) // sub-filters
	f.o.modUint(4) // buckets
	f.o.modUint(3) // items
	for i := range 2 {
		f.o.length(modString)
		f.o.str([]byte{1, 2, 3, 0, 0, 0, 0, byte(i)})
	}
	f.o.length(modEOF)
	data := f.done()
	r, err := NewReader(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	cf, err := e.ReadCuckoo(nil)
	if err != nil {
		t.Fatal(err)
	}
	i := cf.Info()
	if i.Filters != 2 || i.Buckets != 4 || i.BucketSize != 2 || i.MaxIterations != 20 || i.Expansion != 1 || i.Items != 3 {
		t.Errorf("info %+v", i)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatal(err)
	}
}
