package persist

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/rdb"
	"github.com/bloomd/bloom/internal/value"
	"github.com/bloomd/bloom/redisbloom"
)

// Redis's RDB as the snapshot's format (see the package documentation, "Redis's files"): a
// dbfilename ending in .rdb makes every snapshot a Redis 7.0 RDB file, which Redis loads; a
// snapshot is read in either format whatever its name. bloomd's own fields (the lineage and the
// log that follows) travel as two aux fields, which Redis ignores and does not write back.

// The aux fields of an RDB file that bloomd wrote: the lineage (16 hexadecimal digits) and the
// sequence number of the first log after it.
const (
	auxLineage = "bloomd-lineage"
	auxLogSeq  = "bloomd-log"
	// auxAddsNewUntil carries SnapshotHeader.AddsNewUntil in a full sync's RDB (see WriteSync).
	auxAddsNewUntil = "bloomd-adds-new-until"
)

// RedisDumpFile is Redis's default dbfilename: the file bloomd loads when it finds none of its
// own (see Store.Load).
const RedisDumpFile = "dump.rdb"

// IsRDBName reports whether a dbfilename asks for snapshots in Redis's RDB format: its name
// ends in .rdb, in any case.
func IsRDBName(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".rdb") }

// RDBOptions are the settings of RDB snapshots, with redis.conf's names.
type RDBOptions struct {
	NoCompression bool // rdbcompression no: strings and filters' bits written as they are
	NoChecksum    bool // rdbchecksum no: 0 in place of the file's CRC-64, as Redis writes it
	// SkipUnknown (rdb-skip-unknown-types yes) skips the keys of an RDB file whose types bloomd
	// does not hold (lists, sets, sorted sets, streams, other modules' values, keys of databases
	// other than 0) and its function libraries, counting them, instead of refusing the file.
	SkipUnknown bool
	// RedisVersion is the redis-ver aux field written; "" means "7.0.15".
	RedisVersion string
}

// magicOf names the format a file's first bytes announce: "rdb", "snapshot" (bloomd's), "log"
// (bloomd's append-only log) or "".
func magicOf(b []byte) string {
	switch {
	case len(b) >= 5 && string(b[:5]) == "REDIS":
		return "rdb"
	case len(b) >= len(snapMagic) && string(b[:len(snapMagic)]) == snapMagic:
		return "snapshot"
	case len(b) >= len(logMagic) && string(b[:len(logMagic)]) == logMagic:
		return "log"
	}
	return ""
}

// otherFormat returns the error for a file that is in another of the formats bloomd knows than
// the reader expected, naming what it is.
func otherFormat(name, kind string, head []byte) error {
	switch kind {
	case "rdb":
		v, err := rdb.ParseHeader(head)
		if err != nil {
			return fmt.Errorf("%w: %s is a Redis RDB file (header %q), not a bloomd snapshot", ErrOtherFormat, name, head[:min(len(head), 9)])
		}
		return fmt.Errorf("%w: %s is a Redis RDB file (version %d), not a bloomd snapshot; bloomd loads it as its snapshot from a dbfilename ending in .rdb, and `bloom rdb list` shows what it holds", ErrOtherFormat, name, v)
	case "snapshot":
		return fmt.Errorf("%w: %s is a bloomd snapshot, not a Redis RDB file: Redis cannot load it; bloomd writes RDB files where dbfilename ends in .rdb", ErrOtherFormat, name)
	case "log":
		return fmt.Errorf("%w: %s is a bloomd append-only log, not a snapshot", ErrOtherFormat, name)
	}
	return nil
}

// WriteRDB writes the snapshot of items to w as a Redis RDB file (version 10, Redis 7.0) and
// returns the bytes written: bloomd's header as aux fields, then the keys in database 0,
// strings as strings and filters as RedisBloom 2.6's module values, which Redis with RedisBloom
// loads. A filter's bits are read from its chain while they are written, as WriteSnapshot reads
// them, and its links and counts are those of the items. WriteRDB does not sync or close w.
func WriteRDB(w io.Writer, h SnapshotHeader, items []Item, opts RDBOptions) (int64, error) {
	return writeRDBTail(w, h, items, opts, nil)
}

// writeRDBTail is WriteRDB; tail, if not nil, is called once the keys are written for aux fields
// to write after them.
func writeRDBTail(w io.Writer, h SnapshotHeader, items []Item, opts RDBOptions, tail func() []rdb.AuxField) (int64, error) {
	cw := &countingWriter{w: w}
	ver := opts.RedisVersion
	if ver == "" {
		ver = "7.0.15"
	}
	var used uint64
	var expires uint64
	for _, it := range items {
		used += uint64(len(it.Key) + len(it.Value) + it.StrLen)
		switch {
		case it.Cuckoo != nil:
			used += it.Cuckoo.Info().Bytes
		case it.Chain != nil:
			used += it.Chain.Size()
		}
		if it.Expire != 0 {
			expires++
		}
	}
	aux := rdb.DefaultAux(ver, h.Created/1000, used)
	if h.Lineage != 0 {
		aux = append(aux, rdb.AuxField{Name: auxLineage, Value: fmt.Sprintf("%016x", h.Lineage)},
			rdb.AuxField{Name: auxLogSeq, Value: strconv.FormatUint(h.LogSeq, 10)})
	}
	wr, err := rdb.NewWriter(cw, aux, &rdb.WriterOptions{NoCompression: opts.NoCompression, NoChecksum: opts.NoChecksum})
	if err != nil {
		return cw.n, err
	}
	if len(items) > 0 {
		if err := wr.SelectDB(0, uint64(len(items)), expires); err != nil {
			return cw.n, err
		}
	}
	for _, it := range items {
		m := rdb.KeyMeta{Expire: it.Expire}
		key := []byte(it.Key)
		switch {
		case it.Cuckoo != nil:
			err = wr.WriteCuckoo(key, it.Cuckoo, m)
		case it.Chain != nil:
			header := it.Header
			if header == nil {
				if header, err = headerAt(it.Chain, it.Links, it.Count); err != nil {
					return cw.n, fmt.Errorf("persist: key %q: %w", clip(key), err)
				}
			}
			err = wr.WriteChain(key, it.Chain, header, m)
		case it.Str != nil:
			err = wr.WriteString(key, copyString(it), m)
		case it.Hash != nil:
			fields := make([]rdb.HashField, 0, it.Hash.Len())
			it.Hash.Each(func(name string, val []byte) {
				fields = append(fields, rdb.HashField{Field: []byte(name), Value: val})
			})
			err = wr.WriteHash(key, fields, m)
		default:
			err = wr.WriteString(key, it.Value, m)
		}
		if err != nil {
			return cw.n, fmt.Errorf("persist: key %q: %w", clip(key), err)
		}
	}
	if tail != nil {
		for _, a := range tail() {
			if err := wr.Aux(a); err != nil {
				return cw.n, err
			}
		}
	}
	if err := wr.Close(); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

// An RDBLoad is what ReadRDB found in a file besides its keys.
type RDBLoad struct {
	// Header is bloomd's header, from the aux fields bloomd writes; its Lineage is 0 when
	// another program (Redis) wrote the file. Created is the file's ctime either way.
	Header  SnapshotHeader
	Version int // the RDB version
	Stats   SnapshotStats
	// Skipped counts what SkipUnknown skipped, by type ("list", "zset", "function", a module's
	// type name, "db 3" for a key of database 3).
	Skipped map[string]int
	// StreamDB is the database a primary's replication stream starts in (Redis's aux field
	// repl-stream-db, in the RDB of a full sync); 0 without it.
	StreamDB int
	// BodyCRC is the CRC-64 of the file's bytes before its end marker (rdb.Reader.BodyCRC).
	BodyCRC uint64
}

// ReadRDB reads a Redis RDB file of size bytes from r (whose name errors report), handing each
// key to sink: strings to String, RedisBloom's filters to BuildFilter and BuildCuckoo, which
// decode them into filters made with the memory hooks the sink gives. A key of a type bloomd
// does not hold, or of a database other than 0, is refused with an error naming it and its type
// (matching rdb.ErrUnsupported), unless opts.SkipUnknown; damage is an error matching
// ErrRDBDamaged that names the byte offset; bloomd's own snapshot is ErrOtherFormat. As with
// ReadSnapshot, after an error the keys handed over so far are not a snapshot.
func ReadRDB(r io.Reader, size int64, name string, sink Sink, opts RDBOptions) (RDBLoad, error) {
	return readRDBTee(r, size, name, sink, opts, nil)
}

// readRDBTee is ReadRDB; size may be 0 (not known: an RDB sent behind an EOF mark, read exactly
// through its checksum), and tee, if not nil, receives the file's bytes (rdb.ReaderOptions.Tee).
func readRDBTee(r io.Reader, size int64, name string, sink Sink, opts RDBOptions, tee io.Writer) (RDBLoad, error) {
	var ld RDBLoad
	ld.Stats.Bytes = size
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 1<<20)
	}
	if head, _ := br.Peek(9); magicOf(head) != "rdb" {
		if err := otherFormat(name, magicOf(head), head); err != nil {
			return ld, err
		}
		return ld, fmt.Errorf("%w: %s: not a Redis RDB file: it starts with %q", ErrRDBDamaged, name, head)
	}
	rd, err := rdb.NewReader(br, &rdb.ReaderOptions{Size: size, SkipUnsupported: opts.SkipUnknown, Tee: tee})
	if err != nil {
		if errors.Is(err, rdb.ErrVersion) {
			return ld, fmt.Errorf("persist: %s is a Redis RDB file of a version bloomd does not read: %w (it reads 9 to 12, written by Redis 6.2 to 7.4)", name, err)
		}
		return ld, fmt.Errorf("%w: %s: %w", ErrRDBDamaged, name, err)
	}
	ld.Version = rd.Version()
	otherDBs := map[int]int{}
	fieldTTL := 0 // hashes skipped for their fields' expiry times
	for {
		e, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return ld, rdbError(name, err)
		}
		if e.DB != 0 {
			if !opts.SkipUnknown {
				return ld, rdbError(name, &rdb.UnsupportedError{Key: e.Key, DB: e.DB, Type: rdb.TypeName(e.Type), What: "bloomd has one database, 0"})
			}
			otherDBs[e.DB]++
			continue
		}
		switch e.Kind {
		case rdb.KindString:
			v, err := e.ReadString()
			if err != nil {
				return ld, rdbError(name, err)
			}
			if err := sink.String(e.Key, v, e.Expire); err != nil {
				return ld, fmt.Errorf("persist: %s: key %q: %w", name, clip(e.Key), err)
			}
			ld.Stats.Strings++
		case rdb.KindBloom:
			var bits int64
			err := sink.BuildFilter(e.Key, e.Expire, func(o *redisbloom.Options) (*redisbloom.Chain, error) {
				ch, err := e.ReadChain(o)
				if err == nil {
					bits = int64(ch.Size())
				}
				return ch, err
			})
			if err != nil {
				return ld, sinkError(name, e.Key, err)
			}
			ld.Stats.Filters++
			ld.Stats.BitBytes += bits
		case rdb.KindCuckoo:
			err := sink.BuildCuckoo(e.Key, e.Expire, func(o *bloom.CuckooOptions) (*bloom.Cuckoo, error) {
				return e.ReadCuckoo(o)
			})
			if err != nil {
				return ld, sinkError(name, e.Key, err)
			}
			ld.Stats.Filters++
		case rdb.KindHash:
			fields, err := e.ReadHash()
			if err != nil {
				return ld, rdbError(name, err)
			}
			if slices.ContainsFunc(fields, func(f rdb.HashField) bool { return f.Expire != 0 }) {
				if !opts.SkipUnknown {
					return ld, rdbError(name, &rdb.UnsupportedError{Key: e.Key, DB: e.DB, Type: rdb.TypeName(e.Type),
						What: "its fields have expiry times (Redis 7.4's HEXPIRE), which bloomd's hashes do not"})
				}
				fieldTTL++
				continue
			}
			h := value.NewHash()
			for _, f := range fields {
				h.Set(f.Field, f.Value, value.DefaultLimits)
			}
			if h.Len() == 0 {
				return ld, rdbError(name, fmt.Errorf("%w: key %q: a hash with no fields", rdb.ErrCorrupt, clip(e.Key)))
			}
			if err := sink.Hash(e.Key, h, e.Expire); err != nil {
				return ld, fmt.Errorf("persist: %s: key %q: %w", name, clip(e.Key), err)
			}
			ld.Stats.Hashes++
		default:
			return ld, rdbError(name, &rdb.UnsupportedError{Key: e.Key, DB: e.DB, Type: rdb.TypeName(e.Type)})
		}
		ld.Stats.Keys++
	}
	ld.Stats.Bytes = rd.Offset()
	ld.BodyCRC = rd.BodyCRC()
	ld.Skipped = rd.Skipped()
	if ld.Skipped == nil {
		ld.Skipped = map[string]int{}
	}
	for db, n := range otherDBs {
		ld.Skipped["db "+strconv.Itoa(db)] += n
	}
	if fieldTTL > 0 {
		ld.Skipped["hash with field expiry"] += fieldTTL
	}
	for _, a := range rd.Aux() {
		switch a.Name {
		case auxLineage:
			ld.Header.Lineage, _ = strconv.ParseUint(a.Value, 16, 64)
		case auxLogSeq:
			ld.Header.LogSeq, _ = strconv.ParseUint(a.Value, 10, 64)
		case "ctime":
			if t, err := strconv.ParseInt(a.Value, 10, 64); err == nil {
				ld.Header.Created = t * 1000
			}
		case auxAddsNewUntil:
			ld.Header.AddsNewUntil, _ = strconv.ParseInt(a.Value, 10, 64)
		case "repl-stream-db":
			if db, err := strconv.Atoi(a.Value); err == nil && db >= 0 {
				ld.StreamDB = db
			}
		}
	}
	if ld.Header.Lineage == 0 || ld.Header.LogSeq == 0 {
		ld.Header.Lineage, ld.Header.LogSeq = 0, 0
	}
	return ld, nil
}

// rdbError words an error of the RDB reader for a log line: a key of a type bloomd does not
// hold says how to skip such keys; damage matches ErrRDBDamaged.
func rdbError(name string, err error) error {
	if errors.Is(err, rdb.ErrUnsupported) {
		return fmt.Errorf("persist: %s: %w; bloomd loaded nothing and changed no file. To load the rest and skip such keys (counted in the log), set rdb-skip-unknown-types yes", name, err)
	}
	if errors.Is(err, rdb.ErrCorrupt) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s: %w", ErrRDBDamaged, name, err)
	}
	return fmt.Errorf("persist: %s: %w", name, err)
}

// sinkError words the sink's refusal of a filter: its own error (the memory ceiling:
// ErrNoMemory) or the decoder's, which it returns unchanged.
func sinkError(name string, key []byte, err error) error {
	if errors.Is(err, rdb.ErrCorrupt) || errors.Is(err, redisbloom.ErrBadData) {
		return fmt.Errorf("%w: %s: key %q: %w", ErrRDBDamaged, name, clip(key), err)
	}
	return fmt.Errorf("persist: %s: key %q: %w", name, clip(key), err)
}

// describeSkipped renders Skipped for a log line: "list=2 zset=1".
func describeSkipped(m map[string]int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k, m[k])
	}
	return b.String()
}

// copyString returns the first StrLen bytes of a string that clients may go on changing
// (Item.Str), copied a piece at a time under its read lock, as writeString copies them for
// bloomd's own snapshot: the copy plus the log after the snapshot's instant replays to the exact
// string.
func copyString(it Item) []byte {
	b := make([]byte, it.StrLen)
	for off := 0; off < it.StrLen; off += stringPiece {
		end := min(off+stringPiece, it.StrLen)
		it.Str.RLock()
		copy(b[off:end], it.Str.Bytes()[off:])
		it.Str.RUnlock()
	}
	return b
}
