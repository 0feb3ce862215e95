package persist

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/bloomd/bloom/internal/rdb"
)

// A replica's full sync is a snapshot that travels over the replication link: the primary writes
// one (WriteSync) for each replica, in the format the replica asked for, and the replica reads it
// from the link (ReadSync), or, with data files, writes it to them as it reads it
// (Store.Receive), so that the bytes reach its disk once, as they arrive.
//
// A snapshot of bloomd's format is written with plain pieces, so its length (SnapshotSize) is
// known before it is written and it goes behind "$<length>", as a disk-based sync of Redis does;
// an RDB file's length depends on what compresses, so it goes behind Redis's diskless "$EOF:"
// mark. Either carries, at its end, the replication offset up to which the replica replays the
// adds that follow it as new (SnapshotHeader.AddsNewUntil): in bloomd's format in the end
// section's expiry field, in an RDB file as the aux field bloomd-adds-new-until before the end
// marker, where Redis ignores it.

// SyncOptions say how WriteSync writes a full sync's snapshot.
type SyncOptions struct {
	// RDB writes a Redis RDB file (version 10, with the settings of RDBOptions), which a
	// Redis replica loads; otherwise bloomd's format, with plain pieces.
	RDB        bool
	RDBOptions RDBOptions
	// Window, if not nil, is called once every key is written, for the offset the snapshot
	// carries at its end (SnapshotHeader.AddsNewUntil).
	Window func() int64
}

// WriteSync writes items, taken at one instant, to w for a replica's full sync and returns the
// bytes written. In bloomd's format, SnapshotSize(items) bytes.
func WriteSync(w io.Writer, items []Item, opts SyncOptions) (int64, error) {
	h := SnapshotHeader{Created: time.Now().UnixMilli()}
	if !opts.RDB {
		return writeSnapshot(w, h, items, false, opts.Window)
	}
	var tail func() []rdb.AuxField
	if opts.Window != nil {
		tail = func() []rdb.AuxField {
			return []rdb.AuxField{{Name: auxAddsNewUntil, Value: strconv.FormatInt(opts.Window(), 10)}}
		}
	}
	return writeRDBTail(w, h, items, opts.RDBOptions, tail)
}

// Received describes a snapshot read by ReadSync or Store.Receive.
type Received struct {
	RDB    bool           // a Redis RDB file; otherwise bloomd's format
	Header SnapshotHeader // Created and AddsNewUntil (the lineage is the primary's, or none)
	Stats  SnapshotStats
	// Skipped counts what rdb-skip-unknown-types skipped, by type (see RDBLoad.Skipped).
	Skipped map[string]int
	// StreamDB is the database the primary's stream starts in (RDBLoad.StreamDB).
	StreamDB int
	// Saved reports that the snapshot became the store's snapshot file (Store.Receive).
	Saved bool

	bodyCRC uint64 // an RDB's RDBLoad.BodyCRC
}

// ReadSync reads a primary's snapshot from r into sink: bloomd's format of size bytes, or a Redis
// RDB file of size bytes or, with size < 0, one read exactly through its checksum (Redis's
// diskless sync; the caller reads the EOF mark that follows). It reads no byte past the
// snapshot, so the caller goes on reading the stream from r. name is for errors. As with
// ReadSnapshot, after an error the keys handed over so far are not a snapshot.
func ReadSync(r *bufio.Reader, size int64, name string, sink Sink, opts RDBOptions) (Received, error) {
	return readSync(r, size, name, sink, opts, nil)
}

func readSync(r *bufio.Reader, size int64, name string, sink Sink, opts RDBOptions, out *receiveFile) (Received, error) {
	var rc Received
	head, err := r.Peek(9)
	if err != nil {
		return rc, fmt.Errorf("%w: %s: cut short after %d bytes", ErrRDBDamaged, name, len(head))
	}
	// The snapshot is bit arrays, mostly: collecting garbage while they are allocated only
	// interrupts the copying (as in Store.Load).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	switch magicOf(head) {
	case "rdb":
		rc.RDB = true
		var src io.Reader = r
		if size >= 0 {
			src = bufio.NewReaderSize(io.LimitReader(r, size), 1<<20)
		}
		var tee io.Writer
		if out != nil {
			out.rdb = true
			tee = out
		}
		ld, err := readRDBTee(src, max(size, 0), name, sink, opts, tee)
		if err != nil {
			return rc, err
		}
		if size >= 0 && ld.Stats.Bytes != size {
			return rc, fmt.Errorf("%w: %s: the RDB file ends after %d bytes, %d were announced", ErrRDBDamaged, name, ld.Stats.Bytes, size)
		}
		rc.Header, rc.Stats, rc.Skipped, rc.StreamDB, rc.bodyCRC = ld.Header, ld.Stats, ld.Skipped, ld.StreamDB, ld.BodyCRC
		if out != nil {
			out.bodyCRC = ld.BodyCRC
		}
		return rc, nil
	case "snapshot":
		if size < 0 {
			return rc, fmt.Errorf("%w: %s: a bloomd snapshot sent without its length", ErrRDBDamaged, name)
		}
		var src io.Reader = io.LimitReader(r, size)
		if out != nil {
			src = io.TeeReader(src, out)
		}
		rc.Header, rc.Stats, err = ReadSnapshot(src, size, name, sink)
		return rc, err
	}
	return rc, CheckSyncFormat(head)
}

// CheckSyncFormat returns nil if a full sync's snapshot that begins with head (its first 9
// bytes) is in a format ReadSync reads, or the error that refuses it.
func CheckSyncFormat(head []byte) error {
	if f := magicOf(head); f == "rdb" || f == "snapshot" {
		return nil
	}
	return fmt.Errorf("%w: the primary's snapshot is neither an RDB file nor a bloomd snapshot: it starts with %q", ErrRDBDamaged, head)
}

// A receiveFile writes a snapshot being received to the store's temporary file, as the store's
// own snapshot: the replica's lineage and first log in place of the primary's. In bloomd's
// format that is the header, which it replaces; in an RDB file, two aux fields added before the
// end marker, and the checksum that follows then (the last 9 bytes received are held back until
// commit, which writes them anew).
type receiveFile struct {
	w       io.Writer
	h       SnapshotHeader
	rdb     bool
	head    []byte // bloomd's format: the header, until it is whole
	headed  bool
	held    [9]byte // an RDB: the last bytes received, not yet written
	nheld   int
	bodyCRC uint64
	n       int64
}

func (s *receiveFile) Write(p []byte) (int, error) {
	n := len(p)
	if s.rdb {
		return n, s.holdBack(p)
	}
	if !s.headed {
		k := min(snapHeaderSize-len(s.head), len(p))
		s.head = append(s.head, p[:k]...)
		p = p[k:]
		if len(s.head) < snapHeaderSize {
			return n, nil
		}
		if string(s.head[:8]) != snapMagic {
			return 0, errors.New("persist: not a bloomd snapshot")
		}
		s.headed = true
		if err := s.out(s.h.append(nil, binary.LittleEndian.Uint32(s.head[8:]))); err != nil {
			return 0, err
		}
	}
	return n, s.out(p)
}

// holdBack writes p but its last 9 bytes (with those held before), which it keeps.
func (s *receiveFile) holdBack(p []byte) error {
	if len(p) >= len(s.held) {
		if err := s.out(s.held[:s.nheld]); err != nil {
			return err
		}
		if err := s.out(p[:len(p)-len(s.held)]); err != nil {
			return err
		}
		s.nheld = copy(s.held[:], p[len(p)-len(s.held):])
		return nil
	}
	all := append(s.held[:s.nheld:s.nheld], p...)
	if extra := len(all) - len(s.held); extra > 0 {
		if err := s.out(all[:extra]); err != nil {
			return err
		}
		all = all[extra:]
	}
	s.nheld = copy(s.held[:], all)
	return nil
}

func (s *receiveFile) out(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	n, err := s.w.Write(p)
	s.n += int64(n)
	return err
}

// finish writes an RDB file's end: the replica's aux fields, the end marker and the checksum.
func (s *receiveFile) finish() error {
	if !s.rdb {
		if !s.headed {
			return errors.New("persist: the snapshot ended inside its header")
		}
		return nil
	}
	if s.nheld != len(s.held) || s.held[0] != 0xFF {
		return errors.New("persist: the RDB file does not end with its end marker and checksum")
	}
	b := rdb.AppendAux(nil, rdb.AuxField{Name: auxLineage, Value: fmt.Sprintf("%016x", s.h.Lineage)},
		rdb.AuxField{Name: auxLogSeq, Value: strconv.FormatUint(s.h.LogSeq, 10)})
	b = append(b, 0xFF)
	b = binary.LittleEndian.AppendUint64(b, rdb.CRC64(s.bodyCRC, b))
	return s.out(b)
}

// Receive reads a primary's snapshot from r into sink as ReadSync does, and meanwhile writes it
// to the store's snapshot file, so that a replica's full sync writes its data once, as it
// arrives (a snapshot taken after loading would write it a second time). Once the snapshot is
// whole, its file replaces the snapshot (synced, renamed, the directory synced) and, with
// appendonly, a new log follows it; the older logs (which hold the FLUSHALL that emptied the
// keyspace for it) are removed. The keyspace must not change meanwhile except through sink:
// the server refuses writes while it loads, and applies the primary's stream only after. A
// snapshot holding keys that rdb-skip-unknown-types skipped is not kept (the file would hold
// what the keyspace does not): a snapshot of the keyspace is saved instead. It waits for a
// snapshot being written to end first. After an error, as with ReadSync, the keys handed over
// are not a snapshot, and no file has changed.
func (st *Store) Receive(r *bufio.Reader, size int64, sink Sink) (Received, error) {
	return st.receive(func(rv *receiving) (Received, error) {
		var dw *directWriter
		f, err := st.fs.OpenFile(rv.tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|syscall.O_DIRECT, 0o644)
		if err == nil {
			dw = newDirectWriter(f)
		} else {
			f, err = st.fs.OpenFile(rv.tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		}
		if err != nil {
			return Received{}, fmt.Errorf("persist: creating %s: %w", rv.tmp, err)
		}
		rv.f = f
		sf := &receiveFile{w: f, h: rv.h}
		if dw != nil {
			sf.w = dw
			rv.abandon = dw.abandon
		}
		rc, err := readSync(r, size, "the primary's snapshot", sink, st.config().RDB, sf)
		if err != nil || len(rc.Skipped) > 0 {
			return rc, err
		}
		if err = sf.finish(); err == nil && dw != nil {
			rv.abandon = nil
			err = dw.finish()
		}
		rv.size = sf.n
		return rc, err
	})
}

// ReceiveFile is Receive for a replica that keeps its data until the snapshot is whole
// (repl-diskless-load disabled, as Redis's default, or a replica that holds keys): copy writes
// the snapshot's bytes, as they arrive, to the store's temporary file; once they are all there,
// flush is called (the caller empties the keyspace), and the file is loaded into sink, made the
// store's snapshot (its header or its end rewritten as Receive writes them) and put in place
// as Receive puts it. The bytes reach the disk once. A transfer cut short changes nothing, and
// flush is not called.
func (st *Store) ReceiveFile(copyTo func(w io.Writer) (int64, error), sink Sink, flush func()) (Received, error) {
	return st.receive(func(rv *receiving) (Received, error) {
		f, err := st.fs.OpenFile(rv.tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
		if err != nil {
			return Received{}, fmt.Errorf("persist: creating %s: %w", rv.tmp, err)
		}
		rv.f = f
		bw := bufio.NewWriterSize(f, 1<<20)
		n, err := copyTo(bw)
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			return Received{}, fmt.Errorf("the snapshot's transfer was cut short after %d bytes (the data is kept as it was): %w", n, err)
		}
		var head [9]byte
		f.ReadAt(head[:], 0)
		if err := CheckSyncFormat(head[:min(n, 9)]); err != nil {
			return Received{}, err
		}
		flush()
		rc, err := readSync(bufio.NewReaderSize(io.NewSectionReader(f, 0, n), 1<<20), n, "the primary's snapshot", sink, st.config().RDB, nil)
		if err != nil || len(rc.Skipped) > 0 {
			return rc, err
		}
		// Made the store's: the replica's header, or the replica's aux fields before the end.
		var fix []byte
		at := int64(0)
		if rc.RDB {
			at = n - 9
			fix = rdb.AppendAux(nil, rdb.AuxField{Name: auxLineage, Value: fmt.Sprintf("%016x", rv.h.Lineage)},
				rdb.AuxField{Name: auxLogSeq, Value: strconv.FormatUint(rv.h.LogSeq, 10)})
			fix = append(fix, 0xFF)
			fix = binary.LittleEndian.AppendUint64(fix, rdb.CRC64(rc.bodyCRC, fix))
			err = f.Truncate(at)
		} else {
			var head [snapHeaderSize]byte
			if _, err = f.ReadAt(head[:], 0); err == nil {
				fix = rv.h.append(nil, binary.LittleEndian.Uint32(head[8:]))
			}
		}
		if err == nil {
			_, err = f.Seek(at, io.SeekStart)
		}
		if err == nil {
			_, err = f.Write(fix)
		}
		rv.size = at + int64(len(fix))
		if !rc.RDB {
			rv.size = n
		}
		return rc, err
	})
}

// receiving is a snapshot being received into the store's temporary file.
type receiving struct {
	h       SnapshotHeader // the replica's: its lineage, and the log that follows
	tmp     string
	f       File
	abandon func() // stops a direct writer that did not finish
	size    int64  // the file's length once written
}

// receive runs fill, which writes the snapshot of a full sync into rv.f and loads it, with the
// store's snapshot slot taken (waiting for a snapshot being written), and puts the file in place.
func (st *Store) receive(fill func(rv *receiving) (Received, error)) (rc Received, err error) {
	for !st.saving.CompareAndSwap(0, kindSave) {
		if st.closed.Load() || st.stopping.Load() {
			return rc, ErrClosed
		}
		time.Sleep(20 * time.Millisecond) // a BGSAVE is being written: wait for it
	}
	saveAfter := false
	defer func() {
		if saveAfter {
			if serr := st.snapshotLocked(kindSave); serr != nil && err == nil {
				err = fmt.Errorf("persist: saving the snapshot after a full sync: %w", serr)
			}
			return
		}
		st.saving.Store(0)
	}()
	st.saveMu.Lock()
	defer st.saveMu.Unlock()
	start := time.Now()
	cfg := st.config()
	seq := st.nextSeq
	rv := &receiving{h: SnapshotHeader{Lineage: st.lineage, LogSeq: seq, Created: start.UnixMilli()}, tmp: st.tempPath()}
	app := st.app.Load()
	var next *logFile
	if app != nil {
		if next, err = st.createLog(seq); err != nil {
			return rc, err
		}
	}
	kept := false
	defer func() {
		if kept {
			return
		}
		if rv.abandon != nil {
			rv.abandon()
		}
		if rv.f != nil {
			rv.f.Close()
			st.fs.Remove(rv.tmp)
		}
		if next != nil {
			next.f.Close()
			st.fs.Remove(next.path)
		}
	}()
	rc, err = fill(rv)
	if err != nil {
		return rc, err
	}
	if len(rc.Skipped) > 0 {
		st.log.Info("the primary's snapshot holds what bloomd does not hold; saving a snapshot of what was loaded instead of keeping it",
			"skipped", describeSkipped(rc.Skipped))
		saveAfter = true
		return rc, nil
	}
	if err := rv.f.Sync(); err != nil {
		return rc, fmt.Errorf("persist: syncing %s: %w", rv.tmp, err)
	}
	if err := rv.f.Close(); err != nil {
		return rc, fmt.Errorf("persist: closing %s: %w", rv.tmp, err)
	}
	rv.f = nil
	if err := st.fs.Rename(rv.tmp, st.snap); err != nil {
		st.fs.Remove(rv.tmp)
		return rc, fmt.Errorf("persist: renaming %s to %s: %w", rv.tmp, st.snap, err)
	}
	kept = true
	if err := st.fs.SyncDir(cfg.Dir); err != nil {
		st.log.Warn("cannot sync the data directory after a full sync", "dir", cfg.Dir, "err", err)
	}
	// The snapshot names log seq as the one that follows it: records from now on go there.
	if next != nil {
		st.ks.Pause(func() { app.rotate(next) })
		st.nextSeq = seq + 1
		st.logsMu.Lock()
		st.logs = append(st.logs, next)
		st.logsMu.Unlock()
	}
	st.dropLogsBefore(seq, app)
	if app != nil && app.failure() != nil && app.failedBefore(seq) {
		st.log.Info("the snapshot of the full sync and its log replace the log that failed; writes are durable again")
		app.clearError()
	}
	rc.Saved = true
	st.dirty.Store(0)
	st.lastSave.Store(time.Now().Unix())
	st.baseSize.Store(rv.size)
	st.saves.Add(1)
	st.lastOK.Store(true)
	el := time.Since(start)
	st.lastDur.Store(int64(el.Seconds()))
	st.log.Info("the primary's snapshot is the snapshot file", "file", st.snap, "keys", rc.Stats.Keys, "bytes", rv.size,
		"seconds", el.Seconds(), "MB/s", float64(rv.size)/1e6/max(el.Seconds(), 1e-9))
	return rc, nil
}

// dropLogsBefore removes the logs older than seq, which a snapshot now in place supersedes.
func (st *Store) dropLogsBefore(seq uint64, app *appender) {
	st.logsMu.Lock()
	keep := st.logs[:0]
	var drop []*logFile
	for _, lf := range st.logs {
		if lf.seq < seq {
			drop = append(drop, lf)
		} else {
			keep = append(keep, lf)
		}
	}
	st.logs = keep
	st.logsMu.Unlock()
	if app == nil {
		seqs, _ := st.scanDir()
		for _, s := range seqs {
			if s < seq {
				drop = append(drop, &logFile{path: st.logPath(s), seq: s})
			}
		}
	}
	for _, lf := range drop {
		if err := st.fs.Remove(lf.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			st.log.Warn("cannot remove a log the snapshot supersedes", "file", lf.path, "err", err)
		}
	}
	if len(drop) > 0 {
		st.fs.SyncDir(st.cfg.Dir)
	}
}
