package persist

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bloomd/bloom"
)

// A Keyspace is the server as the store sees it.
type Keyspace interface {
	Sink // for loading snapshots
	// Pause runs fn while no command runs, with every earlier command's record appended.
	Pause(fn func())
	// Capture returns every key, with each filter's header as of now; it is called only
	// inside Pause.
	Capture() []Item
	// SetLoading switches loading mode, in which keys do not expire, maxmemory does not apply
	// (the limits of the process still do), and adds are replayed as new (redisbloom.AddNew).
	SetLoading(on bool)
	// Exec runs one command and returns its RESP2 reply. A reply that is Redis's OOM error or
	// begins "-ERR Insufficient memory" stops the load with ErrNoMemory.
	Exec(args ...[]byte) []byte
}

// A ChargedCapturer is a Keyspace whose Capture takes memory of its own (copies of cuckoo
// filters, which a snapshot cannot read while clients change them): CaptureCharged charges that
// memory before it is taken, or fails when it does not fit, and release gives it back once the
// snapshot is written. A snapshot whose capture fails is not taken (as Redis's BGSAVE fails
// when it cannot fork), and nothing changes on disk.
type ChargedCapturer interface {
	CaptureCharged() (items []Item, release func(), err error)
}

// A Store keeps a server's keyspace on disk: snapshots, and (with appendonly) a log of every
// write since the last snapshot. It is the server's journal. Make one with Open, then Load the
// files into the keyspace before serving; Close it after the last command.
type Store struct {
	cfgMu sync.Mutex
	cfg   Config

	fs   FS
	log  *slog.Logger
	ks   Keyspace
	snap string // path of the snapshot

	loaded  atomic.Bool
	app     atomic.Pointer[appender] // nil unless appendonly
	lineage uint64

	// Under saveMu (held for the whole of a snapshot, so there is one at a time).
	saveMu  sync.Mutex
	nextSeq uint64 // the sequence number of the next log to create

	logsMu sync.Mutex
	logs   []*logFile // logs since the last snapshot, oldest first (closed ones too)

	dirty        atomic.Int64 // writes since the last snapshot started
	saving       atomic.Int32 // 0, or the kind of snapshot being written
	saveStarted  atomic.Int64 // unix ms
	lastSave     atomic.Int64 // unix seconds of the last good snapshot (or of the start)
	lastTry      atomic.Int64 // unix ms of the last snapshot attempt
	lastOK       atomic.Bool
	lastDur      atomic.Int64 // seconds the last snapshot took, -1 for none
	saves        atomic.Int64
	rewrites     atomic.Int64
	lastRewrite  atomic.Int64 // seconds, -1 for none
	rewriteOK    atomic.Bool
	rewriteSched atomic.Bool
	saveSched    atomic.Bool
	baseSize     atomic.Int64 // bytes of the last snapshot
	loadedKeys   atomic.Int64
	stopping     atomic.Bool

	lock     File           // the directory's lock file, held while the store is open
	bg       sync.WaitGroup // background snapshots
	stop     chan struct{}
	cronDone chan struct{}
	closed   atomic.Bool
}

// The kinds of snapshot, for INFO.
const (
	kindSave    = 1 // SAVE, BGSAVE, save rules, shutdown
	kindRewrite = 2 // BGREWRITEAOF and the automatic rewrite
)

// Open returns a store for cfg. It touches no file until Load.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st := &Store{cfg: cfg, fs: cfg.FS, log: cfg.Logger, stop: make(chan struct{}), cronDone: make(chan struct{})}
	if st.fs == nil {
		st.fs = OSFS{}
	}
	if st.log == nil {
		st.log = slog.New(slog.DiscardHandler)
	}
	st.snap = filepath.Join(cfg.Dir, cfg.DBFilename)
	st.lastOK.Store(true)
	st.rewriteOK.Store(true)
	st.lastDur.Store(-1)
	st.lastRewrite.Store(-1)
	st.lastSave.Store(time.Now().Unix())
	return st, nil
}

func (st *Store) config() Config {
	st.cfgMu.Lock()
	defer st.cfgMu.Unlock()
	return st.cfg
}

// SetLogger sets the logger of the store's messages; call it before Load.
func (st *Store) SetLogger(l *slog.Logger) {
	if l != nil {
		st.log = l
	}
}

// SetFsync changes appendfsync.
func (st *Store) SetFsync(f Fsync) {
	st.cfgMu.Lock()
	st.cfg.AppendFsync = f
	st.cfgMu.Unlock()
	if a := st.app.Load(); a != nil {
		a.policy.Store(int32(f))
	}
}

// SetSave changes the save rules.
func (st *Store) SetSave(rules []SaveRule) {
	st.cfgMu.Lock()
	st.cfg.Save = slices.Clone(rules)
	st.cfgMu.Unlock()
}

// SetAutoRewrite changes auto-aof-rewrite-percentage and auto-aof-rewrite-min-size.
func (st *Store) SetAutoRewrite(percentage int, minSize int64) {
	st.cfgMu.Lock()
	st.cfg.AutoRewritePercentage, st.cfg.AutoRewriteMinSize = percentage, minSize
	st.cfgMu.Unlock()
}

// SetRDB changes the settings of RDB snapshots (rdbcompression, rdbchecksum,
// rdb-skip-unknown-types): the next snapshot, or the next RDB file loaded, follows them.
func (st *Store) SetRDB(o RDBOptions) {
	st.cfgMu.Lock()
	st.cfg.RDB = o
	st.cfgMu.Unlock()
}

// Append journals one write (the server's Journal). Records made while loading are the replay's
// own and are not logged again.
func (st *Store) Append(argv [][]byte) func() error {
	if !st.loaded.Load() {
		return nil
	}
	st.dirty.Add(1)
	if a := st.app.Load(); a != nil {
		return a.Append(argv)
	}
	return nil
}

func (st *Store) logPath(seq uint64) string {
	return filepath.Join(st.cfg.Dir, st.cfg.AppendFilename+"."+strconv.FormatUint(seq, 10))
}

func (st *Store) tempPath() string {
	return filepath.Join(st.cfg.Dir, "temp-"+strconv.Itoa(os.Getpid())+"-"+st.cfg.DBFilename)
}

// lockDir takes an exclusive lock on <dbfilename>.lock in the directory, so that two servers
// never load and append to the same files. The kernel releases it when the process ends,
// however it ends.
func (st *Store) lockDir() error {
	path := filepath.Join(st.cfg.Dir, st.cfg.DBFilename+".lock")
	f, err := st.fs.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	if fd, ok := f.(interface{ Fd() uintptr }); ok {
		if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return fmt.Errorf("persist: another bloomd uses the data files in %s (it holds %s)", st.cfg.Dir, path)
			}
			return fmt.Errorf("persist: locking %s: %w", path, err)
		}
	}
	st.lock = f
	return nil
}

// scanDir returns the sequence numbers of the log files in the directory, sorted, and removes
// temporary snapshots that a crash left behind.
func (st *Store) scanDir() ([]uint64, error) {
	names, err := st.fs.ReadDir(st.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("persist: reading dir %s: %w", st.cfg.Dir, err)
	}
	var seqs []uint64
	prefix := st.cfg.AppendFilename + "."
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, prefix); ok {
			if seq, err := strconv.ParseUint(rest, 10, 64); err == nil && seq > 0 && strconv.FormatUint(seq, 10) == rest {
				seqs = append(seqs, seq)
			}
			continue
		}
		if strings.HasPrefix(n, "temp-") && strings.HasSuffix(n, "-"+st.cfg.DBFilename) {
			st.log.Info("removing a temporary snapshot left by an interrupted save", "file", n)
			st.fs.Remove(filepath.Join(st.cfg.Dir, n))
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

// Load reads the snapshot and replays the logs that follow it into ks (in loading mode), then
// opens the log for appending (with appendonly) and starts the background work: save rules,
// automatic rewrites, everysec syncs. A torn last record is dropped with a warning; any other
// damage, a missing file in the chain, or a record that fails on replay is an error that says
// which file, which offset and how to repair, and the keyspace must then be thrown away: Load
// never leaves a partial load that looks complete.
func (st *Store) Load(ks Keyspace) error {
	st.ks = ks
	cfg := st.config()
	ks.SetLoading(true)
	defer ks.SetLoading(false)
	start := time.Now()

	if err := st.lockDir(); err != nil {
		return err
	}
	seqs, err := st.scanDir()
	if err != nil {
		return err
	}
	h := SnapshotHeader{LogSeq: 1}
	haveSnap := false
	// foreign is set when the data came from a file that another program wrote (Redis's RDB,
	// which carries no lineage): the logs of an earlier bloomd do not follow it.
	foreign := false
	path := st.snap
	f, direct, err := st.openSnapshot(path)
	if errors.Is(err, fs.ErrNotExist) && len(seqs) == 0 && cfg.DBFilename != RedisDumpFile {
		// None of bloomd's files: a Redis dump.rdb beside them is the data to start with.
		path = filepath.Join(cfg.Dir, RedisDumpFile)
		if f, direct, err = st.openSnapshot(path); err == nil {
			foreign = true
			st.log.Info("no data files of bloomd here; loading Redis's dump.rdb (bloomd saves to dbfilename, "+cfg.DBFilename+")", "file", path)
		}
	}
	if err == nil {
		haveSnap = true
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("persist: %s: %w", path, err)
		}
		var stats SnapshotStats
		// The snapshot is filters' bit arrays, which hold no pointers: collecting garbage while
		// they are allocated only interrupts the copying (the collector stops the copying
		// goroutines again and again as the heap grows), so it waits until the end.
		gc := debug.SetGCPercent(-1)
		var r io.Reader = f
		if direct {
			dr := newDirectReader(f)
			defer dr.close()
			r = dr
		}
		// Either format loads, whatever the name: the first bytes say which it is.
		br := bufio.NewReaderSize(r, 1<<20)
		head, _ := br.Peek(9)
		format := magicOf(head)
		var rl RDBLoad
		if format == "rdb" {
			rl, err = ReadRDB(br, fi.Size(), path, ks, cfg.RDB)
			h, stats = rl.Header, rl.Stats
		} else {
			h, stats, err = ReadSnapshot(br, fi.Size(), path, ks)
		}
		debug.SetGCPercent(gc)
		f.Close()
		if err != nil {
			switch {
			case errors.Is(err, ErrRDBDamaged):
				return withHint(err, fmt.Sprintf("%s is a Redis RDB file, damaged, and bloomd will not start with part of it (redis-check-rdb %s says more). Restore it from a backup, or move it away to start without it.", path, path))
			case errors.Is(err, bloom.ErrCorrupt):
				return withHint(err, fmt.Sprintf("The snapshot is damaged and bloomd will not start with part of it. To keep every intact key, run\n  bloomd check-aof --fix %s\n(it names the keys lost and keeps the damaged file beside it), then start bloomd again. Or restore %s from a backup, or move it and the logs %s.* away to start empty.", path, path, filepath.Join(cfg.Dir, cfg.AppendFilename)))
			}
			return err
		}
		if format == "rdb" {
			if len(rl.Skipped) > 0 {
				st.log.Warn("skipped what bloomd does not hold (rdb-skip-unknown-types yes)", "file", path, "skipped", describeSkipped(rl.Skipped))
			}
			if h.Lineage == 0 {
				foreign = true // written by Redis: no log of bloomd follows it
			}
			if !IsRDBName(cfg.DBFilename) {
				st.log.Info("the snapshot is a Redis RDB file; bloomd's next snapshot is in its own format, as dbfilename does not end in .rdb", "file", path)
			}
		} else if IsRDBName(cfg.DBFilename) && path == st.snap {
			st.log.Info("the snapshot is in bloomd's own format under a .rdb name; the next snapshot writes it as a Redis RDB file", "file", path)
		}
		if foreign {
			h.LogSeq, h.Lineage = 1, 0
			// An earlier bloomd's logs followed the snapshot that Redis has since replaced: with
			// records in them, the two histories went apart and neither can be chosen here.
			if err := st.dropForeignLogs(seqs, path); err != nil {
				return err
			}
			seqs = nil
		}
		st.lineage = h.Lineage
		st.baseSize.Store(fi.Size())
		st.lastSave.Store(h.Created / 1000)
		st.loadedKeys.Store(int64(stats.Keys))
		el := time.Since(start)
		st.log.Info("snapshot loaded", "file", path, "format", map[bool]string{true: "Redis RDB", false: "bloomd"}[format == "rdb"], "keys", stats.Keys, "bytes", fi.Size(),
			"seconds", el.Seconds(), "MB/s", float64(fi.Size())/1e6/max(el.Seconds(), 1e-9))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("persist: opening snapshot: %w", err)
	}

	var live []uint64
	for _, seq := range seqs {
		if seq < h.LogSeq {
			// A crash came after the snapshot that supersedes this log was in place,
			// before the log was removed.
			st.log.Info("removing a log that the snapshot supersedes", "file", st.logPath(seq))
			if err := st.fs.Remove(st.logPath(seq)); err != nil {
				return fmt.Errorf("persist: removing %s: %w", st.logPath(seq), err)
			}
			continue
		}
		live = append(live, seq)
	}
	if len(live) > 0 && live[0] != h.LogSeq {
		if !haveSnap {
			return fmt.Errorf("persist: %s exists but there is no snapshot %s: the logs start at %d, so the snapshot they follow is missing. Restore it, or move the logs away to start empty", st.logPath(live[0]), st.snap, live[0])
		}
		return fmt.Errorf("persist: the snapshot %s is followed by log %d, but %s is missing; restore it, or move the snapshot and logs away", st.snap, h.LogSeq, st.logPath(h.LogSeq))
	}
	for i := range live {
		if live[i] != h.LogSeq+uint64(i) {
			return fmt.Errorf("persist: %s is missing between %s and %s; restore it (the logs after it depend on it)", st.logPath(h.LogSeq+uint64(i)), st.logPath(live[i-1]), st.logPath(live[i]))
		}
	}
	// A log that holds no record yet, after another: the crash came after it was created for a
	// snapshot and before any record went to it, so the log before it may still be the one
	// whose last write was cut short. Drop it and let that one be the last.
	for len(live) > 1 {
		seq := live[len(live)-1]
		f, err := st.fs.OpenFile(st.logPath(seq), os.O_RDONLY, 0)
		if err != nil {
			return fmt.Errorf("persist: %w", err)
		}
		fi, err := f.Stat()
		f.Close()
		if err != nil || fi.Size() > logHeaderSize {
			break
		}
		st.log.Info("removing a log that holds no record, after another", "file", st.logPath(seq))
		if err := st.fs.Remove(st.logPath(seq)); err != nil {
			return fmt.Errorf("persist: %w", err)
		}
		live = live[:len(live)-1]
	}
	records := 0
	var lastEnd int64
	for i, seq := range live {
		n, end, err := st.replay(seq, i == len(live)-1, haveSnap || i > 0)
		if err != nil {
			return err
		}
		records += n
		lastEnd = end
	}
	if st.lineage == 0 {
		var b [8]byte
		rand.Read(b[:])
		st.lineage = binary.LittleEndian.Uint64(b[:]) | 1
	}
	if len(live) > 0 {
		st.log.Info("append-only logs replayed", "logs", len(live), "records", records, "seconds", time.Since(start).Seconds())
	}

	st.nextSeq = h.LogSeq
	if len(live) > 0 {
		st.nextSeq = live[len(live)-1] + 1
	}
	if cfg.AppendOnly {
		var lf *logFile
		if len(live) > 0 && lastEnd >= logHeaderSize {
			seq := live[len(live)-1]
			lf, err = st.openLog(seq, lastEnd)
		} else {
			// No log, or one whose header was torn: (re)create it.
			seq := h.LogSeq
			if len(live) > 0 {
				seq = live[len(live)-1]
				st.fs.Remove(st.logPath(seq))
			}
			lf, err = st.createLog(seq)
			st.nextSeq = seq + 1
		}
		if err != nil {
			return err
		}
		for _, seq := range live[:max(len(live)-1, 0)] {
			old := &logFile{path: st.logPath(seq), seq: seq}
			if f, err := st.fs.OpenFile(old.path, os.O_RDONLY, 0); err == nil {
				if fi, err := f.Stat(); err == nil {
					old.size.Store(fi.Size())
				}
				f.Close()
			}
			st.logs = append(st.logs, old)
		}
		st.logs = append(st.logs, lf)
		app := newAppender(lf, cfg.AppendFsync)
		app.observe = cfg.FsyncObserver
		st.app.Store(app)
	}
	st.loaded.Store(true)
	if foreign && cfg.AppendOnly {
		// The log needs a snapshot of bloomd's (with the lineage its records carry) to follow:
		// take it now, as Redis 7.0 writes a base file when it starts with an AOF and none.
		st.log.Info("writing a snapshot of the data Redis saved, so that the log has a base of bloomd's", "file", st.snap)
		st.saving.Store(kindSave)
		if err := st.snapshotLocked(kindSave); err != nil {
			return fmt.Errorf("persist: writing the first snapshot after loading %s: %w", path, err)
		}
	}
	go st.cron()
	return nil
}

// dropForeignLogs removes the logs seqs that followed an earlier snapshot of bloomd, when the
// snapshot loaded (path) is one another program wrote since: logs that hold no record are
// removed; a log that holds records is an error, and nothing is removed.
func (st *Store) dropForeignLogs(seqs []uint64, path string) error {
	for _, seq := range seqs {
		f, err := st.fs.OpenFile(st.logPath(seq), os.O_RDONLY, 0)
		if err != nil {
			return fmt.Errorf("persist: %w", err)
		}
		fi, err := f.Stat()
		f.Close()
		if err != nil {
			return fmt.Errorf("persist: %w", err)
		}
		if fi.Size() > logHeaderSize {
			return fmt.Errorf("persist: %s was written by Redis (it carries no bloomd lineage), but %s holds writes made after bloomd's last snapshot: the two histories went apart. Keep the one you want: move the logs %s.* away to start from %s, or move %s away to start from bloomd's files (then restore its snapshot)",
				path, st.logPath(seq), filepath.Join(st.cfg.Dir, st.cfg.AppendFilename), path, path)
		}
	}
	for _, seq := range seqs {
		st.log.Info("removing an empty log of an earlier run: the snapshot it followed was replaced by Redis's", "file", st.logPath(seq))
		if err := st.fs.Remove(st.logPath(seq)); err != nil {
			return fmt.Errorf("persist: removing %s: %w", st.logPath(seq), err)
		}
	}
	return nil
}

// openSnapshot opens a snapshot for reading, with direct I/O where the file system allows it.
func (st *Store) openSnapshot(path string) (f File, direct bool, err error) {
	if f, err := st.fs.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0); err == nil {
		return f, true, nil
	}
	f, err = st.fs.OpenFile(path, os.O_RDONLY, 0)
	return f, false, err
}

// replay runs the records of log seq. It returns the number of records and the offset after the
// last good one. A torn tail is allowed only in the last log, which is then truncated.
func (st *Store) replay(seq uint64, last, checkLineage bool) (int, int64, error) {
	path := st.logPath(seq)
	f, err := st.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("persist: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("persist: %s: %w", path, err)
	}
	fixHint := func(err error) error {
		return withHint(err, fmt.Sprintf("bloomd will not start with part of the log. To keep the records before the damage and drop the rest, run\n  bloomd check-aof --fix %s\n(it says how many records that drops), then start bloomd again.", path))
	}
	sc, err := NewLogScanner(f, fi.Size(), path)
	if err != nil {
		return 0, 0, fixHint(err)
	}
	if sc.Torn() == nil {
		hdr := sc.Header()
		if hdr.Seq != seq {
			return 0, 0, fmt.Errorf("persist: %s says it is log %d; was it renamed? Give it back its name %s", path, hdr.Seq, st.logPath(hdr.Seq))
		}
		if st.lineage == 0 && !checkLineage {
			st.lineage = hdr.Lineage
		} else if hdr.Lineage != st.lineage {
			return 0, 0, fmt.Errorf("persist: %s belongs to another data set than %s (lineage %x, not %x): the files in %s do not go together", path, st.snap, hdr.Lineage, st.lineage, st.cfg.Dir)
		}
	}
	var (
		tx     [][][]byte // a transaction's records, from MULTI to EXEC
		txOff  int64
		inTx   bool
		failed error
	)
	exec := func(off int64, argv [][]byte) {
		reply := st.ks.Exec(argv...)
		if failed == nil && isNoMemory(reply) {
			failed = fmt.Errorf("%w: %s: the record at byte offset %d (%s) cannot be replayed for lack of memory: %s", ErrNoMemory, path, off, describe(argv), strings.TrimSpace(string(reply[1:])))
		}
		if len(reply) > 0 && reply[0] == '-' && failed == nil {
			failed = fmt.Errorf("persist: %s: the record at byte offset %d (%s) fails on replay: %s; the log does not fit the data before it. Restore the files from a backup", path, off, describe(argv), strings.TrimSpace(string(reply[1:])))
		}
	}
	for sc.Next() && failed == nil {
		argv := sc.Argv()
		name := string(bytes.ToUpper(argv[0]))
		switch {
		case name == "MULTI" && !inTx:
			inTx, txOff, tx = true, sc.Offset(), tx[:0]
		case name == "EXEC" && inTx:
			exec(txOff, [][]byte{[]byte("MULTI")})
			for _, r := range tx {
				exec(txOff, r)
			}
			exec(sc.Offset(), argv)
			inTx = false
		case inTx:
			cp := make([][]byte, len(argv))
			for i, a := range argv {
				cp[i] = bytes.Clone(a)
			}
			tx = append(tx, cp)
		default:
			exec(sc.Offset(), argv)
		}
	}
	if failed != nil {
		return 0, 0, failed
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fixHint(err)
	}
	end := sc.End()
	if t := sc.Torn(); t != nil {
		if !last {
			return 0, 0, fixHint(corrupt(path, t.Offset, "%s, in a log that is followed by another (it was complete when the next one began)", t.Reason))
		}
		st.log.Warn("dropping a torn record at the end of the log: the crash came in the middle of writing it", "file", path, "offset", t.Offset, "bytes", t.Bytes, "reason", t.Reason)
		if err := st.truncate(path, t.Offset); err != nil {
			return 0, 0, err
		}
	}
	if inTx {
		if !last {
			return 0, 0, fixHint(corrupt(path, txOff, "a transaction (MULTI) that never ends, in a log that is followed by another"))
		}
		st.log.Warn("dropping a transaction that the log ends in the middle of: it was never acknowledged", "file", path, "offset", txOff, "records", len(tx)+1)
		if err := st.truncate(path, txOff); err != nil {
			return 0, 0, err
		}
		end = txOff
	}
	return sc.Records(), end, nil
}

// isNoMemory reports whether a reply is the keyspace refusing a command for lack of memory:
// Redis's OOM error, or RedisBloom's "Insufficient memory".
func isNoMemory(reply []byte) bool {
	return bytes.HasPrefix(reply, []byte("-OOM ")) || bytes.HasPrefix(reply, []byte("-ERR Insufficient memory"))
}

// describe renders a record for an error message.
func describe(argv [][]byte) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if i == 4 {
			fmt.Fprintf(&b, "... (%d arguments)", len(argv))
			break
		}
		b.WriteString(strconv.Quote(string(a[:min(len(a), 40)])))
	}
	return b.String()
}

// truncate cuts a log at off and makes that durable.
func (st *Store) truncate(path string, off int64) error {
	f, err := st.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(off); err != nil {
		return fmt.Errorf("persist: truncating %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("persist: truncating %s: %w", path, err)
	}
	return nil
}

// createLog creates log seq with its header on disk, and its directory entry too.
func (st *Store) createLog(seq uint64) (*logFile, error) {
	path := st.logPath(seq)
	f, err := st.fs.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("persist: creating %s: %w", path, err)
	}
	h := LogHeader{Lineage: st.lineage, Seq: seq, Created: time.Now().UnixMilli()}
	if _, err = f.Write(h.append(nil)); err == nil {
		err = syncFile(f)
	}
	if err == nil {
		err = st.fs.SyncDir(st.cfg.Dir)
	}
	if err != nil {
		f.Close()
		st.fs.Remove(path)
		return nil, fmt.Errorf("persist: creating %s: %w", path, err)
	}
	lf := &logFile{f: f, path: path, seq: seq}
	lf.size.Store(logHeaderSize)
	return lf, nil
}

// openLog opens log seq for appending after its first size bytes.
func (st *Store) openLog(seq uint64, size int64) (*logFile, error) {
	path := st.logPath(seq)
	f, err := st.fs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("persist: opening %s: %w", path, err)
	}
	lf := &logFile{f: f, path: path, seq: seq}
	lf.size.Store(size)
	return lf, nil
}

// Save writes a snapshot and returns when it is on disk (SAVE), or returns ErrSaveInProgress if
// one is being written. It pauses every command for the instant of the snapshot (see
// Keyspace.Pause), so it must not be called from inside a command.
func (st *Store) Save() error {
	if st.closed.Load() {
		return ErrClosed
	}
	if !st.saving.CompareAndSwap(0, kindSave) {
		return ErrSaveInProgress
	}
	return st.snapshotLocked(kindSave)
}

// BackgroundSave starts writing a snapshot (BGSAVE), or returns ErrSaveInProgress. With
// schedule, a snapshot in progress is not an error: another starts when it ends.
func (st *Store) BackgroundSave(schedule bool) (scheduled bool, err error) {
	err = st.background(kindSave)
	if errors.Is(err, ErrSaveInProgress) && schedule {
		st.saveSched.Store(true)
		return true, nil
	}
	return false, err
}

// BackgroundRewrite starts a log rewrite (BGREWRITEAOF): a snapshot, after which the log starts
// anew. If a snapshot (not a rewrite) is being written, the rewrite is scheduled for when it
// ends, and scheduled is true; if a rewrite is, the error is ErrRewriteInProgress.
func (st *Store) BackgroundRewrite() (scheduled bool, err error) {
	err = st.background(kindRewrite)
	if errors.Is(err, ErrSaveInProgress) {
		if st.saving.Load() == kindRewrite {
			return false, ErrRewriteInProgress
		}
		st.rewriteSched.Store(true)
		return true, nil
	}
	return false, err
}

func (st *Store) background(kind int32) error {
	if st.closed.Load() || st.stopping.Load() {
		return ErrClosed
	}
	if !st.saving.CompareAndSwap(0, kind) {
		return ErrSaveInProgress
	}
	st.bg.Add(1)
	go func() {
		defer st.bg.Done()
		st.snapshotLocked(kind)
	}()
	return nil
}

// snapshotLocked writes a snapshot; st.saving is already set to kind, and is cleared at the end.
//
// The snapshot is taken at one instant T, a Pause: the keys, their expiry times and their
// filters' headers (links and counts) as of T, and, with appendonly, the switch to a new log
// whose records are exactly the writes after T. The filters' bits are copied afterwards, while
// adds go on (see the package documentation for why that is exact). The file is written to a
// temporary name, synced, renamed over the snapshot and its directory synced; only then are
// the logs before the new one removed.
func (st *Store) snapshotLocked(kind int32) (err error) {
	st.saveMu.Lock()
	defer st.saveMu.Unlock()
	defer st.saving.Store(0)
	start := time.Now()
	st.saveStarted.Store(start.UnixMilli())
	st.lastTry.Store(start.UnixMilli())
	defer func() {
		dur := int64(time.Since(start).Seconds())
		if kind == kindRewrite {
			st.rewriteOK.Store(err == nil)
			st.lastRewrite.Store(dur)
			if err == nil {
				st.rewrites.Add(1)
			}
		}
		st.lastOK.Store(err == nil)
		st.lastDur.Store(dur)
		if err != nil {
			st.log.Warn("snapshot failed", "err", err)
		}
	}()
	if st.stopping.Load() && kind != kindSave || st.ks == nil {
		return ErrClosed
	}
	app := st.app.Load()
	seq := st.nextSeq
	var next *logFile
	if app != nil {
		if next, err = st.createLog(seq); err != nil {
			return err
		}
	}
	if next != nil {
		app.syncWritten() // see syncWritten: the closing sync after the rotation is then short
	}
	var items []Item
	var dirty int64
	var paused time.Duration
	release := func() {}
	var capErr error
	st.ks.Pause(func() {
		t := time.Now()
		if cc, ok := st.ks.(ChargedCapturer); ok {
			items, release, capErr = cc.CaptureCharged()
		} else {
			items = st.ks.Capture()
		}
		if capErr != nil {
			return
		}
		if next != nil {
			app.rotate(next)
		}
		dirty = st.dirty.Load()
		paused = time.Since(t)
	})
	if capErr != nil {
		if next != nil {
			next.f.Close()
			st.fs.Remove(next.path)
		}
		st.log.Warn("snapshot not started", "err", capErr)
		return fmt.Errorf("persist: snapshot not started: %w", capErr)
	}
	defer release()
	st.log.Info("snapshot started", "keys", len(items), "pause_ms", float64(paused.Microseconds())/1000)
	if next != nil {
		st.nextSeq = seq + 1
		st.logsMu.Lock()
		st.logs = append(st.logs, next)
		st.logsMu.Unlock()
	}
	h := SnapshotHeader{Lineage: st.lineage, LogSeq: seq, Created: start.UnixMilli()}
	n, err := st.writeSnapshot(h, items)
	if err != nil {
		return err
	}
	// The snapshot holds everything before log seq: drop the older logs (and, without
	// appendonly, those of an earlier run with it, replayed at start).
	st.dropLogsBefore(seq, app)
	if app != nil && app.failure() != nil && app.failedBefore(seq) {
		st.log.Info("the new snapshot and log replace the log that failed; writes are durable again")
		app.clearError()
	}
	st.dirty.Add(-dirty)
	st.lastSave.Store(time.Now().Unix())
	st.baseSize.Store(n)
	st.saves.Add(1)
	el := time.Since(start)
	st.log.Info("snapshot saved", "file", st.snap, "keys", len(items), "bytes", n, "seconds", el.Seconds(),
		"MB/s", float64(n)/1e6/max(el.Seconds(), 1e-9))
	return nil
}

// writeSnapshot writes items to the temporary file (with direct I/O where the file system
// allows it), syncs it, renames it over the snapshot and syncs the directory.
func (st *Store) writeSnapshot(h SnapshotHeader, items []Item) (int64, error) {
	tmp := st.tempPath()
	const flags = os.O_CREATE | os.O_TRUNC | os.O_WRONLY
	f, err := st.fs.OpenFile(tmp, flags|syscall.O_DIRECT, 0o644)
	direct := err == nil
	if !direct {
		f, err = st.fs.OpenFile(tmp, flags, 0o644)
	}
	if err != nil {
		return 0, fmt.Errorf("persist: creating %s: %w", tmp, err)
	}
	fail := func(err error) (int64, error) {
		f.Close()
		st.fs.Remove(tmp)
		return 0, err
	}
	var dw *directWriter
	var w io.Writer = f
	if direct {
		dw = newDirectWriter(f)
		w = dw
	}
	var n int64
	sw := &stopWriter{w: w, stop: &st.stopping}
	if cfg := st.config(); IsRDBName(cfg.DBFilename) {
		n, err = WriteRDB(sw, h, items, cfg.RDB)
	} else {
		n, err = WriteSnapshot(sw, h, items)
	}
	if dw != nil {
		if err != nil {
			dw.abandon()
		} else if err = dw.finish(); err != nil {
			err = fmt.Errorf("persist: writing %s: %w", tmp, err)
		}
	}
	if err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("persist: syncing %s: %w", tmp, err))
	}
	if err := f.Close(); err != nil {
		st.fs.Remove(tmp)
		return 0, fmt.Errorf("persist: closing %s: %w", tmp, err)
	}
	if err := st.fs.Rename(tmp, st.snap); err != nil {
		st.fs.Remove(tmp)
		return 0, fmt.Errorf("persist: renaming %s to %s: %w", tmp, st.snap, err)
	}
	if err := st.fs.SyncDir(st.cfg.Dir); err != nil {
		return 0, fmt.Errorf("persist: syncing dir %s: %w", st.cfg.Dir, err)
	}
	return n, nil
}

// A stopWriter fails once the store is closing, so that Close does not wait for a background
// snapshot of many gigabytes.
type stopWriter struct {
	w    io.Writer
	stop *atomic.Bool
}

func (s *stopWriter) Write(p []byte) (int, error) {
	if s.stop.Load() {
		return 0, ErrClosed
	}
	return s.w.Write(p)
}

// LastSave returns the unix time of the last good snapshot (LASTSAVE); before any, that of the
// start.
func (st *Store) LastSave() int64 { return st.lastSave.Load() }

// cron starts snapshots when a save rule or the rewrite rule asks for one, ten times a second.
func (st *Store) cron() {
	defer close(st.cronDone)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-st.stop:
			return
		case <-t.C:
		}
		if st.saving.Load() != 0 {
			continue
		}
		cfg := st.config()
		now := time.Now()
		// After a failure, wait 5 seconds before trying again (as Redis does).
		retryOK := st.lastOK.Load() || now.UnixMilli()-st.lastTry.Load() >= 5000
		if st.rewriteSched.Load() || st.saveSched.Load() {
			kind := int32(kindSave)
			if st.rewriteSched.Load() {
				kind = kindRewrite
			}
			if st.background(kind) == nil {
				st.rewriteSched.Store(false)
				st.saveSched.Store(false)
			}
			continue
		}
		dirty := st.dirty.Load()
		for _, r := range cfg.Save {
			if dirty >= r.Changes && dirty > 0 && now.Unix()-st.lastSave.Load() >= r.Seconds && retryOK {
				st.log.Info("starting a snapshot", "changes", dirty, "seconds", r.Seconds)
				st.background(kindSave)
				break
			}
		}
		if st.saving.Load() != 0 {
			continue
		}
		if a := st.app.Load(); a != nil {
			if a.failure() != nil {
				if now.UnixMilli()-st.lastTry.Load() >= 5000 {
					st.log.Warn("the log failed; rewriting it to recover", "err", a.failure())
					st.background(kindRewrite)
				}
				continue
			}
			size, base := st.logBytes(), st.baseSize.Load()
			if cfg.AutoRewritePercentage > 0 && size >= cfg.AutoRewriteMinSize && size*100 >= base*int64(cfg.AutoRewritePercentage) && retryOK {
				st.log.Info("starting an automatic log rewrite", "log_bytes", size, "snapshot_bytes", base)
				st.background(kindRewrite)
			}
		}
	}
}

// logBytes returns the bytes of the logs since the last snapshot.
func (st *Store) logBytes() int64 {
	st.logsMu.Lock()
	defer st.logsMu.Unlock()
	var n int64
	for _, lf := range st.logs {
		n += lf.size.Load()
	}
	return n
}

// Close ends the store after the server's last command: it stops the background work, abandons
// a background snapshot in progress, writes a snapshot if save is set and anything changed since
// the last one, and writes and syncs the log. A shutdown calls it with save set when there are
// save rules (or SHUTDOWN SAVE), as Redis does.
func (st *Store) Close(save bool) error {
	if !st.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	if !st.loaded.Load() {
		if st.lock != nil {
			st.lock.Close() // a failed Load: let a later Load (with more memory) take the files
		}
		return nil
	}
	close(st.stop)
	<-st.cronDone
	st.stopping.Store(true)
	st.bg.Wait()
	st.stopping.Store(false)
	var err error
	if save && (st.dirty.Load() > 0 || st.saves.Load() == 0 && st.baseSize.Load() == 0) {
		st.saving.Store(kindSave)
		err = st.snapshotLocked(kindSave)
	}
	if a := st.app.Load(); a != nil {
		if cerr := a.close(); err == nil {
			err = cerr
		}
	}
	if st.lock != nil {
		st.lock.Close()
	}
	return err
}

// Rules reports whether save rules are set (whether a shutdown saves by default).
func (st *Store) Rules() bool { return len(st.config().Save) > 0 }

// AppendInfo appends INFO's persistence fields, as Redis names them.
func (st *Store) AppendInfo(b []byte, section string) []byte {
	if section != "persistence" {
		return b
	}
	f := func(name string, v any) { b = fmt.Appendf(b, "%s:%v\r\n", name, v) }
	status := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "err"
	}
	kind := st.saving.Load()
	cur := int64(-1)
	if kind != 0 {
		cur = (time.Now().UnixMilli() - st.saveStarted.Load()) / 1000
	}
	bool01 := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	f("async_loading", 0)
	f("rdb_changes_since_last_save", st.dirty.Load())
	f("rdb_bgsave_in_progress", bool01(kind == kindSave))
	f("rdb_last_save_time", st.lastSave.Load())
	f("rdb_last_bgsave_status", status(st.lastOK.Load()))
	f("rdb_last_bgsave_time_sec", st.lastDur.Load())
	f("rdb_current_bgsave_time_sec", map[bool]int64{true: cur, false: -1}[kind == kindSave])
	f("rdb_saves", st.saves.Load())
	f("rdb_last_load_keys_loaded", st.loadedKeys.Load())
	a := st.app.Load()
	f("aof_enabled", bool01(a != nil))
	f("aof_rewrite_in_progress", bool01(kind == kindRewrite))
	f("aof_rewrite_scheduled", bool01(st.rewriteSched.Load()))
	f("aof_last_rewrite_time_sec", st.lastRewrite.Load())
	f("aof_current_rewrite_time_sec", map[bool]int64{true: cur, false: -1}[kind == kindRewrite])
	f("aof_last_bgrewrite_status", status(st.rewriteOK.Load()))
	f("aof_rewrites", st.rewrites.Load())
	f("aof_last_write_status", status(a == nil || a.failure() == nil))
	if a != nil {
		f("aof_current_size", st.baseSize.Load()+st.logBytes())
		f("aof_base_size", st.baseSize.Load())
		f("aof_pending_rewrite", bool01(st.rewriteSched.Load()))
		f("aof_buffer_length", a.buffered.Load())
		f("aof_pending_bio_fsync", 0)
		f("aof_delayed_fsync", 0)
		f("aof_fsync", Fsync(a.policy.Load()).String())
		f("aof_fsyncs", a.fsyncs.Load())
	}
	return b
}
