package rdb

import (
	"fmt"
	"strings"
)

// RDB versions: the file header's REDIS00NN.
const (
	Version62 = 9  // Redis 5.0 to 6.2
	Version70 = 10 // Redis 7.0
	Version72 = 11 // Redis 7.2
	Version74 = 12 // Redis 7.4

	// MinVersion and MaxVersion bound what the reader accepts.
	MinVersion = Version62
	MaxVersion = Version74

	// DefaultVersion is what the writer writes unless asked otherwise.
	DefaultVersion = Version70
)

// A Type is an RDB value type: the byte before each key (rdb.h's RDB_TYPE_*).
type Type byte

// The value types of Redis 6.2 to 7.4.
const (
	TypeString            Type = 0
	TypeList              Type = 1
	TypeSet               Type = 2
	TypeZSet              Type = 3
	TypeHash              Type = 4 // a hash table: a count, then field and value strings
	TypeZSet2             Type = 5
	TypeModulePreGA       Type = 6
	TypeModule2           Type = 7 // a module value: module id, then opcode-tagged fields, then EOF
	TypeHashZipmap        Type = 9
	TypeListZiplist       Type = 10
	TypeSetIntset         Type = 11
	TypeZSetZiplist       Type = 12
	TypeHashZiplist       Type = 13
	TypeListQuicklist     Type = 14
	TypeStreamListpacks   Type = 15
	TypeHashListpack      Type = 16 // Redis 7.0: a listpack of fields and values
	TypeZSetListpack      Type = 17
	TypeListQuicklist2    Type = 18
	TypeStreamListpacks2  Type = 19
	TypeSetListpack       Type = 20 // Redis 7.2
	TypeStreamListpacks3  Type = 21 // Redis 7.2
	TypeHashMetadataPreGA Type = 22 // Redis 7.4 release candidates: hash fields with expiry times
	TypeHashListpackExPre Type = 23
	TypeHashMetadata      Type = 24 // Redis 7.4: hash fields with expiry times
	TypeHashListpackEx    Type = 25
)

// Opcodes: special bytes in the place of a value type.
const (
	opSlotInfo     = 244 // Redis 7.4 cluster mode: slot sizes (a hint)
	opFunction2    = 245 // a function library
	opFunctionPre  = 246 // a function library in 7.0's release candidates' layout
	opModuleAux    = 247 // module data outside the keyspace
	opIdle         = 248 // LRU idle time of the next key, seconds
	opFreq         = 249 // LFU frequency of the next key
	opAux          = 250 // an aux field: two strings
	opResizeDB     = 251 // sizes of the db that follows (a hint)
	opExpireTimeMs = 252 // expiry time of the next key, unix ms, 8 bytes little-endian
	opExpireTime   = 253 // expiry time of the next key, unix seconds, 4 bytes little-endian
	opSelectDB     = 254
	opEOF          = 255
)

// Module value fields: each is preceded by one of these, written as a length.
const (
	modEOF    = 0
	modSInt   = 1
	modUInt   = 2
	modFloat  = 3
	modDouble = 4
	modString = 5
)

// String encodings: a length byte 11xxxxxx is one of these.
const (
	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// RedisBloom's module types, with the encoding versions RedisBloom 2.6 writes (rebloom.c's
// BF_MIN_GROWTH_ENC and CF_MIN_EXPANSION_VERSION) and the newest it reads.
const (
	BloomModule  = "MBbloom--"
	CuckooModule = "MBbloomCF"
	bloomEncver  = 4
	cuckooEncver = 4
)

// moduleCharset maps a module type name's characters to 6 bits each (module.c's
// ModuleTypeNameCharSet).
const moduleCharset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// ModuleID returns the 64-bit id Redis writes before a module value: the 9 characters of the
// type's name, 6 bits each, then 10 bits of encoding version.
func ModuleID(name string, encver int) (uint64, error) {
	if len(name) != 9 {
		return 0, fmt.Errorf("rdb: module type name %q is not 9 characters", name)
	}
	if encver < 0 || encver > 1023 {
		return 0, fmt.Errorf("rdb: module encoding version %d is not in [0, 1023]", encver)
	}
	var id uint64
	for i := range 9 {
		p := strings.IndexByte(moduleCharset, name[i])
		if p < 0 {
			return 0, fmt.Errorf("rdb: module type name %q has a character outside [A-Za-z0-9-_]", name)
		}
		id = id<<6 | uint64(p)
	}
	return id<<10 | uint64(encver), nil
}

// ModuleName returns the type name and encoding version a module id encodes.
func ModuleName(id uint64) (name string, encver int) {
	var b [9]byte
	encver = int(id & 1023)
	id >>= 10
	for i := 8; i >= 0; i-- {
		b[i] = moduleCharset[id&63]
		id >>= 6
	}
	return string(b[:]), encver
}

// TypeName returns the name Redis's TYPE command gives to values of RDB type t ("string",
// "hash", ...; "module" for module values, whose own name is in the value).
func TypeName(t Type) string {
	switch t {
	case TypeString:
		return "string"
	case TypeList, TypeListZiplist, TypeListQuicklist, TypeListQuicklist2:
		return "list"
	case TypeSet, TypeSetIntset, TypeSetListpack:
		return "set"
	case TypeZSet, TypeZSet2, TypeZSetZiplist, TypeZSetListpack:
		return "zset"
	case TypeHash, TypeHashZipmap, TypeHashZiplist, TypeHashListpack, TypeHashMetadataPreGA,
		TypeHashListpackExPre, TypeHashMetadata, TypeHashListpackEx:
		return "hash"
	case TypeStreamListpacks, TypeStreamListpacks2, TypeStreamListpacks3:
		return "stream"
	case TypeModulePreGA, TypeModule2:
		return "module"
	}
	return fmt.Sprintf("unknown type %d", t)
}

// encodingName returns the name of an RDB type's encoding, for messages.
func encodingName(t Type) string {
	switch t {
	case TypeHashZipmap:
		return "zipmap"
	case TypeListZiplist, TypeZSetZiplist, TypeHashZiplist:
		return "ziplist"
	case TypeSetIntset:
		return "intset"
	case TypeListQuicklist, TypeListQuicklist2:
		return "quicklist"
	case TypeHashListpack, TypeZSetListpack, TypeSetListpack, TypeHashListpackExPre, TypeHashListpackEx:
		return "listpack"
	case TypeStreamListpacks, TypeStreamListpacks2, TypeStreamListpacks3:
		return "listpacks"
	case TypeHashMetadata, TypeHashMetadataPreGA:
		return "hashtable with field expiry"
	}
	return "RDB type " + fmt.Sprint(int(t))
}

// knownType reports whether t is a value type of Redis 6.2 to 7.4.
func knownType(t Type) bool { return t <= 7 || t >= 9 && t <= 25 }
