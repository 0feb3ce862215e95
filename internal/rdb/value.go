package rdb

import (
	"fmt"
	"math"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisbloom"
)

// A value is the unread value of an Entry.
type value struct {
	in      *input
	typ     Type
	e       *Entry
	version int
	module  bool    // the module id has been read
	r       *Reader // nil for a DUMP payload
	dump    bool    // a DUMP payload: nothing may follow the value
	started bool
	done    bool
}

// begin marks the value as being read, once.
func (v *value) begin(kind Kind) error {
	if v.started {
		return fmt.Errorf("rdb: key %q: the value was read already", clip(v.e.Key))
	}
	if v.e.Kind != kind {
		return fmt.Errorf("rdb: key %q holds a %s value, not what was asked for", clip(v.e.Key), TypeName(v.typ))
	}
	v.started = true
	return nil
}

// end finishes a read: records a failure in the Reader (its stream position is lost) and, for a
// DUMP payload, checks that the value used every byte.
func (v *value) end(err error) error {
	if err == nil && v.module {
		var op uint64
		if op, err = v.in.readCount(); err == nil && op != modEOF {
			err = corruptf("module value not followed by its end marker (opcode %d) at byte %d", op, v.in.off)
		}
	}
	if err == nil && v.dump && v.in.left() != 0 {
		err = corruptf("%d bytes after the value", v.in.left())
	}
	if err != nil {
		err = v.wrap(err)
		if v.r != nil && v.r.err == nil {
			v.r.err = err
		}
		return err
	}
	v.done = true
	return nil
}

func (v *value) wrap(err error) error {
	if err == nil || v.e.Key == nil {
		return err
	}
	return fmt.Errorf("key %q: %w", clip(v.e.Key), err)
}

// finish skips the value unless it was read.
func (v *value) finish() error {
	if v.done {
		return nil
	}
	if v.started {
		return fmt.Errorf("rdb: key %q: its value was not read to the end", clip(v.e.Key))
	}
	v.started = true
	if err := v.skip(); err != nil {
		return v.wrap(err)
	}
	v.done = true
	return nil
}

// skip reads past the value (for a module value, past its end marker).
func (v *value) skip() error {
	in := v.in
	strings := func(per uint64) error {
		n, err := in.count(per, "elements")
		if err != nil {
			return err
		}
		for range n * per {
			if err := in.skipString(); err != nil {
				return err
			}
		}
		return nil
	}
	switch v.typ {
	case TypeString, TypeHashZipmap, TypeListZiplist, TypeSetIntset, TypeZSetZiplist, TypeHashZiplist,
		TypeHashListpack, TypeZSetListpack, TypeSetListpack, TypeHashListpackExPre:
		return in.skipString()
	case TypeHashListpackEx:
		if err := in.discard(8); err != nil {
			return err
		}
		return in.skipString()
	case TypeList, TypeSet, TypeListQuicklist:
		return strings(1)
	case TypeHash:
		return strings(2)
	case TypeZSet, TypeZSet2:
		n, err := in.count(2, "elements")
		if err != nil {
			return err
		}
		for range n {
			if err := in.skipString(); err != nil {
				return err
			}
			if v.typ == TypeZSet2 {
				err = in.discard(8)
			} else {
				err = skipTextDouble(in)
			}
			if err != nil {
				return err
			}
		}
		return nil
	case TypeListQuicklist2:
		n, err := in.count(2, "nodes")
		if err != nil {
			return err
		}
		for range n {
			if _, err := in.readCount(); err != nil {
				return err
			}
			if err := in.skipString(); err != nil {
				return err
			}
		}
		return nil
	case TypeHashMetadata, TypeHashMetadataPreGA:
		if v.typ == TypeHashMetadata {
			if err := in.discard(8); err != nil {
				return err
			}
		}
		n, err := in.count(3, "fields")
		if err != nil {
			return err
		}
		for range n {
			if _, err := in.readCount(); err != nil {
				return err
			}
			for range 2 {
				if err := in.skipString(); err != nil {
					return err
				}
			}
		}
		return nil
	case TypeStreamListpacks, TypeStreamListpacks2, TypeStreamListpacks3:
		return skipStream(in, v.typ)
	case TypeModule2:
		if !v.module {
			if _, err := in.readCount(); err != nil {
				return err
			}
		}
		return skipModuleFields(in)
	}
	return corruptf("cannot skip a value of RDB type %d", v.typ)
}

// skipTextDouble reads past a double written as text (RDB_TYPE_ZSET): a length byte, or 253-255
// for nan, +inf and -inf.
func skipTextDouble(in *input) error {
	b, err := in.ReadByte()
	if err != nil || b >= 253 {
		return err
	}
	return in.discard(uint64(b))
}

func skipStream(in *input, t Type) error {
	n, err := in.count(2, "listpacks")
	if err != nil {
		return err
	}
	for range 2 * n {
		if err := in.skipString(); err != nil {
			return err
		}
	}
	counts := 3 // length, last id
	if t >= TypeStreamListpacks2 {
		counts += 5 // first id, max deleted id, entries added
	}
	for range counts {
		if _, err := in.readCount(); err != nil {
			return err
		}
	}
	groups, err := in.count(3, "consumer groups")
	if err != nil {
		return err
	}
	for range groups {
		if err := in.skipString(); err != nil {
			return err
		}
		ids := 2
		if t >= TypeStreamListpacks2 {
			ids++
		}
		for range ids {
			if _, err := in.readCount(); err != nil {
				return err
			}
		}
		pel, err := in.count(25, "pending entries")
		if err != nil {
			return err
		}
		for range pel {
			if err := in.discard(16 + 8); err != nil {
				return err
			}
			if _, err := in.readCount(); err != nil {
				return err
			}
		}
		consumers, err := in.count(10, "consumers")
		if err != nil {
			return err
		}
		for range consumers {
			if err := in.skipString(); err != nil {
				return err
			}
			times := uint64(8)
			if t >= TypeStreamListpacks3 {
				times = 16
			}
			if err := in.discard(times); err != nil {
				return err
			}
			np, err := in.count(16, "pending entries")
			if err != nil {
				return err
			}
			if err := in.discard(16 * np); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipModuleFields reads past a module value's fields and its end marker.
func skipModuleFields(in *input) error {
	for {
		op, err := in.readCount()
		if err != nil {
			return err
		}
		switch op {
		case modEOF:
			return nil
		case modSInt, modUInt:
			_, _, err = in.readLen()
		case modFloat:
			err = in.discard(4)
		case modDouble:
			err = in.discard(8)
		case modString:
			err = in.skipString()
		default:
			err = corruptf("unknown module field opcode %d at byte %d", op, in.off)
		}
		if err != nil {
			return err
		}
	}
}

// modUint reads a module value's unsigned field (RedisModule_LoadUnsigned).
func (v *value) modUint(what string) (uint64, error) {
	op, err := v.in.readCount()
	if err != nil {
		return 0, err
	}
	if op != modUInt {
		return 0, corruptf("%s: module field opcode %d where an unsigned integer (2) belongs, at byte %d", what, op, v.in.off)
	}
	n, enc, err := v.in.readLen()
	if err == nil && enc {
		err = corruptf("%s: an encoded string where an integer belongs, at byte %d", what, v.in.off)
	}
	return n, err
}

// modDouble reads a module value's double field (RedisModule_LoadDouble).
func (v *value) modDouble(what string) (float64, error) {
	op, err := v.in.readCount()
	if err != nil {
		return 0, err
	}
	if op != modDouble {
		return 0, corruptf("%s: module field opcode %d where a double (4) belongs, at byte %d", what, op, v.in.off)
	}
	b, err := v.in.readUint64LE()
	return math.Float64frombits(b), err
}

// modString reads the head of a module value's string field (RedisModule_LoadStringBuffer).
func (v *value) modString(what string) (stringHead, error) {
	op, err := v.in.readCount()
	if err != nil {
		return stringHead{}, err
	}
	if op != modString {
		return stringHead{}, corruptf("%s: module field opcode %d where a string (5) belongs, at byte %d", what, op, v.in.off)
	}
	return v.in.readStringHead()
}

// small reads an unsigned field that RedisBloom keeps in a narrower type.
func (v *value) small(what string, limit uint64) (uint64, error) {
	n, err := v.modUint(what)
	if err == nil && n > limit {
		err = corruptf("%s %d is above %d", what, n, limit)
	}
	return n, err
}

// ReadString returns a string value (KindString).
func (e *Entry) ReadString() ([]byte, error) {
	if err := e.v.begin(KindString); err != nil {
		return nil, err
	}
	s, err := e.v.in.readString()
	return s, e.v.end(err)
}

// A HashField is one field of a hash.
type HashField struct {
	Field, Value []byte
	// Expire is the field's own expiry time (Redis 7.4's HEXPIRE), unix ms; 0 for none.
	Expire int64
}

// ReadHash returns a hash value (KindHash) in the order the file holds its fields, whatever
// its encoding (hash table, zipmap, ziplist, listpack, and 7.4's with field expiry times). A
// field that appears twice is bad data; a hash with no fields fails with ErrEmptyKey.
func (e *Entry) ReadHash() ([]HashField, error) {
	if err := e.v.begin(KindHash); err != nil {
		return nil, err
	}
	h, err := e.v.readHash()
	return h, e.v.end(err)
}

func (v *value) readHash() ([]HashField, error) {
	in := v.in
	var fields []HashField
	seen := map[string]struct{}{}
	add := func(f, val []byte, expire int64) error {
		if _, dup := seen[string(f)]; dup {
			return corruptf("hash field %q appears twice", clip(f))
		}
		seen[string(f)] = struct{}{}
		fields = append(fields, HashField{f, val, expire})
		return nil
	}
	packed := func(per int, blob []byte, decode func([]byte, func(element) error) (int, error)) error {
		var group [3][]byte
		i := 0
		n, err := decode(blob, func(el element) error {
			group[i] = append([]byte(nil), el...)
			if i++; i < per {
				return nil
			}
			i = 0
			var expire int64
			if per == 3 {
				t, ok := parseInt(group[2])
				if !ok || t < 0 {
					return corruptf("hash field %q has the expiry time %q", clip(group[0]), group[2])
				}
				expire = t
			}
			return add(group[0], group[1], expire)
		})
		if err == nil && n%per != 0 {
			err = corruptf("a packed hash of %d elements, not a multiple of %d", n, per)
		}
		return err
	}
	switch v.typ {
	case TypeHash, TypeHashMetadata, TypeHashMetadataPreGA:
		var minExpire uint64
		if v.typ == TypeHashMetadata {
			m, err := in.readUint64LE()
			if err != nil {
				return nil, err
			}
			minExpire = m
		}
		least := uint64(2)
		if v.typ != TypeHash {
			least = 3
		}
		n, err := in.count(least, "hash fields")
		if err != nil {
			return nil, err
		}
		for range n {
			var expire int64
			if v.typ != TypeHash {
				ttl, err := in.readCount()
				if err != nil {
					return nil, err
				}
				if ttl != 0 && v.typ == TypeHashMetadata {
					ttl += minExpire - 1
				}
				if ttl > math.MaxInt64 {
					return nil, corruptf("hash field expiry time %d", ttl)
				}
				expire = int64(ttl)
			}
			f, err := in.readString()
			if err != nil {
				return nil, err
			}
			val, err := in.readString()
			if err != nil {
				return nil, err
			}
			if err := add(f, val, expire); err != nil {
				return nil, err
			}
		}
	case TypeHashZipmap:
		blob, err := in.readString()
		if err != nil {
			return nil, err
		}
		if err := zipmapPairs(blob, func(f, val []byte) error {
			return add(append([]byte(nil), f...), append([]byte(nil), val...), 0)
		}); err != nil {
			return nil, err
		}
	case TypeHashZiplist, TypeHashListpack, TypeHashListpackEx, TypeHashListpackExPre:
		if v.typ == TypeHashListpackEx {
			if err := in.discard(8); err != nil { // the smallest expiry time, a hint
				return nil, err
			}
		}
		blob, err := in.readString()
		if err != nil {
			return nil, err
		}
		per, decode := 2, listpackElements
		switch v.typ {
		case TypeHashZiplist:
			decode = ziplistElements
		case TypeHashListpackEx, TypeHashListpackExPre:
			per = 3
		}
		if err := packed(per, blob, decode); err != nil {
			return nil, err
		}
	default:
		return nil, corruptf("RDB type %d is not a hash", v.typ)
	}
	if len(fields) == 0 {
		return nil, ErrEmptyKey
	}
	return fields, nil
}

// A bloomWalk receives the parts of an MBbloom-- value as they are read.
type bloomWalk struct {
	start func(items, links uint64, options, expansion uint32) error
	link  func(h redisbloom.LinkHeader) error
	bits  func(p []byte, off int64) error // nil: the bits are skipped
	items func(n uint64) error
}

// walkBloom reads an MBbloom-- value as RedisBloom 2.6's BFRdbLoad does (encodings 2 to 4):
// the chain's item count, links, options and (from encoding 4) expansion, then for each link its
// capacity, error rate, hashes, bits per entry, bits, n2, bit array and item count.
func (v *value) walkBloom(w bloomWalk) error {
	enc := v.e.Encver
	items, err := v.modUint("items")
	if err != nil {
		return err
	}
	links, err := v.modUint("sub-filters")
	if err != nil {
		return err
	}
	if links == 0 || links > uint64(v.in.left())/20 {
		return corruptf("%d sub-filters", links)
	}
	options, err := v.small("options", math.MaxUint32)
	if err != nil {
		return err
	}
	growth := uint64(redisbloom.DefaultExpansion)
	if enc >= 4 {
		if growth, err = v.small("expansion", math.MaxUint32); err != nil {
			return err
		}
	}
	if err := w.start(items, links, uint32(options), uint32(growth)); err != nil {
		return err
	}
	var buf []byte
	for i := range links {
		var h redisbloom.LinkHeader
		if h.Capacity, err = v.modUint("capacity"); err != nil {
			return err
		}
		if h.ErrorRate, err = v.modDouble("error rate"); err != nil {
			return err
		}
		hashes, err := v.small("hashes", math.MaxUint32)
		if err != nil {
			return err
		}
		h.Hashes = uint32(hashes)
		if h.BitsPerEntry, err = v.modDouble("bits per entry"); err != nil {
			return err
		}
		if h.Bits, err = v.modUint("bits"); err != nil {
			return err
		}
		n2, err := v.small("n2", math.MaxUint8)
		if err != nil {
			return err
		}
		h.N2 = uint8(n2)
		sh, err := v.modString("bit array")
		if err != nil {
			return err
		}
		h.Bytes = sh.n
		if err := w.link(h); err != nil {
			return fmt.Errorf("sub-filter %d: %w", i, err)
		}
		if w.bits == nil {
			err = v.in.skipBody(sh)
		} else {
			off := int64(0)
			if buf == nil && sh.kind == -1 {
				buf = make([]byte, min(sh.n, piece))
			}
			err = v.in.readBody(sh, buf, func(p []byte) error {
				err := w.bits(p, off)
				off += int64(len(p))
				return err
			})
		}
		if err != nil {
			return err
		}
		n, err := v.modUint("sub-filter items")
		if err != nil {
			return err
		}
		if err := w.items(n); err != nil {
			return err
		}
	}
	return nil
}

// skipBody reads past a string whose head was read.
func (in *input) skipBody(h stringHead) error {
	switch h.kind {
	case -1:
		return in.discard(h.n)
	case encLZF:
		return in.discard(h.clen)
	}
	return nil
}

// ReadChain decodes a RedisBloom Bloom filter (KindBloom) into a chain made with opts (whose
// Reserve hook is called before each sub-filter is allocated), streaming each sub-filter's bits
// into it as they are read. Bad data fails with an error matching ErrCorrupt (and, for what
// RedisBloom's own checks refuse, redisbloom.ErrBadData).
func (e *Entry) ReadChain(opts *redisbloom.Options) (*redisbloom.Chain, error) {
	if err := e.v.begin(KindBloom); err != nil {
		return nil, err
	}
	var b *redisbloom.Builder
	err := e.v.walkBloom(bloomWalk{
		start: func(items, links uint64, options, expansion uint32) (err error) {
			b, err = redisbloom.NewBuilder(items, links, options, expansion, opts)
			return err
		},
		link:  func(h redisbloom.LinkHeader) error { return b.AddLink(h) },
		bits:  func(p []byte, off int64) error { return b.WriteAt(p, off) },
		items: func(n uint64) error { return b.SetItems(n) },
	})
	var ch *redisbloom.Chain
	if err == nil {
		ch, err = b.Chain()
	}
	if err != nil {
		return nil, e.v.end(err)
	}
	return ch, e.v.end(nil)
}

// ReadBloomHeader decodes a RedisBloom Bloom filter's parameters and counts (KindBloom) and
// skips its bits: what BF.INFO reports, without the memory for the bits.
func (e *Entry) ReadBloomHeader() (redisbloom.Header, error) {
	if err := e.v.begin(KindBloom); err != nil {
		return redisbloom.Header{}, err
	}
	var h redisbloom.Header
	err := e.v.walkBloom(bloomWalk{
		start: func(items, links uint64, options, expansion uint32) error {
			h = redisbloom.Header{Items: items, Options: options, Expansion: expansion, Links: make([]redisbloom.LinkHeader, 0, min(links, 64))}
			return nil
		},
		link: func(l redisbloom.LinkHeader) error {
			h.Links = append(h.Links, l)
			return nil
		},
		items: func(n uint64) error {
			h.Links[len(h.Links)-1].Items = n
			return nil
		},
	})
	if err == nil {
		_, err = redisbloom.ParseHeader(h.Append(nil))
	}
	return h, e.v.end(err)
}

// A cuckooWalk receives the parts of an MBbloomCF value as they are read.
type cuckooWalk struct {
	start func(info bloom.CuckooInfo) error
	slots func(i int, p []byte, off uint64) error // nil: skipped
}

// walkCuckoo reads an MBbloomCF value as RedisBloom 2.6's CFRdbLoad does: sub-filters, buckets,
// items, and from encoding 4 deletions, bucket size, max iterations and expansion (before it,
// RedisBloom's defaults), then each sub-filter's buckets (from encoding 4) and slots. Every
// sub-filter must have the buckets its place in the filter gives it, and its slots that many
// bytes.
func (v *value) walkCuckoo(w cuckooWalk) error {
	var info bloom.CuckooInfo
	filters, err := v.small("sub-filters", bloom.CuckooMaxFilters)
	if err != nil {
		return err
	}
	if info.Buckets, err = v.modUint("buckets"); err != nil {
		return err
	}
	if filters == 0 || info.Buckets == 0 {
		return corruptf("a cuckoo filter of %d sub-filters and %d buckets", filters, info.Buckets)
	}
	info.Filters = int(filters)
	if info.Items, err = v.modUint("items"); err != nil {
		return err
	}
	info.BucketSize, info.MaxIterations, info.Expansion = bloom.CuckooDefaultBucketSize, bloom.CuckooDefaultMaxIterations, bloom.CuckooDefaultExpansion
	if v.e.Encver >= 4 {
		if info.Deletes, err = v.modUint("deletions"); err != nil {
			return err
		}
		for _, f := range []struct {
			p    *uint16
			what string
		}{{&info.BucketSize, "bucket size"}, {&info.MaxIterations, "max iterations"}, {&info.Expansion, "expansion"}} {
			n, err := v.small(f.what, math.MaxUint16)
			if err != nil {
				return err
			}
			*f.p = uint16(n)
		}
	}
	total, err := bloom.CheckCuckooInfo(info)
	if err != nil {
		return corruptf("%v", err)
	}
	if v.in.size >= 0 && total/lzfMaxRatio > uint64(v.in.left()) {
		return corruptf("a cuckoo filter of %d bytes in the %d bytes left", total, v.in.left())
	}
	info.Bytes = total
	if err := w.start(info); err != nil {
		return err
	}
	var buf []byte
	buckets := info.Buckets
	for i := range info.Filters {
		if i > 0 && info.Expansion > 1 {
			buckets *= uint64(info.Expansion) // CheckCuckooInfo made sure this does not overflow
		}
		if v.e.Encver >= 4 {
			n, err := v.modUint("sub-filter buckets")
			if err != nil {
				return err
			}
			if n != buckets {
				return corruptf("sub-filter %d has %d buckets, not the %d of its place", i, n, buckets)
			}
		}
		sh, err := v.modString("slots")
		if err != nil {
			return err
		}
		if size := buckets * uint64(info.BucketSize); sh.n != size {
			return corruptf("sub-filter %d has %d bytes of slots, not %d", i, sh.n, size)
		}
		if w.slots == nil {
			err = v.in.skipBody(sh)
		} else {
			off := uint64(0)
			if buf == nil && sh.kind == -1 {
				buf = make([]byte, min(sh.n, piece))
			}
			err = v.in.readBody(sh, buf, func(p []byte) error {
				err := w.slots(i, p, off)
				off += uint64(len(p))
				return err
			})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadCuckoo decodes a RedisBloom cuckoo filter (KindCuckoo) into a filter made with opts (its
// MaxFilters and Reserve), streaming the slots into it as they are read.
func (e *Entry) ReadCuckoo(opts *bloom.CuckooOptions) (*bloom.Cuckoo, error) {
	if err := e.v.begin(KindCuckoo); err != nil {
		return nil, err
	}
	var cf *bloom.Cuckoo
	err := e.v.walkCuckoo(cuckooWalk{
		start: func(info bloom.CuckooInfo) (err error) {
			cf, err = bloom.NewCuckooFromInfo(info, opts)
			return err
		},
		slots: func(i int, p []byte, off uint64) error { return cf.WriteSlots(i, off, p) },
	})
	if err != nil {
		return nil, e.v.end(err)
	}
	return cf, e.v.end(nil)
}

// ReadCuckooInfo decodes a RedisBloom cuckoo filter's parameters and counts (KindCuckoo) and
// skips its slots: what CF.INFO reports, without the memory for the slots.
func (e *Entry) ReadCuckooInfo() (bloom.CuckooInfo, error) {
	if err := e.v.begin(KindCuckoo); err != nil {
		return bloom.CuckooInfo{}, err
	}
	var info bloom.CuckooInfo
	err := e.v.walkCuckoo(cuckooWalk{start: func(i bloom.CuckooInfo) error { info = i; return nil }})
	return info, e.v.end(err)
}

// Skip reads past the value. Next does it for a value not read.
func (e *Entry) Skip() error { return e.v.finish() }
