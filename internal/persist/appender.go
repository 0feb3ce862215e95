package persist

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Fsync is the appendfsync policy: when the log's records reach the disk.
type Fsync int32

const (
	// FsyncEverysec writes each batch's records to the operating system before the replies
	// go out, and has them synced to disk about once a second: a crash of the process loses
	// nothing, a crash of the machine at most about the last two seconds.
	FsyncEverysec Fsync = iota
	// FsyncAlways syncs each batch's records to disk before the replies go out, one sync for
	// every connection that is waiting at that moment (group commit).
	FsyncAlways
	// FsyncNo writes records before the replies, like FsyncEverysec, and leaves syncing to the
	// operating system.
	FsyncNo
)

// ParseFsync parses an appendfsync value: always, everysec or no.
func ParseFsync(s string) (Fsync, error) {
	switch strings.ToLower(s) {
	case "always":
		return FsyncAlways, nil
	case "everysec":
		return FsyncEverysec, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, fmt.Errorf("persist: appendfsync must be always, everysec or no, not %q", s)
}

func (f Fsync) String() string {
	switch f {
	case FsyncAlways:
		return "always"
	case FsyncNo:
		return "no"
	}
	return "everysec"
}

// A logFile is one open log file being appended to.
type logFile struct {
	f    File
	path string
	seq  uint64
	size atomic.Int64 // bytes written to it
	dead atomic.Bool  // a write or sync failed: its contents are unknown, never write it again
}

// A segment holds the records appended for one log file and not yet written to it.
type segment struct {
	lf     *logFile
	buf    []byte
	closed bool // a later segment takes the appends: write the rest, sync, close
}

// An appender is the write side of the log: Append encodes a record into memory under a mutex,
// and the waits it returns write (and, with FsyncAlways, sync) every record appended so far.
// The first waiter to get the write lock writes everything buffered, for all who wait; the
// others find their records written when they get the lock: a group commit, with no goroutine
// in between. Records reach files in the order they were appended; rotate starts a new file at
// a point in that order, and the old file is synced and closed before the new one gets a byte,
// so that the files on disk are always a prefix of the history.
type appender struct {
	policy atomic.Int32 // Fsync

	mu       sync.Mutex
	segs     []*segment // the last one takes appends
	spare    []byte
	appended atomic.Uint64 // records appended; written under mu
	buffered atomic.Int64  // bytes appended and not yet written (INFO aof_buffer_length)

	wmu     sync.Mutex // held while writing
	cur     atomic.Pointer[logFile]
	written atomic.Uint64 // records handed to the operating system
	synced  atomic.Uint64 // records on disk
	failed  atomic.Pointer[error]
	failSeq atomic.Uint64 // the log that failed
	fsyncs  atomic.Int64
	observe func(time.Duration) // Config.FsyncObserver; nil if none

	syncMu sync.RWMutex // held for reading by the background sync, for writing to close a file

	waitSync, waitWrite func() error
	stop, done          chan struct{}
}

func newAppender(lf *logFile, policy Fsync) *appender {
	a := &appender{segs: []*segment{{lf: lf}}, stop: make(chan struct{}), done: make(chan struct{})}
	a.cur.Store(lf)
	a.policy.Store(int32(policy))
	a.waitSync = a.syncWait
	a.waitWrite = a.writeWait
	go a.background()
	return a
}

// Append encodes argv as the next record and returns the wait that makes it (and every record
// before it) as durable as the policy promises.
func (a *appender) Append(argv [][]byte) func() error {
	a.mu.Lock()
	s := a.segs[len(a.segs)-1]
	if !s.lf.dead.Load() {
		// After a failure the records of the dead file are dropped: the snapshot that
		// heals the log (see clearError) holds their effects.
		n := len(s.buf)
		s.buf = appendRecord(s.buf, argv)
		a.buffered.Add(int64(len(s.buf) - n))
	}
	a.appended.Store(a.appended.Load() + 1)
	a.mu.Unlock()
	if Fsync(a.policy.Load()) == FsyncAlways {
		return a.waitSync
	}
	return a.waitWrite
}

func (a *appender) err() error {
	if p := a.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// fail records a failure of lf: the appender refuses every wait until clearError.
func (a *appender) fail(lf *logFile, err error) error {
	lf.dead.Store(true)
	err = fmt.Errorf("persist: append-only log: %w", err)
	if a.failed.CompareAndSwap(nil, &err) {
		a.failSeq.Store(lf.seq)
	}
	return a.err()
}

func (a *appender) syncWait() error {
	if target := a.appended.Load(); a.synced.Load() < target {
		return a.flush(target, true)
	}
	return a.err()
}

func (a *appender) writeWait() error {
	if target := a.appended.Load(); a.written.Load() < target {
		return a.flush(target, false)
	}
	return a.err()
}

// flush writes every record appended so far, unless another flush already wrote (and, with
// sync, synced) target records, and syncs the current file if sync is set.
func (a *appender) flush(target uint64, sync bool) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if err := a.err(); err != nil {
		return err
	}
	if a.written.Load() >= target && (!sync || a.synced.Load() >= target) {
		return nil
	}
	a.mu.Lock()
	upto := a.appended.Load()
	taken := make([]segment, len(a.segs))
	for i, s := range a.segs {
		taken[i] = *s
		s.buf = nil
	}
	last := a.segs[len(a.segs)-1]
	last.buf, a.spare = a.spare, nil
	a.segs = append(a.segs[:0], last)
	a.mu.Unlock()

	for i, s := range taken {
		if s.lf.dead.Load() {
			if s.closed {
				a.syncMu.Lock()
				s.lf.f.Close()
				a.cur.Store(taken[i+1].lf)
				a.syncMu.Unlock()
			}
			continue
		}
		if len(s.buf) > 0 {
			if _, err := s.lf.f.Write(s.buf); err != nil {
				return a.fail(s.lf, fmt.Errorf("writing %s: %w", s.lf.path, err))
			}
			s.lf.size.Add(int64(len(s.buf)))
			a.buffered.Add(-int64(len(s.buf)))
		}
		if s.closed {
			// Everything of this file is written: make it durable before the next file
			// receives anything, then let it go.
			a.syncMu.Lock()
			err := a.syncLog(s.lf.f)
			if err == nil {
				err = s.lf.f.Close()
				// The background sync must never find a closed file here.
				a.cur.Store(taken[i+1].lf)
			}
			a.syncMu.Unlock()
			if err != nil {
				return a.fail(s.lf, fmt.Errorf("syncing %s: %w", s.lf.path, err))
			}
			a.fsyncs.Add(1)
		}
	}
	a.cur.Store(taken[len(taken)-1].lf)
	a.written.Store(upto)
	if b := taken[len(taken)-1].buf; cap(b) <= 4<<20 {
		a.mu.Lock()
		a.spare = b[:0]
		a.mu.Unlock()
	}
	if sync {
		if lf := a.cur.Load(); !lf.dead.Load() {
			if err := a.syncLog(lf.f); err != nil {
				return a.fail(lf, fmt.Errorf("syncing %s: %w", lf.path, err))
			}
		}
		a.fsyncs.Add(1)
		a.synced.Store(upto)
	}
	return nil
}

// syncLog syncs a log file and tells the observer, if any, how long a successful sync took.
func (a *appender) syncLog(f File) error {
	start := time.Now()
	err := syncFile(f)
	if err == nil && a.observe != nil {
		a.observe(time.Since(start))
	}
	return err
}

// syncFile flushes a log file's data to disk: fdatasync for an operating system file, since
// appends only need the data and the size, not the times; Sync for any other File (such as a
// test's file system that fails on demand).
func syncFile(f File) error {
	if osf, ok := f.(*os.File); ok {
		for {
			err := syscall.Fdatasync(int(osf.Fd()))
			if !errors.Is(err, syscall.EINTR) {
				return err
			}
		}
	}
	return f.Sync()
}

// background writes what no waiter wrote (records appended with nobody waiting, such as the
// expiry of keys) and, with FsyncEverysec, syncs once a second if anything was written since the
// last sync (an idle log is not synced, as Redis does; a rotated-out log was synced by flush,
// and a new log's header by createLog).
func (a *appender) background() {
	defer close(a.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
		}
		if a.flush(a.appended.Load(), false) != nil {
			continue
		}
		if Fsync(a.policy.Load()) == FsyncEverysec && a.synced.Load() < a.written.Load() {
			a.syncWritten()
		}
	}
}

// syncWritten syncs what has been written to the current file, as the background sync does,
// without holding up waiters meanwhile. A snapshot calls it just before it rotates the log, so
// that the sync that closes the file after the rotation, which a waiter does before its
// replies, has only the records of that instant left to sync.
func (a *appender) syncWritten() {
	if a.err() != nil || a.synced.Load() >= a.written.Load() {
		return
	}
	a.syncMu.RLock()
	lf, upto := a.cur.Load(), a.written.Load()
	err := a.syncLog(lf.f)
	a.syncMu.RUnlock()
	if err != nil {
		a.fail(lf, fmt.Errorf("syncing %s: %w", lf.path, err))
		return
	}
	a.fsyncs.Add(1)
	for {
		s := a.synced.Load()
		if s >= upto || a.synced.CompareAndSwap(s, upto) {
			return
		}
	}
}

// rotate makes lf the file of the records appended from now on. lf is a new log whose header
// is on disk.
func (a *appender) rotate(lf *logFile) {
	a.mu.Lock()
	a.segs[len(a.segs)-1].closed = true
	a.segs = append(a.segs, &segment{lf: lf})
	a.mu.Unlock()
}

// close writes and syncs everything appended and closes the current file.
func (a *appender) close() error {
	close(a.stop)
	<-a.done
	err := a.flush(a.appended.Load(), true)
	lf := a.cur.Load()
	if cerr := lf.f.Close(); err == nil && cerr != nil && !lf.dead.Load() {
		err = fmt.Errorf("persist: closing %s: %w", lf.path, cerr)
	}
	return err
}

// clearError forgets a write failure once a snapshot, taken when the appends moved to a new
// file, holds everything the failed file lost. The next flush closes the failed file and
// writes the new one.
func (a *appender) clearError() { a.failed.Store(nil) }

// failedBefore reports whether the failed log precedes log seq.
func (a *appender) failedBefore(seq uint64) bool { return a.failSeq.Load() < seq }

// failure returns the error that stopped the appender, if any.
func (a *appender) failure() error { return a.err() }
