package rdb

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// ReaderOptions configure a Reader. A nil *ReaderOptions means the zero value: size unknown,
// unsupported content refused.
type ReaderOptions struct {
	// Size is the length of the input in bytes, when known (a file's). Every length read is
	// then checked against what is left before anything is allocated for it, and a filter
	// larger than the rest of the input could possibly decompress to is refused. 0 means
	// unknown (a socket): strings are then allocated step by step as their bytes arrive.
	Size int64

	// SkipUnsupported skips, and counts in Skipped, keys of types bloomd does not hold (lists,
	// sets, sorted sets, streams, other modules' values), function libraries and module aux
	// data, instead of failing with an *UnsupportedError naming the first one.
	SkipUnsupported bool

	// Tee, if not nil, receives every byte the Reader consumes, in order, through a buffer of
	// 64 KiB that is written out when it fills and at the end of the RDB: exactly the RDB's
	// bytes, end marker and checksum included, however far its source reads ahead. A replica
	// uses it to write a full sync's RDB to its data files as it loads it. An error of Tee
	// ends the reading with that error.
	Tee io.Writer
}

// An AuxField is one of the "aux" name-value pairs at the start of an RDB file (redis-ver,
// ctime, used-mem, repl-id, ...).
type AuxField struct {
	Name, Value string
}

// A Reader reads an RDB file or stream: Next returns its keys one at a time, each with its
// value still unread; the Entry's Read methods decode it, or Next skips it.
//
// A Reader reads exactly the RDB's bytes, through its checksum, and no more when it is given a
// *bufio.Reader (which it then reads through), so that a caller can go on reading what follows
// an RDB on the same stream (a replica's command stream). It is not safe for concurrent use.
type Reader struct {
	in      input
	opts    ReaderOptions
	version int
	aux     []AuxField
	db      int
	skipped map[string]int
	bodyCRC uint64 // the CRC-64 of the bytes before the end marker, once read
	cur     *Entry
	done    bool
	err     error // sticky
}

// NewReader reads the header of an RDB file from r ("REDIS" and four digits) and returns a
// Reader positioned at its first record. It fails with ErrNotRDB for anything else and
// ErrVersion for a version it does not read (9 to 12: Redis 6.2 to 7.4).
func NewReader(r io.Reader, opts *ReaderOptions) (*Reader, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 1<<16)
	}
	rd := &Reader{in: input{r: br, size: -1}, skipped: map[string]int{}}
	if opts != nil {
		rd.opts = *opts
	}
	if rd.opts.Size > 0 {
		rd.in.size = rd.opts.Size
	}
	rd.in.tee = rd.opts.Tee
	var h [9]byte
	if err := rd.in.readFull(h[:]); err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("%w: %d bytes, shorter than an RDB header", ErrNotRDB, rd.in.off)
		}
		return nil, err
	}
	v, err := ParseHeader(h[:])
	if err != nil {
		return nil, err
	}
	rd.version = v
	return rd, nil
}

// ParseHeader returns the RDB version of a file starting with the 9 bytes h, failing with
// ErrNotRDB or ErrVersion.
func ParseHeader(h []byte) (int, error) {
	if len(h) < 9 || string(h[:5]) != "REDIS" {
		return 0, fmt.Errorf("%w: no REDIS signature", ErrNotRDB)
	}
	for _, c := range h[5:9] {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: version %q is not four digits", ErrNotRDB, h[5:9])
		}
	}
	v, _ := strconv.Atoi(string(h[5:9]))
	if v < MinVersion || v > MaxVersion {
		return v, fmt.Errorf("%w: version %d (this reader reads %d to %d: Redis 6.2 to 7.4)", ErrVersion, v, MinVersion, MaxVersion)
	}
	return v, nil
}

// Version returns the file's RDB version.
func (r *Reader) Version() int { return r.version }

// Aux returns the aux fields read so far (all of them once Next has returned io.EOF).
func (r *Reader) Aux() []AuxField { return r.aux }

// Skipped returns how many keys (or function libraries, module aux data) of each unsupported
// type SkipUnsupported skipped, by type name.
func (r *Reader) Skipped() map[string]int { return r.skipped }

// Offset returns the number of bytes read.
func (r *Reader) Offset() int64 { return r.in.off }

// BodyCRC returns the CRC-64 of the bytes before the end marker, once Next has returned io.EOF:
// CRC64(BodyCRC(), b) is the checksum of a file that has more records b (aux fields, say) before
// its end marker (0xFF), which b then ends with.
func (r *Reader) BodyCRC() uint64 { return r.bodyCRC }

// A Kind is what an Entry's value decodes to.
type Kind int

// The kinds of value a Reader decodes.
const (
	KindString Kind = iota + 1 // ReadString
	KindHash                   // ReadHash
	KindBloom                  // ReadChain, ReadBloomHeader: RedisBloom's MBbloom--
	KindCuckoo                 // ReadCuckoo, ReadCuckooInfo: RedisBloom's MBbloomCF
)

// An Entry is one key of an RDB file, with its value still unread.
type Entry struct {
	DB     int
	Key    []byte
	Expire int64 // unix ms; 0 for none (an expiry at or before the epoch reads as 1)
	Idle   int64 // LRU idle time in seconds (OBJECT IDLETIME), or -1
	Freq   int   // LFU frequency (OBJECT FREQ), or -1
	Type   Type  // the RDB type of the value
	Kind   Kind
	Encver int // a module value's encoding version

	v *value // the value's reader
}

// Next returns the next key, having skipped the value of the one before if it was not read. At
// the end of the file it checks the checksum and returns io.EOF. Keys of types bloomd does not
// hold fail with an *UnsupportedError, unless SkipUnsupported is set; bad data fails with an
// error matching ErrCorrupt that names the byte offset (and the key, inside one). After an
// error, Next returns it again.
func (r *Reader) Next() (*Entry, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.done {
		return nil, io.EOF
	}
	e, err := r.next()
	if err != nil {
		if err == io.EOF {
			r.done = true
		} else {
			r.err = err
		}
		return nil, err
	}
	return e, nil
}

func (r *Reader) next() (*Entry, error) {
	if r.cur != nil {
		if err := r.cur.v.finish(); err != nil {
			return nil, err
		}
		r.cur = nil
	}
	in := &r.in
	var expire int64
	idle, freq := int64(-1), -1
	for {
		at, crcBefore := in.off, in.crc
		t, err := in.ReadByte()
		if err != nil {
			return nil, err
		}
		switch t {
		case opExpireTimeMs:
			v, err := in.readUint64LE()
			if err != nil {
				return nil, err
			}
			expire = max(int64(v), 1)
			continue
		case opExpireTime:
			var b [4]byte
			if err := in.readFull(b[:]); err != nil {
				return nil, err
			}
			expire = max(int64(int32(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24))*1000, 1)
			continue
		case opFreq:
			b, err := in.ReadByte()
			if err != nil {
				return nil, err
			}
			freq = int(b)
			continue
		case opIdle:
			v, err := in.readCount()
			if err != nil {
				return nil, err
			}
			idle = int64(min(v, math.MaxInt64))
			continue
		case opEOF:
			want := in.crc
			got, err := in.readUint64LE()
			if err != nil {
				return nil, err
			}
			if got != 0 && got != want { // 0: saved with rdbchecksum no
				return nil, fmt.Errorf("%w: the file's CRC-64 is %#016x, its bytes' %#016x", ErrChecksum, got, want)
			}
			if err := in.flushTee(); err != nil {
				return nil, err
			}
			r.bodyCRC = crcBefore
			return nil, io.EOF
		case opSelectDB:
			v, err := in.readCount()
			if err != nil {
				return nil, err
			}
			if v > math.MaxInt32 {
				return nil, corruptf("SELECTDB %d at byte %d", v, at)
			}
			r.db = int(v)
			continue
		case opResizeDB:
			if _, err := in.readCount(); err != nil {
				return nil, err
			}
			if _, err := in.readCount(); err != nil {
				return nil, err
			}
			continue
		case opSlotInfo:
			for range 3 {
				if _, err := in.readCount(); err != nil {
					return nil, err
				}
			}
			continue
		case opAux:
			name, err := in.readString()
			if err != nil {
				return nil, err
			}
			val, err := in.readString()
			if err != nil {
				return nil, err
			}
			r.aux = append(r.aux, AuxField{string(name), string(val)})
			continue
		case opModuleAux:
			if err := r.moduleAux(at); err != nil {
				return nil, err
			}
			continue
		case opFunction2, opFunctionPre:
			if !r.opts.SkipUnsupported {
				return nil, &UnsupportedError{Type: "a function library", What: fmt.Sprintf("at byte %d", at)}
			}
			n := 1
			if t == opFunctionPre {
				// Name, engine, a description flag and maybe a description, the code.
				for range 2 {
					if err := in.skipString(); err != nil {
						return nil, err
					}
				}
				has, err := in.readCount()
				if err != nil {
					return nil, err
				}
				if has != 0 {
					n++
				}
			}
			for range n {
				if err := in.skipString(); err != nil {
					return nil, err
				}
			}
			r.skipped["function"]++
			continue
		}
		typ := Type(t)
		if !knownType(typ) {
			return nil, corruptf("unknown value type %d at byte %d", t, at)
		}
		key, err := in.readString()
		if err != nil {
			return nil, fmt.Errorf("key at byte %d: %w", at, err)
		}
		e := &Entry{DB: r.db, Key: key, Expire: expire, Idle: idle, Freq: freq, Type: typ}
		e.v = &value{in: in, typ: typ, e: e, version: r.version, r: r}
		refuse, err := e.classify()
		if err != nil {
			return nil, err
		}
		if refuse != nil {
			if !r.opts.SkipUnsupported {
				return nil, refuse
			}
			if err := e.v.skip(); err != nil {
				return nil, fmt.Errorf("key %q: %w", clip(key), err)
			}
			r.skipped[refuse.Type]++
			expire, idle, freq = 0, -1, -1
			continue
		}
		r.cur = e
		return e, nil
	}
}

// classify sets the Entry's Kind from its type (reading a module value's id), or returns the
// *UnsupportedError that refuses it.
func (e *Entry) classify() (refuse *UnsupportedError, err error) {
	in, key := e.v.in, e.Key
	switch e.Type {
	case TypeString:
		e.Kind = KindString
	case TypeHash, TypeHashZipmap, TypeHashZiplist, TypeHashListpack, TypeHashMetadata,
		TypeHashMetadataPreGA, TypeHashListpackEx, TypeHashListpackExPre:
		e.Kind = KindHash
	case TypeModulePreGA:
		return nil, e.v.wrap(corruptf("a module value in Redis 4.0's pre-release layout"))
	case TypeModule2:
		id, err := in.readCount()
		if err != nil {
			return nil, e.v.wrap(err)
		}
		name, encver := ModuleName(id)
		e.Encver = encver
		e.v.module = true
		switch {
		case name == BloomModule && encver >= 2 && encver <= bloomEncver:
			e.Kind = KindBloom
		case name == BloomModule && encver < 2:
			return &UnsupportedError{Key: key, DB: e.DB, Type: name,
				What: fmt.Sprintf("encoding %d, written before RedisBloom 2.0 with 32-bit hashing", encver)}, nil
		case name == CuckooModule && encver <= cuckooEncver:
			e.Kind = KindCuckoo
		case name == BloomModule || name == CuckooModule:
			return &UnsupportedError{Key: key, DB: e.DB, Type: name,
				What: fmt.Sprintf("encoding %d, newer than RedisBloom 2.6 writes", encver)}, nil
		default:
			return &UnsupportedError{Key: key, DB: e.DB, Type: name, What: "a module type"}, nil
		}
	default:
		return &UnsupportedError{Key: key, DB: e.DB, Type: TypeName(e.Type), What: encodingName(e.Type)}, nil
	}
	return nil, nil
}

// moduleAux reads module aux data (RDB_OPCODE_MODULE_AUX), which bloomd holds none of.
func (r *Reader) moduleAux(at int64) error {
	in := &r.in
	id, err := in.readCount()
	if err != nil {
		return err
	}
	name, _ := ModuleName(id)
	if !r.opts.SkipUnsupported {
		return &UnsupportedError{Type: "aux data of the module type " + name, What: fmt.Sprintf("at byte %d", at)}
	}
	op, err := in.readCount()
	if err != nil {
		return err
	}
	if op != modUInt {
		return corruptf("module aux data at byte %d without its 'when' field", at)
	}
	if _, err := in.readCount(); err != nil {
		return err
	}
	if err := skipModuleFields(in); err != nil {
		return err
	}
	r.skipped["module aux data"]++
	return nil
}
