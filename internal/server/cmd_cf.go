package server

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/redisbloom"
)

// RedisBloom's cuckoo filters: CF.RESERVE, CF.ADD, CF.ADDNX, CF.INSERT, CF.INSERTNX, CF.EXISTS,
// CF.MEXISTS, CF.COUNT, CF.DEL, CF.COMPACT, CF.INFO, CF.DEBUG, CF.SCANDUMP and CF.LOADCHUNK, with
// RedisBloom 2.6.28's replies, errors and order of checks (src/rebloom.c).
//
// Concurrency: a cuckoo insertion moves fingerprints between buckets, so, unlike Bloom adds,
// writes to one cuckoo filter do not commute. Every write command on a filter holds the value's
// mutex while it changes the filter and journals itself, so the log's order for one filter is the
// order the writes took effect, and a replay rebuilds the same slots. Reads (CF.EXISTS,
// CF.MEXISTS, CF.COUNT, CF.INFO, CF.SCANDUMP) take only the filter's read lock and run in
// parallel with each other; writes to different filters run in parallel.

// cuckooTypeName is RedisBloom's cuckoo data type name, which TYPE reports.
const cuckooTypeName = "MBbloomCF"

// A cuckooValue is a cuckoo filter stored under a key, with the bytes it has charged.
type cuckooValue struct {
	mu  sync.Mutex // held by write commands across the change and its journal record
	cf  *bloom.Cuckoo
	mem atomic.Int64
}

// newCuckooValue makes a value whose filter mk makes with a Reserve hook that charges the
// keyspace and refuses what would pass the memory limit (for the first slot array and every
// growth).
func (s *Server) newCuckooValue(mk func(opts *bloom.CuckooOptions) (*bloom.Cuckoo, error)) (*cuckooValue, error) {
	cv := &cuckooValue{}
	cf, err := mk(&bloom.CuckooOptions{MaxFilters: bloom.CuckooMaxFilters, Reserve: func(n uint64) error {
		had := cv.mem.Load()
		if err := s.checkSize(true, satAdd(had, n), had > 0); err != nil {
			return err
		}
		if err := s.reserveMem(int64(min(n, math.MaxInt64))); err != nil {
			return err
		}
		cv.mem.Add(int64(n))
		return nil
	}})
	if err != nil {
		s.ks.used.Add(-cv.mem.Swap(0))
		return nil, err
	}
	cv.cf = cf
	return cv, nil
}

// release gives back what cv charged beyond its slots now (after a compaction freed sub-filters).
// cv.mu must be held.
func (s *Server) release(cv *cuckooValue) {
	actual := int64(cv.cf.Info().Bytes)
	if charged := cv.mem.Load(); charged > actual {
		cv.mem.Store(actual)
		s.ks.used.Add(actual - charged)
	}
}

// newCuckooEntry makes an entry for key holding the filter mk makes, charging its memory. It
// returns RedisBloom's error reply on failure; a filter that the memory limit refuses, or that
// no machine could hold, is refused as BF.RESERVE refuses one, with the sizes (asked is the
// size of the filter mk makes, for the latter; 0 for a header).
func (s *Server) newCuckooEntry(key []byte, header bool, asked int64, mk func(opts *bloom.CuckooOptions) (*bloom.Cuckoo, error)) (*entry, string) {
	keyMem := int64(keyOverhead + len(key))
	if !s.ks.reserve(keyMem, s.memLimitBytes()) {
		s.stats.oom.Add(1)
		return nil, errOOM
	}
	cv, err := s.newCuckooValue(mk)
	if err != nil {
		used := s.ks.used.Load()
		s.ks.used.Add(-keyMem)
		mr, refused := errors.AsType[*memRefusal](err)
		switch {
		case isSizeError(err):
			return nil, sizeErrorReply(err)
		case refused:
			return nil, mr.reply("create")
		case errors.Is(err, errReserve):
			return nil, errOOM
		case header:
			// A header RedisBloom refuses, or one it accepts but cannot allocate (on which
			// RedisBloom aborts the server).
			return nil, "Couldn't create filter!"
		case errors.Is(err, bloom.ErrTooLarge) && asked > 0:
			s.stats.oom.Add(1)
			limit, src := s.memoryLimit()
			return nil, (&memRefusal{asked: asked, used: used, limit: limit, source: src}).reply("create")
		}
		return nil, "ERR Insufficient memory to create filter"
	}
	e := &entry{key: string(key), val: cv}
	e.mem.Store(keyMem)
	return e, ""
}

// cuckooAt returns the cuckoo filter at key; missing reports an absent key, wrongType a key of
// another type.
func (c *Conn) cuckooAt(key []byte) (cv *cuckooValue, missing, wrongType bool) {
	e := c.entry(key)
	if e == nil {
		return nil, true, false
	}
	cv, ok := e.val.(*cuckooValue)
	return cv, false, !ok
}

// cuckooOrError returns the filter at key, or replies RedisBloom's statusStrerror (ERR not
// found, WRONGTYPE) and returns nil.
func (c *Conn) cuckooOrError(key []byte) *cuckooValue {
	cv, missing, wrong := c.cuckooAt(key)
	switch {
	case missing:
		c.w.Error(errNotFound)
	case wrong:
		c.w.Error(errWrongType)
	}
	return cv
}

// argIndex returns the index of the first argument equal to name ignoring case, or -1. Like
// RedisBloom's RMUtil_ArgIndex it looks at every argument, the command and key included.
func argIndex(args [][]byte, name string) int {
	for i, a := range args {
		if equalFold(a, name) {
			return i
		}
	}
	return -1
}

// cfReserveCmd implements CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS i] [EXPANSION e].
// As in RedisBloom, the options are found anywhere among the arguments (the key included),
// unknown ones are ignored, and the checks run in RedisBloom's order.
func cfReserveCmd(c *Conn, args [][]byte) {
	if len(args) < 3 || len(args)%2 == 0 {
		c.w.Error(arityError("cf.reserve"))
		return
	}
	capacity, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error("Bad capacity")
		return
	}
	opt := func(name string, def, lo, hi int64) (int64, bool) {
		i := argIndex(args, strings.ToLower(name))
		if i < 0 {
			return def, true
		}
		if i+1 >= len(args) {
			// RedisBloom reads past its arguments here; refuse as unparsable instead.
			c.w.Error("Couldn't parse " + name)
			return 0, false
		}
		v, ok := resp.ParseInt(args[i+1])
		if !ok {
			c.w.Error("Couldn't parse " + name)
			return 0, false
		}
		if v < lo || v > hi {
			c.w.Error(fmt.Sprintf("%s: value must be an integer between %d and %d, inclusive.", name, lo, hi))
			return 0, false
		}
		return v, true
	}
	// Omitted options come from the settings (cf-max-iterations, cf-bucket-size,
	// cf-expansion-factor); the record names them all.
	def := c.newFilterSettings()
	maxIter, ok := opt("MAXITERATIONS", def.CFMaxIterations, 1, bloom.CuckooMaxIterations)
	if !ok {
		return
	}
	bucketSize, ok := opt("BUCKETSIZE", def.CFBucketSize, 1, bloom.CuckooMaxBucketSize)
	if !ok {
		return
	}
	expansion, ok := opt("EXPANSION", def.CFExpansion, 0, bloom.CuckooMaxExpansion)
	if !ok {
		return
	}
	if bucketSize*2 > capacity {
		c.w.Error("Capacity must be at least (BucketSize * 2)")
		return
	}
	key := args[1]
	sh, e := c.lockForCreate(key)
	if sh == nil {
		return
	}
	defer sh.mu.Unlock()
	if e != nil {
		if _, ok := e.val.(*cuckooValue); ok {
			c.w.Error(errItemExists)
		} else {
			c.w.Error(errWrongType)
		}
		return
	}
	p := cfParams{capacity: capacity, bucketSize: bucketSize, maxIterations: maxIter, expansion: expansion}
	e, msg := c.srv.newCuckooEntry(key, false, p.bytes(), p.make)
	if e == nil {
		c.w.Error(msg)
		return
	}
	c.srv.ks.insertLocked(sh, e)
	record := args
	if len(args) != 9 || argIndex(args, "maxiterations") < 0 || argIndex(args, "bucketsize") < 0 || argIndex(args, "expansion") < 0 {
		record = p.reserveArgs(key)
	}
	c.propagate(record)
	c.keyCreated(key)
	c.notify(evModule, "cuckoo.reserve", key)
	c.w.OK()
}

// Per-item results of CF adds, as RedisBloom's CuckooInsertStatus, plus a refusal by maxmemory.
const (
	cfInserted  int8 = 1
	cfExists    int8 = 0
	cfNoSpace   int8 = -1
	cfAllocFail int8 = -2 // growth impossible (RedisBloom's CuckooInsert_MemAllocFailed)
	cfNoMemory  int8 = -3 // growth refused by maxmemory
	cfTooBig    int8 = -4 // growth refused by cf-max-filter-bytes
)

// cfInsertOpts are the settings of a CF add command.
type cfInsertOpts struct {
	nx, multi, noCreate bool
	capacity            int64 // 0 for cf-initial-size
}

// cfParams are the parameters of a new cuckoo filter.
type cfParams struct{ capacity, bucketSize, maxIterations, expansion int64 }

// cfDefaults returns the parameters of a cuckoo filter made by an add: the settings' (see
// newFilterSettings), with capacity if it is not 0.
func (c *Conn) cfDefaults(capacity int64) cfParams {
	d := c.newFilterSettings()
	if capacity == 0 {
		capacity = d.CFInitialSize
	}
	return cfParams{capacity: capacity, bucketSize: d.CFBucketSize, maxIterations: d.CFMaxIterations, expansion: d.CFExpansion}
}

// make makes the filter p describes (expansion 0: non-scaling), with o's hook.
func (p cfParams) make(o *bloom.CuckooOptions) (*bloom.Cuckoo, error) {
	o.BucketSize, o.MaxIterations = uint16(p.bucketSize), uint16(p.maxIterations)
	o.Expansion, o.NonScaling = uint16(p.expansion), p.expansion == 0
	return bloom.NewCuckoo(uint64(p.capacity), o)
}

// bytes returns the size of the first sub-filter p.make makes (its capacity/bucket-size
// buckets rounded up to a power of two, at least one, of bucket-size bytes), at most
// math.MaxInt64.
func (p cfParams) bytes() int64 {
	buckets := uint64(1)
	if n := uint64(p.capacity) / uint64(max(p.bucketSize, 1)); n > 1 {
		l := bits.Len64(n - 1)
		if l > 62 {
			return math.MaxInt64
		}
		buckets = 1 << l
	}
	hi, lo := bits.Mul64(buckets, uint64(max(p.bucketSize, 1)))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// reserveArgs returns the CF.RESERVE command that makes the filter p describes, every
// parameter spelled out, so that a replay or a replica with other defaults makes the same one.
func (p cfParams) reserveArgs(key []byte) [][]byte {
	return [][]byte{[]byte("CF.RESERVE"), key, strconv.AppendInt(nil, p.capacity, 10),
		[]byte("BUCKETSIZE"), strconv.AppendInt(nil, p.bucketSize, 10),
		[]byte("MAXITERATIONS"), strconv.AppendInt(nil, p.maxIterations, 10),
		[]byte("EXPANSION"), strconv.AppendInt(nil, p.expansion, 10)}
}

func cfAddCmd(c *Conn, args [][]byte) {
	nx := len(args[0]) > 0 && (args[0][len(args[0])-1]|0x20) == 'x'
	c.cfInsert(args, args[1], args[2:3], &cfInsertOpts{nx: nx})
}

// cfInsertCmd implements CF.INSERT and CF.INSERTNX key [CAPACITY cap] [NOCREATE] ITEMS item...:
// options are recognized by their first letter only, as RedisBloom does.
func cfInsertCmd(c *Conn, args [][]byte) {
	name := args[0]
	opts := cfInsertOpts{nx: (name[len(name)-1] | 0x20) == 'x', multi: true}
	items := -1
	for i := 2; i < len(args) && items < 0; {
		first := byte(0)
		if len(args[i]) > 0 {
			first = args[i][0] | 0x20
		}
		switch first {
		case 'c':
			if i++; i == len(args) {
				c.w.Error(arityError(string(lower(name))))
				return
			}
			n, ok := resp.ParseInt(args[i])
			if !ok {
				c.w.Error("Bad capacity")
				return
			}
			if 2*c.newFilterSettings().CFBucketSize > n { // the bucket size the filter will have
				c.w.Error("Capacity must be at least (BucketSize * 2)")
				return
			}
			opts.capacity = n
			i++
		case 'i':
			i++
			items = i
		case 'n':
			opts.noCreate = true
			i++
		default:
			c.w.Error("Unknown argument received")
			return
		}
	}
	if items < 0 || items == len(args) {
		c.w.Error(arityError(string(lower(name))))
		return
	}
	c.cfInsert(args, args[1], args[items:], &opts)
}

func lower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		out[i] = ch
	}
	return out
}

// cfInsert is the common path of CF.ADD, CF.ADDNX, CF.INSERT and CF.INSERTNX (RedisBloom's
// cfInsertCommon): find or create the filter, refuse a filter of 32 sub-filters, add each item
// in order, journal the items that changed the filter, and reply.
func (c *Conn) cfInsert(args [][]byte, key []byte, items [][]byte, opts *cfInsertOpts) {
	for {
		if e := c.entry(key); e != nil {
			cv, ok := e.val.(*cuckooValue)
			if !ok {
				c.w.Error(errWrongType)
				return
			}
			cv.mu.Lock()
			c.cfApply(cv, args, items, opts)
			cv.mu.Unlock()
			return
		}
		if opts.noCreate {
			c.w.Error(errNotFound)
			return
		}
		if c.cfCreate(args, key, items, opts) {
			return
		}
		// Someone created the key meanwhile: add to theirs.
	}
}

// cfCreate creates the filter at key (if still missing), publishes it, adds items and journals,
// all under the shard lock, so no other command sees the filter before its record.
func (c *Conn) cfCreate(args [][]byte, key []byte, items [][]byte, opts *cfInsertOpts) bool {
	sh, e := c.lockForCreate(key)
	if sh == nil {
		return true // refused -BUSY
	}
	defer sh.mu.Unlock()
	if e != nil {
		return false
	}
	p := c.cfDefaults(opts.capacity)
	e, msg := c.srv.newCuckooEntry(key, false, p.bytes(), p.make)
	if e == nil {
		c.w.Error(msg)
		return true
	}
	cv := e.val.(*cuckooValue)
	c.srv.ks.insertLocked(sh, e)
	cv.mu.Lock()
	// The filter's record comes first and names every parameter; the add's record follows
	// with the items that changed it.
	c.propagate(p.reserveArgs(key))
	c.keyCreated(key)
	c.notify(evModule, "cuckoo.reserve", key)
	c.cfApply(cv, args, items, opts)
	cv.mu.Unlock()
	return true
}

// cfApply adds items to cv (whose mutex is held), journals what changed it, and replies.
// As Redis 8 does, it refuses a filter of cf-max-expansions sub-filters or more, whenever the
// filter was made (but not on a replica or while the data files load: see limitsApply).
func (c *Conn) cfApply(cv *cuckooValue, args [][]byte, items [][]byte, opts *cfInsertOpts) {
	if c.srv.limitsApply() && int64(cv.cf.NumFilters()) >= c.srv.filters.Load().CFMaxExpansions {
		c.w.Error("Maximum expansions reached")
		return
	}
	res := c.scratch[:0]
	changed := false
	for _, it := range items {
		var r int8
		var err error
		inserted := false
		if opts.nx {
			inserted, err = cv.cf.AddUnique(it)
		} else {
			err = cv.cf.Add(it)
			inserted = err == nil
		}
		switch {
		case inserted:
			r = cfInserted
			changed = true
		case err == nil:
			r = cfExists
		case errors.Is(err, bloom.ErrFull):
			r = cfNoSpace
		case isSizeError(err):
			r = cfTooBig
			c.oomReply = sizeErrorReply(err)
		case errors.Is(err, errReserve):
			r = cfNoMemory
		default:
			r = cfAllocFail
		}
		res = append(res, r)
		if r == cfNoSpace && !opts.multi {
			break
		}
	}
	c.scratch = res
	if changed {
		c.propagateCF(args, items, res)
		c.notify(evModule, "cuckoo.add", args[1])
	}
	if !opts.multi {
		switch res[0] {
		case cfNoSpace:
			c.w.Error("Filter is full")
		case cfNoMemory:
			c.w.Error(errOOM)
		case cfTooBig:
			c.w.Error(c.oomReply)
		case cfAllocFail:
			c.w.Error("Memory allocation failure")
		default:
			if c.w.Proto == 3 {
				c.w.Bool(res[0] == cfInserted)
			} else {
				c.w.Int(int64(res[0]))
			}
		}
		return
	}
	c.w.Array(len(res))
	for _, r := range res {
		switch {
		case r == cfNoMemory:
			c.w.Error(errOOM)
		case r == cfTooBig:
			c.w.Error(c.oomReply)
		case r == cfAllocFail:
			c.w.Int(-1) // RedisBloom's reply for an allocation failure inside CF.INSERT
		case c.w.Proto == 3 && !opts.nx:
			c.w.Bool(r == cfInserted)
		default:
			c.w.Int(int64(r))
		}
	}
}

// propagateCF journals a CF add with only the items that changed the filter. Items that were
// present (CF.ADDNX) or found no room changed nothing, so leaving them out replays the same
// slots; leaving out items refused for memory keeps a replay (whose limit is the machine's
// memory) from adding what the original did not. The options before the items are kept, so a
// replay creates a missing filter the same way.
func (c *Conn) propagateCF(args, items [][]byte, res []int8) {
	head := args[:len(args)-len(items)]
	all := true
	for _, r := range res {
		all = all && r == cfInserted
	}
	if all && len(res) == len(items) || len(head) == 2 { // CF.ADD/ADDNX: its one item changed it
		c.propagate(args)
		return
	}
	argv := append(c.journalArgs[:0], head...)
	for i, r := range res {
		if r == cfInserted {
			argv = append(argv, items[i])
		}
	}
	c.journalArgs = argv[:0]
	c.propagate(argv)
}

func cfExistsCmd(c *Conn, args [][]byte) {
	cv, _, _ := c.cuckooAt(args[1])
	c.w.Bool(cv != nil && cv.cf.Test(args[2]))
}

func cfMExistsCmd(c *Conn, args [][]byte) {
	cv, _, _ := c.cuckooAt(args[1])
	c.w.Array(len(args) - 2)
	for _, it := range args[2:] {
		c.w.Bool(cv != nil && cv.cf.Test(it))
	}
}

func cfCountCmd(c *Conn, args [][]byte) {
	cv, _, _ := c.cuckooAt(args[1])
	if cv == nil {
		c.w.Int(0)
		return
	}
	c.w.Int(int64(cv.cf.Count(args[2])))
}

func cfDelCmd(c *Conn, args [][]byte) {
	cv, missing, wrong := c.cuckooAt(args[1])
	if missing || wrong {
		c.w.Error("Not found")
		return
	}
	cv.mu.Lock()
	removed := cv.cf.Remove(args[2])
	if removed {
		c.srv.release(cv)
		c.propagate(args)
		c.notify(evModule, "cuckoo.del", args[1])
	}
	cv.mu.Unlock()
	c.w.Bool(removed)
}

func cfCompactCmd(c *Conn, args [][]byte) {
	cv, missing, wrong := c.cuckooAt(args[1])
	if missing || wrong {
		c.w.Error("Cuckoo filter was not found")
		return
	}
	cv.mu.Lock()
	cv.cf.Compact()
	c.srv.release(cv)
	c.propagate(args)
	cv.mu.Unlock()
	c.w.OK()
}

var cfInfoLabels = []string{"Size", "Number of buckets", "Number of filters", "Number of items inserted",
	"Number of items deleted", "Bucket size", "Expansion rate", "Max iterations"}

func cfInfoCmd(c *Conn, args [][]byte) {
	cv := c.cuckooOrError(args[1])
	if cv == nil {
		return
	}
	i := cv.cf.Info()
	vals := []uint64{40 + 16*uint64(i.Filters) + i.Bytes, i.Buckets, uint64(i.Filters), i.Items, i.Deletes,
		uint64(i.BucketSize), uint64(i.Expansion), uint64(i.MaxIterations)}
	c.w.Map(len(cfInfoLabels))
	for j, l := range cfInfoLabels {
		c.w.Simple(l)
		c.w.Int(int64(vals[j]))
	}
}

func cfDebugCmd(c *Conn, args [][]byte) {
	cv := c.cuckooOrError(args[1])
	if cv == nil {
		return
	}
	i := cv.cf.Info()
	c.w.BulkString(fmt.Sprintf("bktsize:%d buckets:%d items:%d deletes:%d filters:%d max_iterations:%d expansion:%d",
		i.BucketSize, i.Buckets, i.Items, i.Deletes, i.Filters, i.MaxIterations, i.Expansion))
}

func cfScanDumpCmd(c *Conn, args [][]byte) {
	pos, ok := resp.ParseInt(args[2])
	if !ok || pos < 0 {
		c.w.Error("Invalid position")
		return
	}
	cv := c.cuckooOrError(args[1])
	if cv == nil {
		return
	}
	next, data := redisbloom.CFScanDump(cv.cf, pos)
	c.w.Array(2)
	c.w.Int(next)
	if data == nil {
		c.w.Null()
	} else {
		c.w.Bulk(data)
	}
}

// cfLoadChunkCmd implements CF.LOADCHUNK key pos data: at position 1 a header makes an empty
// filter (checked completely, and its memory charged, before anything is allocated); at other
// positions a chunk of slots is written into the existing filter.
func cfLoadChunkCmd(c *Conn, args [][]byte) {
	key, data := args[1], args[3]
	pos, ok := resp.ParseInt(args[2])
	if !ok || pos == 0 {
		c.w.Error("Invalid position")
		return
	}
	if pos == 1 {
		sh, e := c.lockForCreate(key)
		if sh == nil {
			return
		}
		defer sh.mu.Unlock()
		switch {
		case e != nil:
			if _, ok := e.val.(*cuckooValue); ok {
				c.w.Error(errItemExists)
			} else {
				c.w.Error(errWrongType)
			}
			return
		case len(data) != redisbloom.CFHeaderSize:
			c.w.Error("Invalid header")
			return
		}
		e, msg := c.srv.newCuckooEntry(key, true, 0, func(o *bloom.CuckooOptions) (*bloom.Cuckoo, error) {
			return redisbloom.LoadCFHeader(data, o)
		})
		if e == nil {
			c.w.Error(msg)
			return
		}
		c.srv.ks.insertLocked(sh, e)
		c.propagate(args)
		c.keyCreated(key)
		c.notify(evModule, "cuckoo.reserve", key)
		c.w.OK()
		return
	}
	cv := c.cuckooOrError(key)
	if cv == nil {
		return
	}
	cv.mu.Lock()
	defer cv.mu.Unlock()
	if err := redisbloom.CFLoadChunk(cv.cf, pos, data); err != nil {
		c.w.Error("Couldn't load chunk!")
		return
	}
	c.propagate(args)
	c.w.OK()
}
