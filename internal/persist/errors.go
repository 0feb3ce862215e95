package persist

import (
	"errors"
	"fmt"

	"github.com/bloomd/bloom"
)

var (
	// ErrSaveInProgress reports a snapshot asked for while another is being written.
	ErrSaveInProgress = errors.New("persist: a snapshot is already being written")

	// ErrRewriteInProgress reports a log rewrite asked for while one is being written.
	ErrRewriteInProgress = errors.New("persist: a log rewrite is already being written")

	// ErrNoMemory reports data files that do not fit in the memory the process may use: the
	// keyspace refused a filter of the snapshot, or a logged command, for lack of memory.
	// Load stops at once and has changed no file.
	ErrNoMemory = errors.New("persist: the data does not fit in the memory bloomd may use")

	// ErrClosed reports a use of a Store after Close.
	ErrClosed = errors.New("persist: store closed")

	// ErrOtherFormat reports a file in one of the formats bloomd knows, but not the one the
	// reader reads: a Redis RDB file handed to ReadSnapshot, bloomd's snapshot handed to
	// ReadRDB. The error names what the file is.
	ErrOtherFormat = errors.New("persist: another format")

	// ErrRDBDamaged reports a Redis RDB file that does not read: a checksum, a length or an
	// encoding wrong, or a file cut short. The error says where. It matches bloom.ErrCorrupt.
	ErrRDBDamaged error = rdbDamaged{}
)

type rdbDamaged struct{}

func (rdbDamaged) Error() string        { return "persist: damaged Redis RDB file" }
func (rdbDamaged) Is(target error) bool { return target == bloom.ErrCorrupt }

// A CorruptError reports damaged bytes in a data file: which file, at which byte offset, what
// is wrong there. It matches bloom.ErrCorrupt.
type CorruptError struct {
	File   string // the file's name as the store opened it
	Offset int64  // byte offset of the damaged record, section or header
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("persist: %s: damaged at byte offset %d: %s", e.File, e.Offset, e.Reason)
}

// Is makes errors.Is(err, bloom.ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == bloom.ErrCorrupt }

func corrupt(file string, off int64, format string, args ...any) *CorruptError {
	return &CorruptError{File: file, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// hintError is an error with advice for the operator: Error gives the error, a new line and
// the advice; Unwrap gives the error, so errors.Is sees through it.
type hintError struct {
	err  error
	hint string
}

func withHint(err error, hint string) error { return &hintError{err, hint} }

func (e *hintError) Error() string { return e.err.Error() + "\n" + e.hint }
func (e *hintError) Unwrap() error { return e.err }
