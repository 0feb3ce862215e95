package rdb

import (
	"errors"
	"fmt"
)

// Errors of this package, tested with errors.Is. Errors returned carry detail (what, where)
// through wrapping.
var (
	// ErrCorrupt is the category of malformed input: a length past what the input holds, an
	// unknown encoding, a value that does not decode, a truncated file. Every error that
	// describes bad data matches it, and says where (the byte offset) and, inside a key, which.
	ErrCorrupt = errors.New("rdb: corrupt data")

	// ErrChecksum reports an RDB file whose CRC-64 does not match its bytes. It matches
	// ErrCorrupt.
	ErrChecksum error = &corruptKind{"rdb: checksum mismatch"}

	// ErrNotRDB reports input that does not start with an RDB header ("REDIS" and four
	// digits).
	ErrNotRDB = errors.New("rdb: not a Redis RDB file")

	// ErrVersion reports an RDB version this package does not read (it reads 9 to 12, Redis 6.2
	// to 7.4) or cannot write.
	ErrVersion = errors.New("rdb: unsupported RDB version")

	// ErrUnsupported is matched by *UnsupportedError: a key, function library or module data of
	// a type bloomd does not hold.
	ErrUnsupported = errors.New("rdb: unsupported type")

	// ErrEmptyKey reports an aggregate value (a hash) with no elements. Redis skips such keys
	// when it loads an RDB file and refuses them in RESTORE ("Bad data format").
	ErrEmptyKey = errors.New("rdb: empty key")

	// ErrDumpPayload reports a DUMP payload shorter than its footer, of an RDB version newer
	// than the reader accepts, or whose CRC-64 is wrong. Redis answers RESTORE with
	// "ERR DUMP payload version or checksum are wrong".
	ErrDumpPayload = errors.New("rdb: DUMP payload version or checksum are wrong")
)

// corruptKind is a sentinel that also matches ErrCorrupt.
type corruptKind struct{ msg string }

func (e *corruptKind) Error() string        { return e.msg }
func (e *corruptKind) Is(target error) bool { return target == ErrCorrupt }

// corruptf returns an error matching ErrCorrupt with the formatted detail.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// An UnsupportedError names a key (or other RDB content) of a type bloomd does not hold.
type UnsupportedError struct {
	Key  []byte // nil for content that is not a key (a function library, module data)
	DB   int
	Type string // the type as Redis's TYPE names it ("list", "zset", ...), or a module type name
	What string // more detail: the RDB encoding, a module's encoding version
}

func (e *UnsupportedError) Error() string {
	what := ""
	if e.What != "" {
		what = " (" + e.What + ")"
	}
	if e.Key == nil {
		return fmt.Sprintf("rdb: %s%s: a type bloomd does not hold", e.Type, what)
	}
	return fmt.Sprintf("rdb: key %q in db %d is a %s%s, a type bloomd does not hold", clip(e.Key), e.DB, e.Type, what)
}

func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// clip shortens a key for a message.
func clip(key []byte) []byte {
	if len(key) > 100 {
		return key[:100]
	}
	return key
}
