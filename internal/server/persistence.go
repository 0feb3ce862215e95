package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/persist"
	"github.com/bloomd/bloom/redisbloom"
)

// This file is the server's side of durability: it opens internal/persist's Store on the
// settings (appendonly, appendfsync, dir, dbfilename, appendfilename, save, auto-aof-rewrite-*),
// hands it the keyspace (dataKeyspace) to load into and to snapshot, and answers SAVE, BGSAVE,
// BGREWRITEAOF, LASTSAVE and SHUTDOWN. The store is the server's Journal; the package
// documentation says why a snapshot taken while adds go on, plus the log after it, is exact.

const (
	errLoading     = "LOADING Redis is loading the dataset in memory"
	errInMulti     = "ERR Command not allowed inside a transaction"
	errNoDataFiles = "ERR this bloomd runs without data files"
)

// openStore makes the store for the durability settings and makes it the journal. It creates
// the data directory if it does not exist and touches no file (loadData does); until loadData
// ends, commands that Redis refuses while loading are answered -LOADING. It must be called
// before the server serves.
func (s *Server) openStore() error {
	cfg := s.config()
	if _, err := os.Stat(cfg.Dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return fmt.Errorf("server: dir %s does not exist and cannot be created: %w", cfg.Dir, err)
		}
		s.log.Info("created the data directory", "dir", cfg.Dir)
	}
	st, err := persist.Open(persist.Config{
		Dir:                   cfg.Dir,
		DBFilename:            cfg.DBFilename,
		AppendFilename:        cfg.AppendFilename,
		AppendOnly:            cfg.AppendOnly,
		AppendFsync:           cfg.AppendFsync,
		Save:                  cfg.Save,
		AutoRewritePercentage: cfg.AutoAOFRewritePercent,
		AutoRewriteMinSize:    cfg.AutoAOFRewriteMinSize,
		RDB:                   cfg.rdbOptions(),
		Logger:                s.log,
		FsyncObserver: func(d time.Duration) {
			s.stats.fsyncs.Observe(int64(d))
			s.stats.fsyncNs.Add(int64(d))
		},
	})
	if err != nil {
		return err
	}
	s.store = st
	s.journal = st
	s.dataLoading.Store(true)
	return nil
}

// loadData loads the snapshot and replays the logs into the keyspace, then opens the log for
// appending. Damage it cannot repair by itself is an error that names the file, the offset and
// the repair; the keyspace must then not be served.
func (s *Server) loadData() error {
	start := time.Now()
	if err := s.store.Load(dataKeyspace{s}); err != nil {
		return err
	}
	keys, _ := s.ks.count()
	s.dataLoading.Store(false)
	s.log.Info("data loaded", "dir", s.config().Dir, "keys", keys, "seconds", time.Since(start).Seconds())
	return nil
}

// closeData ends the store after the last command: a snapshot if save (and anything changed),
// and the log written and synced.
func (s *Server) closeData(save bool) error {
	if s.store == nil {
		return nil
	}
	if save {
		s.log.Info("syncing the log; saving a last snapshot if anything changed since the last one")
	}
	err := s.store.Close(save)
	if errors.Is(err, persist.ErrClosed) {
		err = nil
	}
	return err
}

// applyPersist passes changed durability settings (CONFIG SET) to the store.
func (s *Server) applyPersist(old, next *Config) {
	st := s.store
	if st == nil {
		return
	}
	if old.AppendFsync != next.AppendFsync {
		st.SetFsync(next.AppendFsync)
	}
	if !slices.Equal(old.Save, next.Save) {
		st.SetSave(next.Save)
	}
	if old.AutoAOFRewritePercent != next.AutoAOFRewritePercent || old.AutoAOFRewriteMinSize != next.AutoAOFRewriteMinSize {
		st.SetAutoRewrite(next.AutoAOFRewritePercent, next.AutoAOFRewriteMinSize)
	}
	if old.rdbOptions() != next.rdbOptions() {
		st.SetRDB(next.rdbOptions())
	}
}

// rdbOptions are the settings of RDB files, for the store.
func (c *Config) rdbOptions() persist.RDBOptions {
	return persist.RDBOptions{NoCompression: !c.RDBCompression, NoChecksum: !c.RDBChecksum,
		SkipUnknown: c.RDBSkipUnknownTypes, RedisVersion: redisVersion}
}

// dataKeyspace is the server as the store sees it (persist.Keyspace): a place to load
// snapshots into, to replay log records on, and to take snapshots of.
type dataKeyspace struct{ s *Server }

func (k dataKeyspace) Pause(fn func())            { k.s.Pause(fn) }
func (k dataKeyspace) SetLoading(on bool)         { k.s.SetLoading(on) }
func (k dataKeyspace) Exec(args ...[]byte) []byte { return k.s.Exec(args...) }

// Capture lists every live key with its expiry time, and each filter's number of links and
// items as of now. It runs inside Pause, so no command is in flight: the walk costs a few
// cache misses per key and allocates nothing per key beyond the list.
func (k dataKeyspace) Capture() []persist.Item {
	items, _ := k.capture(nil, false)
	return items
}

// CaptureCharged is Capture for a snapshot of the data files, with the copies of the cuckoo
// filters charged to the memory ceiling until the snapshot is written (release), as a full
// sync's are (replHost.Snapshot); a snapshot whose copies do not fit is refused.
func (k dataKeyspace) CaptureCharged() ([]persist.Item, func(), error) {
	s := k.s
	var charged int64
	items, err := k.capture(func(n int64) error {
		if err := s.chargeRepl(n); err != nil {
			return fmt.Errorf("the copies of its cuckoo filters (%d bytes, %s) do not fit under the memory limit: %w", n, humanBytes(n), err)
		}
		charged = n
		return nil
	}, false)
	if err != nil {
		return nil, nil, err
	}
	return items, func() { s.chargeRepl(-charged) }, nil
}

// capture is Capture; charge, if not nil, is first asked for the bytes that the copies of the
// cuckoo filters take, and its error stops the capture before they are made. With exact, Bloom
// filters are copied too (redisbloom.Chain.Clone), so that the items are the data of this
// instant exactly, as a Redis replica must be given it.
func (k dataKeyspace) capture(charge func(n int64) error, exact bool) ([]persist.Item, error) {
	ks := k.s.ks
	n, _ := ks.count()
	items := make([]persist.Item, 0, n)
	type pending struct {
		i  int
		cv *cuckooValue
	}
	var cuckoos []pending
	var chains []int // with exact: the items whose chains are to be copied
	var copyBytes int64
	now := nowMs()
	for i := range ks.shards {
		sh := &ks.shards[i]
		sh.mu.RLock()
		for key, e := range sh.m {
			// An expired key is as good as gone: its DEL may be in the log already, or never
			// be. A replica keeps it until its primary's DEL, as its stream does.
			if ks.expired(e, now) && !ks.replica.Load() {
				continue
			}
			it := persist.Item{Key: key, Expire: e.expire.Load()}
			switch v := e.val.(type) {
			case *bloomValue:
				it.Chain, it.Links, it.Count = v.ch, v.ch.NumFilters(), v.ch.Card()
				if exact {
					chains = append(chains, len(items))
					copyBytes += int64(v.ch.Size())
				}
			case *cuckooValue:
				// Cuckoo writes move fingerprints, so the snapshot takes a copy now, while no
				// command runs (a memory copy of the slots, not a walk over them), once the
				// walk has found what the copies need.
				cuckoos = append(cuckoos, pending{len(items), v})
				copyBytes += v.mem.Load()
			case *stringValue:
				// Copied while clients go on changing it, its length as of now (see
				// persist.Item.Str and cmd_string.go's records).
				it.Str, it.StrLen = v, v.Len()
			case *hashValue:
				// Its fields as of now, shared until its next change (a copy of the list of
				// fields then, not of the fields).
				v.Lock()
				hv := v.Snapshot()
				v.Unlock()
				it.Hash = &hv
			}
			items = append(items, it)
		}
		sh.mu.RUnlock()
	}
	if charge != nil {
		if err := charge(copyBytes); err != nil {
			return nil, err
		}
	}
	for _, p := range cuckoos {
		items[p.i].Cuckoo = p.cv.cf.Clone()
	}
	for _, i := range chains {
		items[i].Chain = items[i].Chain.Clone()
	}
	return items, nil
}

// Filter makes the filter at key from a BF.SCANDUMP header, with zeroed bits that the snapshot
// reader then fills, charging its memory as BF.LOADCHUNK does (in loading mode the limit is the
// process's ceiling, not maxmemory).
func (k dataKeyspace) Filter(key []byte, expire int64, header []byte) (*redisbloom.Chain, error) {
	s := k.s
	sh, old := s.ks.lockShard(key)
	defer sh.mu.Unlock()
	if old != nil {
		return nil, fmt.Errorf("key %q appears twice", clipKey(key))
	}
	e, msg := s.newBloomEntry(key, true, func(o *redisbloom.Options) (*redisbloom.Chain, error) {
		return redisbloom.LoadHeader(header, o)
	})
	if e == nil {
		if strings.HasPrefix(msg, "ERR Insufficient memory") {
			return nil, fmt.Errorf("%w: filter %q: %s", persist.ErrNoMemory, clipKey(key), strings.TrimPrefix(msg, "ERR "))
		}
		return nil, fmt.Errorf("filter %q: %s", clipKey(key), strings.TrimPrefix(msg, "ERR "))
	}
	e.expire.Store(expire)
	s.ks.insertLocked(sh, e)
	return e.val.(*bloomValue).ch, nil
}

// Cuckoo makes the cuckoo filter at key from a CF.SCANDUMP header, with free slots that the
// snapshot reader then fills, charging its memory as CF.LOADCHUNK does.
func (k dataKeyspace) Cuckoo(key []byte, expire int64, header []byte) (*bloom.Cuckoo, error) {
	s := k.s
	sh, old := s.ks.lockShard(key)
	defer sh.mu.Unlock()
	if old != nil {
		return nil, fmt.Errorf("key %q appears twice", clipKey(key))
	}
	e, msg := s.newCuckooEntry(key, true, 0, func(o *bloom.CuckooOptions) (*bloom.Cuckoo, error) {
		return redisbloom.LoadCFHeader(header, o)
	})
	if e == nil {
		if strings.HasPrefix(msg, "ERR Insufficient memory") {
			return nil, fmt.Errorf("%w: cuckoo filter %q: %s", persist.ErrNoMemory, clipKey(key), strings.TrimPrefix(msg, "ERR "))
		}
		return nil, fmt.Errorf("cuckoo filter %q: %s", clipKey(key), strings.TrimPrefix(msg, "ERR "))
	}
	e.expire.Store(expire)
	s.ks.insertLocked(sh, e)
	return e.val.(*cuckooValue).cf, nil
}

// BuildFilter makes the filter at key with build, which decodes it from an RDB file into a chain
// whose Reserve hook charges each sub-filter as BF.LOADCHUNK's header is charged.
func (k dataKeyspace) BuildFilter(key []byte, expire int64, build func(*redisbloom.Options) (*redisbloom.Chain, error)) error {
	s := k.s
	sh, old := s.ks.lockShard(key)
	defer sh.mu.Unlock()
	if old != nil {
		return fmt.Errorf("key %q appears twice", clipKey(key))
	}
	var buildErr error
	e, msg := s.newBloomEntry(key, true, func(o *redisbloom.Options) (*redisbloom.Chain, error) {
		ch, err := build(o)
		buildErr = err
		return ch, err
	})
	if e == nil {
		return loadRefusal("filter", key, msg, buildErr)
	}
	e.expire.Store(expire)
	s.ks.insertLocked(sh, e)
	return nil
}

// BuildCuckoo is BuildFilter for a cuckoo filter.
func (k dataKeyspace) BuildCuckoo(key []byte, expire int64, build func(*bloom.CuckooOptions) (*bloom.Cuckoo, error)) error {
	s := k.s
	sh, old := s.ks.lockShard(key)
	defer sh.mu.Unlock()
	if old != nil {
		return fmt.Errorf("key %q appears twice", clipKey(key))
	}
	var buildErr error
	e, msg := s.newCuckooEntry(key, true, 0, func(o *bloom.CuckooOptions) (*bloom.Cuckoo, error) {
		cf, err := build(o)
		buildErr = err
		return cf, err
	})
	if e == nil {
		return loadRefusal("cuckoo filter", key, msg, buildErr)
	}
	e.expire.Store(expire)
	s.ks.insertLocked(sh, e)
	return nil
}

// loadRefusal words a filter of a data file that the keyspace refused: for lack of memory an
// error wrapping persist.ErrNoMemory with the sizes, for bad data the decoder's own error.
func loadRefusal(what string, key []byte, msg string, buildErr error) error {
	if _, ok := errors.AsType[*memRefusal](buildErr); ok || strings.HasPrefix(msg, "ERR Insufficient memory") || strings.HasPrefix(msg, "OOM") {
		return fmt.Errorf("%w: %s %q: %s", persist.ErrNoMemory, what, clipKey(key), strings.TrimPrefix(msg, "ERR "))
	}
	if buildErr != nil {
		return buildErr
	}
	return fmt.Errorf("%s %q: %s", what, clipKey(key), strings.TrimPrefix(msg, "ERR "))
}

// String sets key to value, which it keeps.
func (k dataKeyspace) String(key, value []byte, expire int64) error {
	return k.load(key, newStringEntry(key, value[:len(value):len(value)]), expire, "string")
}

// Hash sets key to h, which it keeps.
func (k dataKeyspace) Hash(key []byte, h *hashValue, expire int64) error {
	e := &entry{key: string(key), val: h}
	e.mem.Store(int64(keyOverhead + len(key)))
	return k.load(key, e, expire, "hash")
}

// load adds the new entry e for key, charging its memory.
func (k dataKeyspace) load(key []byte, e *entry, expire int64, what string) error {
	s := k.s
	sh, old := s.ks.lockShard(key)
	defer sh.mu.Unlock()
	if old != nil {
		return fmt.Errorf("key %q appears twice", clipKey(key))
	}
	if err := s.reserveMem(e.mem.Load() + valueMem(e.val)); err != nil {
		return fmt.Errorf("%w: %s %q: %v", persist.ErrNoMemory, what, clipKey(key), err)
	}
	e.expire.Store(expire)
	s.ks.insertLocked(sh, e)
	return nil
}

func clipKey(key []byte) []byte { return key[:min(len(key), 100)] }

// saveCmd implements SAVE: a snapshot, on disk when the reply goes out. Other clients are paused
// only for its first instant (see internal/persist), not while it is written.
func saveCmd(c *Conn, args [][]byte) {
	st := c.srv.store
	switch {
	case c.multi != nil:
		c.reject(errInMulti)
		return
	case st == nil:
		c.w.Error(errNoDataFiles)
		return
	}
	var err error
	c.outsideGate(func() { err = st.Save() })
	switch {
	case err == nil:
		c.w.OK()
	case errors.Is(err, persist.ErrSaveInProgress):
		c.w.Error("ERR Background save already in progress")
	default:
		c.srv.log.Warn("SAVE failed", "err", err)
		c.w.Error("ERR " + oneLine(err.Error()))
	}
}

// bgsaveCmd implements BGSAVE [SCHEDULE].
func bgsaveCmd(c *Conn, args [][]byte) {
	schedule := false
	if len(args) == 2 {
		if !equalFold(args[1], "schedule") {
			c.w.Error(errSyntax)
			return
		}
		schedule = true
	}
	st := c.srv.store
	if st == nil {
		c.w.Error(errNoDataFiles)
		return
	}
	scheduled, err := st.BackgroundSave(schedule)
	switch {
	case scheduled:
		c.w.Simple("Background saving scheduled")
	case err == nil:
		c.w.Simple("Background saving started")
	case errors.Is(err, persist.ErrSaveInProgress):
		c.w.Error("ERR Background save already in progress")
	default:
		c.w.Error("ERR " + oneLine(err.Error()))
	}
}

// bgrewriteaofCmd implements BGREWRITEAOF: a snapshot after which the log starts anew.
func bgrewriteaofCmd(c *Conn, args [][]byte) {
	st := c.srv.store
	if st == nil {
		c.w.Error(errNoDataFiles)
		return
	}
	scheduled, err := st.BackgroundRewrite()
	switch {
	case scheduled:
		c.w.Simple("Background append only file rewriting scheduled")
	case err == nil:
		c.w.Simple("Background append only file rewriting started")
	case errors.Is(err, persist.ErrRewriteInProgress):
		c.w.Error("ERR Background append only file rewriting already in progress")
	default:
		c.w.Error("ERR " + oneLine(err.Error()))
	}
}

// lastsaveCmd implements LASTSAVE: the unix time of the last good snapshot.
func lastsaveCmd(c *Conn, args [][]byte) {
	if st := c.srv.store; st != nil {
		c.w.Int(st.LastSave())
		return
	}
	c.w.Int(c.srv.started.Unix())
}

// shutdownCmd implements SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]. With a snapshot to take
// (SAVE, or save rules and no NOSAVE) it is taken first, while the server still serves: if it
// fails, the server stays up and says so, unless FORCE. Then the server stops as on SIGTERM (the
// commands in flight are answered, the log is synced, a last snapshot is taken if anything
// changed since) and this connection is closed without a reply, as Redis does.
func shutdownCmd(c *Conn, args [][]byte) {
	var nosave, save, force, abort bool
	for _, a := range args[1:] {
		switch {
		case equalFold(a, "nosave"):
			nosave = true
		case equalFold(a, "save"):
			save = true
		case equalFold(a, "now"):
		case equalFold(a, "force"):
			force = true
		case equalFold(a, "abort"):
			abort = true
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	switch {
	case nosave && save || abort && len(args) > 2:
		c.w.Error(errSyntax)
		return
	case abort:
		c.w.Error("ERR No shutdown in progress.")
		return
	case c.multi != nil:
		c.reject(errInMulti)
		return
	}
	if msg := c.srv.scriptShutdown(nosave); msg != "" {
		c.w.Error(msg)
		return
	}
	s := c.srv
	st := s.store
	if st != nil && !nosave {
		save = save || st.Rules()
	}
	if s.dataLoading.Load() {
		save = false // a snapshot now would hold only part of the data
	}
	if save && st != nil {
		var err error
		c.outsideGate(func() {
			for err = st.Save(); errors.Is(err, persist.ErrSaveInProgress); err = st.Save() {
				time.Sleep(20 * time.Millisecond) // a BGSAVE is being written: wait for it
			}
		})
		if err != nil && !force {
			s.log.Warn("error trying to save the DB, can't exit", "err", err)
			c.w.Error("ERR Errors trying to SHUTDOWN. Check logs.")
			return
		}
	}
	s.log.Info("user requested shutdown", "client", c.addr, "save", save)
	select {
	case s.shutdownReq <- save:
	default: // one is on its way already
	}
	c.quit = true
}

// ShutdownRequested delivers a SHUTDOWN command's request, and whether it asked for a final
// snapshot; Run stops the server when it arrives.
func (s *Server) ShutdownRequested() <-chan bool { return s.shutdownReq }

func oneLine(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ") }
