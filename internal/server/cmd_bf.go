package server

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/filterconf"
	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/redisbloom"
)

// bloomTypeName is RedisBloom's data type name, which TYPE reports.
const bloomTypeName = "MBbloom--"

// RedisBloom 2.6's replies, byte for byte (some lack the ERR prefix, one ends in a space).
const (
	errNotFound       = "ERR not found"
	errItemExists     = "ERR item exists"
	errFull           = "ERR non scaling filter is full"
	errProblem        = "ERR problem inserting into filter"
	errCouldNotCreate = "ERR could not create filter"
	errBadData        = "ERR received bad data"
)

// A bloomValue is a filter stored under a key: a RedisBloom chain, and the bytes it has reserved
// through its Reserve hook (its Size, as long as no allocation failed after the hook agreed).
type bloomValue struct {
	ch  *redisbloom.Chain
	mem atomic.Int64
}

// errReserve matches what the Reserve hook returns when the memory limit refuses an allocation
// (a *memRefusal, which says how much and why).
var errReserve = errors.New("server: memory limit reached")

// newBloomValue returns a value whose chain will be made by mk with a Reserve hook that charges
// the keyspace and refuses what would pass the memory limit.
func (s *Server) newBloomValue(mk func(opts *redisbloom.Options) (*redisbloom.Chain, error)) (*bloomValue, error) {
	bv := &bloomValue{}
	ch, err := mk(&redisbloom.Options{Reserve: func(n uint64) error {
		had := bv.mem.Load()
		if err := s.checkSize(false, satAdd(had, n), had > 0); err != nil {
			return err
		}
		if err := s.reserveMem(int64(min(n, math.MaxInt64))); err != nil {
			return err
		}
		bv.mem.Add(int64(n))
		return nil
	}})
	if err != nil {
		s.ks.used.Add(-bv.mem.Swap(0)) // a hook that agreed before the allocation failed
		return nil, err
	}
	bv.ch = ch
	return bv, nil
}

// reconcile gives back what the hook charged for an allocation that then failed.
func (s *Server) reconcile(bv *bloomValue) {
	for {
		charged, actual := bv.mem.Load(), int64(bv.ch.Size())
		if charged <= actual || bv.mem.CompareAndSwap(charged, actual) {
			if charged > actual {
				s.ks.used.Add(actual - charged)
			}
			return
		}
	}
}

// createErr maps a failure to create a chain to RedisBloom's reply, or to RedisBloom's
// "Insufficient memory" error with the sizes when the memory limit refused it.
func createErr(err error) string {
	if se, ok := errors.AsType[*filterconf.SizeError](err); ok {
		return se.Error()
	}
	if mr, ok := errors.AsType[*memRefusal](err); ok {
		return mr.reply("create")
	}
	return errCouldNotCreate
}

// Per-item results of adds.
const (
	resAdded   int8 = 1
	resPresent int8 = 0
	resProblem int8 = -1 // ERR problem inserting into filter
	resFull    int8 = -2 // ERR non scaling filter is full (stops the command)
	resOOM     int8 = -3 // growth refused by the memory limit
)

// addItems adds items to bv as RedisBloom's bfInsertCommon does, stopping after a full
// non-scaling filter, and returns the per-item results (in c.scratch) and whether any item
// changed the filter. While loading, each item is added as new (see SetLoading).
func (c *Conn) addItems(bv *bloomValue, items [][]byte) ([]int8, bool) {
	res := c.scratch[:0]
	changed := false
	// record notes the result of one item and reports whether to go on.
	record := func(added bool, err error) bool {
		switch {
		case err == nil && added:
			res = append(res, resAdded)
			changed = true
		case err == nil:
			res = append(res, resPresent)
		case errors.Is(err, redisbloom.ErrFull):
			res = append(res, resFull)
			return false
		case isSizeError(err):
			res = append(res, resOOM) // the item is refused, the filter keeps what it holds
			c.oomReply = sizeErrorReply(err)
		case errors.Is(err, errReserve):
			res = append(res, resOOM)
			c.oomReply = errOOM
			if mr, ok := errors.AsType[*memRefusal](err); ok {
				c.oomReply = mr.reply("grow")
			}
		default:
			c.srv.reconcile(bv)
			res = append(res, resProblem)
		}
		return true
	}
	switch {
	case c.srv.ks.loading.Load() && (c != c.srv.applier || c.srv.replAddsNew.Load()):
		// Replaying the journal, whose adds are the items found new: count each as new
		// again, whatever the bits (which a snapshot may have copied later). A replica does
		// so only for the adds that follow a snapshot read while adds went on, up to where
		// its primary says (repl.Loaded.AddsNewUntil); otherwise it adds a primary's items as
		// a client's, as a Redis replica does: a Redis primary sends every BF.ADD, new or not.
		for _, it := range items {
			if !record(true, bv.ch.AddNew(it)) {
				break
			}
		}
	case len(items) == 1:
		record(c.addOne(bv.ch, items[0]))
	default:
		// Several items overlap their cache misses (BF.MADD, BF.INSERT).
		bv.ch.AddMany(items, func(_ int, added bool, err error) bool { return record(added, err) })
	}
	c.scratch = res
	return res, changed
}

func (c *Conn) writeResult(r int8) {
	switch r {
	case resAdded:
		c.w.Bool(true)
	case resPresent:
		c.w.Bool(false)
	case resFull:
		c.w.Error(errFull)
	case resOOM:
		c.w.Error(c.oomReply)
	default:
		c.w.Error(errProblem)
	}
}

// insertOpts are the settings of a filter that an add creates.
type insertOpts struct {
	capacity   int64
	errorRate  float64
	expansion  int64
	nonScaling bool
	noCreate   bool
}

// bfAdd is the common path of BF.ADD, BF.MADD and BF.INSERT: add items to the filter at key,
// creating it with opts (nil for the settings' defaults, see bfDefaults) if it does not exist,
// and journal the command if anything changed. multi selects an array reply.
func (c *Conn) bfAdd(args [][]byte, key []byte, items [][]byte, opts *insertOpts, multi bool) {
	for {
		if e := c.entry(key); e != nil {
			bv, ok := e.val.(*bloomValue)
			if !ok {
				c.w.Error(errWrongType)
				return
			}
			res, changed := c.addItems(bv, items)
			if c.replayOOM(res) {
				return
			}
			if changed {
				c.propagateAdds(args, items, res)
				c.notify(evModule, "bloom.add", key)
			}
			c.writeResults(res, multi)
			return
		}
		if opts != nil && opts.noCreate {
			c.w.Error(errNotFound)
			return
		}
		if opts == nil {
			d := c.bfDefaults() // read once: a retry below makes the same filter
			opts = &d
		}
		if c.bfCreate(args, key, items, opts, multi) {
			return
		}
		// Someone created the key meanwhile: add to theirs.
	}
}

// replayOOM answers a whole add command with the memory refusal when one of its items was
// refused while the data files load: a replayed record must apply whole or fail the start-up,
// and an error element inside an array reply would go unnoticed.
func (c *Conn) replayOOM(res []int8) bool {
	if !c.srv.ks.loading.Load() || !slices.Contains(res, resOOM) {
		return false
	}
	c.w.Error(c.oomReply)
	return true
}

func (c *Conn) writeResults(res []int8, multi bool) {
	if !multi {
		c.writeResult(res[0])
		return
	}
	c.w.Array(len(res))
	for _, r := range res {
		c.writeResult(r)
	}
}

// bfCreate creates the filter at key (if it is still missing) under the shard lock, adds items,
// journals, and only then publishes it, so no other command sees it before its record.
func (c *Conn) bfCreate(args [][]byte, key []byte, items [][]byte, opts *insertOpts, multi bool) bool {
	s := c.srv
	sh, e := c.lockForCreate(key)
	if sh == nil {
		return true // refused -BUSY
	}
	defer sh.mu.Unlock()
	if e != nil {
		return false
	}
	e, errMsg := s.newBloomEntry(key, false, func(o *redisbloom.Options) (*redisbloom.Chain, error) {
		return redisbloom.NewChain(uint64(opts.capacity), opts.errorRate, uint32(opts.expansion), opts.nonScaling, o)
	})
	if e == nil {
		c.w.Error(errMsg)
		return true
	}
	res, _ := c.addItems(e.val.(*bloomValue), items)
	if c.replayOOM(res) {
		s.ks.used.Add(-e.mem.Load() - valueMem(e.val))
		return true
	}
	s.ks.insertLocked(sh, e)
	// The record names every parameter, whatever the command left to the defaults, so that a
	// replay or a replica with other defaults makes the same filter.
	c.propagateAdds(bfCreateArgs(key, opts, items), items, res)
	c.keyCreated(key)
	c.notify(evModule, "bloom.reserve", key)
	if slices.Contains(res, resAdded) {
		c.notify(evModule, "bloom.add", key)
	}
	c.writeResults(res, multi)
	return true
}

// propagateAdds journals an add command with only the items it found new (and counted): those
// that tested present changed nothing. The items are the tail of args; the command, key and
// options before them are kept, so a replay creates a missing filter the same way. Replaying
// the record adds each item as new (see redisbloom.Chain.AddNew and internal/persist), which
// repeats the original's counts and growth even over a snapshot copied while adds went on.
func (c *Conn) propagateAdds(args, items [][]byte, res []int8) {
	all := len(res) == len(items)
	for _, r := range res {
		if r != resAdded {
			all = false
			break
		}
	}
	if all {
		c.propagate(args)
		return
	}
	argv := append(c.journalArgs[:0], args[:len(args)-len(items)]...)
	for i, r := range res {
		if r == resAdded {
			argv = append(argv, items[i])
		}
	}
	c.journalArgs = argv[:0]
	if len(argv) > len(args)-len(items) {
		c.propagate(argv)
	}
}

// newBloomEntry makes an entry for key holding the chain mk makes (from a BF.LOADCHUNK header if
// header is set), charging its memory. It returns the error reply on failure.
func (s *Server) newBloomEntry(key []byte, header bool, mk func(o *redisbloom.Options) (*redisbloom.Chain, error)) (*entry, string) {
	keyMem := int64(keyOverhead + len(key))
	if err := s.reserveMem(keyMem); err != nil {
		return nil, createErr(err)
	}
	bv, err := s.newBloomValue(mk)
	if err != nil {
		s.ks.used.Add(-keyMem)
		switch {
		case errors.Is(err, redisbloom.ErrBadData):
			return nil, errBadData
		case header && errors.Is(err, bloom.ErrTooLarge):
			// A header that is valid but larger than this machine could ever hold.
			s.stats.oom.Add(1)
			return nil, "ERR Insufficient memory to create filter: " + oneLine(err.Error())
		}
		return nil, createErr(err)
	}
	e := &entry{key: string(key), val: bv}
	e.mem.Store(keyMem)
	return e, ""
}

func bfAddCmd(c *Conn, args [][]byte) {
	c.bfAdd(args, args[1], args[2:3], nil, false)
}

func bfMAddCmd(c *Conn, args [][]byte) {
	c.bfAdd(args, args[1], args[2:], nil, true)
}

// parseRate parses an error rate as RedisModule_StringToDouble does (C's strtod, whole string,
// no leading space, no NaN, no overflow or underflow to zero).
func parseRate(b []byte) (float64, bool) {
	s := string(b)
	if s == "" || isCSpace(s[0]) || strings.ContainsRune(s, '_') {
		return 0, false
	}
	t := strings.TrimLeft(s, "+-")
	hex := len(t) > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')
	if hex && !strings.ContainsAny(t, "pP") {
		s += "p0" // strtod reads hexadecimal without an exponent; ParseFloat needs one
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 {
		mant := t
		if hex {
			mant = t[2:]
			if i := strings.IndexAny(mant, "pP"); i >= 0 {
				mant = mant[:i]
			}
		} else if i := strings.IndexAny(mant, "eE"); i >= 0 {
			mant = mant[:i]
		}
		if strings.Trim(mant, "0.") != "" {
			return 0, false // underflow: strtod reports ERANGE with 0
		}
	}
	return f, true
}

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// bfReserveCmd implements BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
// with RedisBloom's checks, replies and order, except that options are looked for only after
// the capacity (RedisBloom also finds them in the key, rate and capacity).
func bfReserveCmd(c *Conn, args [][]byte) {
	if len(args) < 4 || len(args) > 7 {
		c.w.Error(arityError("bf.reserve"))
		return
	}
	rate, ok := parseRate(args[2])
	if !ok {
		c.w.Error("ERR bad error rate")
		return
	}
	if rate >= 1 || rate <= 0 {
		c.w.Error("ERR (0 < error rate range < 1) ")
		return
	}
	capacity, ok := resp.ParseInt(args[3])
	if !ok {
		c.w.Error("ERR bad capacity")
		return
	}
	if capacity <= 0 {
		c.w.Error("ERR (capacity should be larger than 0)")
		return
	}
	opts := insertOpts{capacity: capacity, errorRate: rate, expansion: redisbloom.DefaultExpansion}
	exLoc, nonScalingArg := -1, false
	for i := 4; i < len(args); i++ {
		if equalFold(args[i], "nonscaling") && !opts.nonScaling {
			opts.nonScaling, nonScalingArg = true, true
		} else if equalFold(args[i], "expansion") && exLoc < 0 {
			exLoc = i
		}
	}
	if exLoc >= 0 {
		if exLoc+1 == len(args) {
			c.w.Error("ERR no expansion")
			return
		}
		if opts.nonScaling {
			c.w.Error("Nonscaling filters cannot expand")
			return
		}
		n, ok := resp.ParseInt(args[exLoc+1])
		if !ok {
			c.w.Error("ERR bad expansion")
			return
		}
		if n < 1 {
			c.w.Error("ERR expansion should be greater or equal to 1")
			return
		}
		opts.expansion = n
	}
	record := args
	if exLoc < 0 && !nonScalingArg {
		// The expansion comes from bf-expansion-factor (0: non-scaling), and the record says
		// which, so that a replay with other defaults makes the same filter.
		d := c.bfDefaults()
		opts.expansion, opts.nonScaling = d.expansion, d.nonScaling
		record = append(args[:len(args):len(args)], []byte("EXPANSION"), strconv.AppendInt(nil, opts.expansion, 10))
		if opts.nonScaling {
			record = append(record[:len(args)], []byte("NONSCALING"))
		}
	}
	key := args[1]
	s := c.srv
	sh, e := c.lockForCreate(key)
	if sh == nil {
		return
	}
	defer sh.mu.Unlock()
	if e != nil {
		if _, ok := e.val.(*bloomValue); ok {
			c.w.Error(errItemExists)
		} else {
			c.w.Error(errWrongType)
		}
		return
	}
	e, errMsg := s.newBloomEntry(key, false, func(o *redisbloom.Options) (*redisbloom.Chain, error) {
		return redisbloom.NewChain(uint64(opts.capacity), opts.errorRate, uint32(opts.expansion), opts.nonScaling, o)
	})
	if e == nil {
		c.w.Error(errMsg)
		return
	}
	s.ks.insertLocked(sh, e)
	c.propagate(record)
	c.keyCreated(key)
	c.notify(evModule, "bloom.reserve", key)
	c.w.OK()
}

// bfInsertCmd implements BF.INSERT key [CAPACITY cap] [ERROR rate] [EXPANSION exp] [NOCREATE]
// [NONSCALING] ITEMS item [item ...] with RedisBloom's replies and order of checks, except that
// options are matched by their whole name (RedisBloom looks at their first letters only).
func bfInsertCmd(c *Conn, args [][]byte) {
	if len(args) < 4 {
		c.w.Error(arityError("bf.insert"))
		return
	}
	opts := c.bfDefaults()
	items, expansionArg, nonScalingArg := -1, false, false
	for i := 2; i < len(args) && items < 0; {
		o := args[i]
		switch {
		case equalFold(o, "items"):
			items = i + 1
		case equalFold(o, "error"), equalFold(o, "expansion"), equalFold(o, "capacity"):
			if i+1 == len(args) {
				c.w.Error(arityError("bf.insert"))
				return
			}
			v := args[i+1]
			switch {
			case equalFold(o, "error"):
				r, ok := parseRate(v)
				if !ok {
					c.w.Error("Bad error rate")
					return
				}
				opts.errorRate = r
			case equalFold(o, "expansion"):
				n, ok := resp.ParseInt(v)
				if !ok {
					c.w.Error("Bad expansion")
					return
				}
				opts.expansion, expansionArg = n, true
			default:
				n, ok := resp.ParseInt(v)
				if !ok {
					c.w.Error("Bad capacity")
					return
				}
				opts.capacity = n
			}
			i += 2
			continue
		case equalFold(o, "nocreate"):
			opts.noCreate = true
		case equalFold(o, "nonscaling"):
			opts.nonScaling, nonScalingArg = true, true
		default:
			c.w.Error("Unknown argument received")
			return
		}
		i++
	}
	if items < 0 || items == len(args) {
		c.w.Error(arityError("bf.insert"))
		return
	}
	switch {
	case nonScalingArg && !expansionArg:
		opts.expansion = redisbloom.DefaultExpansion // what RedisBloom 2.6 records for NONSCALING
	case expansionArg && !nonScalingArg:
		opts.nonScaling = false // an explicit EXPANSION wins over bf-expansion-factor 0
	}
	if opts.errorRate <= 0 || opts.errorRate >= 1 || opts.capacity < 1 || opts.expansion < 1 {
		c.w.Error("Bad argument received")
		return
	}
	c.bfAdd(args, args[1], args[items:], &opts, true)
}

// bloomAt returns the filter at key for a read-only command. missing reports an absent key;
// wrongType a key of another type (for which it has already replied WRONGTYPE if reply is set).
func (c *Conn) bloomAt(key []byte) (bv *bloomValue, missing, wrongType bool) {
	e := c.entry(key)
	if e == nil {
		return nil, true, false
	}
	bv, ok := e.val.(*bloomValue)
	return bv, false, !ok
}

// bloomOrError returns the filter at key, or replies ERR not found or WRONGTYPE and returns nil.
func (c *Conn) bloomOrError(key []byte) *bloomValue {
	bv, missing, wrong := c.bloomAt(key)
	switch {
	case missing:
		c.w.Error(errNotFound)
	case wrong:
		c.w.Error(errWrongType)
	}
	return bv
}

// prefetchBatch asks the CPU for the filter words that the single-item BF.ADD and BF.EXISTS
// requests buffered on c will read, when they go to the filter c used last, before any of them
// runs: on a filter larger than the cache, each would otherwise wait for its own misses, while
// this way the misses of a pipelined batch overlap. It reads only the connection's remembered
// key (no lock, no statistics) and the requests stay buffered. The hashes and bit positions it
// computes are kept in c.batch for the requests' own adds and tests (batchHash), so that each
// item is hashed and located once.
//
// The caller (an event loop, whose batchHashes c.batch is) runs the buffered requests next,
// counting them in c.batch.at, and sets c.batch.n to 0 before the connection reads again.
func (c *Conn) prefetchBatch() {
	b := c.batch
	if b == nil {
		return
	}
	b.n, b.at = 0, 0
	e := c.cacheEnt
	if e == nil || c.cacheGen != c.srv.ks.gen.Load() || e.expire.Load() != 0 {
		return
	}
	bv, ok := e.val.(*bloomValue)
	if !ok {
		return
	}
	n := 0
	c.rd.Peek(func(args [][]byte) bool {
		it := &b.items[n]
		it.item = nil
		if len(args) == 3 && string(args[1]) == string(c.cacheKey) && (equalFold(args[0], "bf.add") || equalFold(args[0], "bf.exists")) {
			it.item = args[2]
			it.hash.Reset(args[2])
			bv.ch.PrefetchHash(&it.hash)
		}
		n++
		return n < prefetchRequests
	})
	b.n = n
}

// batchHashes holds, for the batch of requests an event loop is running, what prefetchBatch
// computed: items[i] is for the i-th request, for i < n; at counts the requests run so far.
type batchHashes struct {
	items [prefetchRequests]batchItem
	n, at int
}

// A batchItem is the item of a request in a pipelined batch and its hash.
type batchItem struct {
	item []byte // a slice of the connection's read buffer; nil for none
	hash redisbloom.ItemHash
}

// batchHash returns the hash that prefetchBatch computed for the request that c is running,
// when that request's item is item, the very same slice of the read buffer (same place, same
// length); otherwise nil, and the caller hashes the item itself.
func (c *Conn) batchHash(item []byte) *redisbloom.ItemHash {
	b := c.batch
	if b == nil || b.at >= b.n || len(item) == 0 {
		return nil
	}
	if it := &b.items[b.at]; len(it.item) == len(item) && &it.item[0] == &item[0] {
		return &it.hash
	}
	return nil
}

// addOne adds item to ch, as Chain.Add, with the hash prefetchBatch made when there is one.
func (c *Conn) addOne(ch *redisbloom.Chain, item []byte) (bool, error) {
	if h := c.batchHash(item); h != nil {
		return ch.AddHash(h)
	}
	return ch.Add(item)
}

// prefetchRequests bounds how many requests prefetchBatch looks at: a pipeline's worth, whose
// words (k cache lines per item) still fit in the L1 cache when their requests run.
const prefetchRequests = 32

func bfExistsCmd(c *Conn, args [][]byte) {
	bv, _, _ := c.bloomAt(args[1])
	if bv == nil {
		c.w.Bool(false)
	} else if h := c.batchHash(args[2]); h != nil {
		c.w.Bool(bv.ch.ExistsHash(h))
	} else {
		c.w.Bool(bv.ch.Exists(args[2]))
	}
}

func bfMExistsCmd(c *Conn, args [][]byte) {
	bv, _, _ := c.bloomAt(args[1])
	c.w.Array(len(args) - 2)
	if bv == nil {
		for range args[2:] {
			c.w.Bool(false)
		}
		return
	}
	bv.ch.ExistsMany(args[2:], func(_ int, present bool) { c.w.Bool(present) })
}

func bfCardCmd(c *Conn, args [][]byte) {
	bv, missing, wrong := c.bloomAt(args[1])
	switch {
	case missing:
		c.w.Int(0)
	case wrong:
		c.w.Error(errWrongType)
	default:
		c.w.Int(int64(bv.ch.Card()))
	}
}

var bfInfoFields = []struct{ arg, label string }{
	{"capacity", "Capacity"}, {"size", "Size"}, {"filters", "Number of filters"},
	{"items", "Number of items inserted"}, {"expansion", "Expansion rate"},
}

// bfInfoCmd implements BF.INFO key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION|MAXSCALEDCAPACITY]:
// labels as simple strings, a flat array in RESP2 and a map in RESP3, a single field as a
// one-element array (RESP2) or one-pair map (RESP3), and a nil expansion for a non-scaling
// filter. MAXSCALEDCAPACITY is valkey-bloom's field, not RedisBloom's, and is never part of
// the whole reply.
func bfInfoCmd(c *Conn, args [][]byte) {
	bv := c.bloomOrError(args[1])
	if bv == nil {
		return
	}
	ch := bv.ch
	value := func(i int) {
		switch i {
		case 0:
			c.w.Int(int64(ch.Capacity()))
		case 1:
			c.w.Int(int64(ch.Size()))
		case 2:
			c.w.Int(int64(ch.NumFilters()))
		case 3:
			c.w.Int(int64(ch.Card()))
		default:
			if ch.NonScaling() {
				c.w.Null()
			} else {
				c.w.Int(int64(ch.Expansion()))
			}
		}
	}
	if len(args) == 3 && equalFold(args[2], "maxscaledcapacity") {
		// valkey-bloom's field: the capacity the filter can reach within bf-max-filter-bytes
		// (nil when there is no limit).
		if c.w.Proto == 3 {
			c.w.Map(1)
			c.w.Simple("Max scaled capacity")
		} else {
			c.w.Array(1)
		}
		if limit := c.srv.filters.Load().BFMaxBytes; limit > 0 {
			c.w.Int(int64(min(ch.CapacityWithin(uint64(limit)), math.MaxInt64)))
		} else {
			c.w.Null()
		}
		return
	}
	if len(args) == 3 {
		for i, f := range bfInfoFields {
			if equalFold(args[2], f.arg) {
				if c.w.Proto == 3 {
					c.w.Map(1)
					c.w.Simple(f.label)
				} else {
					c.w.Array(1)
				}
				value(i)
				return
			}
		}
		c.w.Error("Invalid information value")
		return
	}
	c.w.Map(len(bfInfoFields))
	for i, f := range bfInfoFields {
		c.w.Simple(f.label)
		value(i)
	}
}

func bfDebugCmd(c *Conn, args [][]byte) {
	bv := c.bloomOrError(args[1])
	if bv == nil {
		return
	}
	lines := bv.ch.Debug()
	c.w.Array(len(lines))
	for _, l := range lines {
		c.w.BulkString(l)
	}
}

func bfScanDumpCmd(c *Conn, args [][]byte) {
	bv := c.bloomOrError(args[1])
	if bv == nil {
		return
	}
	iter, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error("Second argument must be numeric")
		return
	}
	next, data := bv.ch.ScanDump(iter)
	c.w.Array(2)
	c.w.Int(next)
	c.w.Bulk(data)
}

// bfLoadChunkCmd implements BF.LOADCHUNK key iterator data: on a missing key with iterator 1 the
// data is a header and makes a filter with zeroed bits (charged to the memory limit before
// anything is allocated); on an existing filter it is a chunk of bits, which overwrites what adds
// set and so is written while no other command runs.
func bfLoadChunkCmd(c *Conn, args [][]byte) {
	iter, ok := resp.ParseInt(args[2])
	if !ok {
		c.w.Error("ERR Second argument must be numeric")
		return
	}
	if c.get(args[1]) != nil {
		c.runExclusive(func() { c.loadChunk(args, iter) })
		return
	}
	c.loadChunk(args, iter)
}

func (c *Conn) loadChunk(args [][]byte, iter int64) {
	key, data := args[1], args[3]
	s := c.srv
	sh, e := c.lockForCreate(key)
	if sh == nil {
		return
	}
	if e != nil {
		sh.mu.Unlock()
		bv, ok := e.val.(*bloomValue)
		switch {
		case !ok:
			c.w.Error(errWrongType)
		case !c.inExclusive:
			c.runExclusive(func() { c.loadChunk(args, iter) }) // created meanwhile
		default:
			if err := bv.ch.LoadChunk(iter, data); err != nil {
				c.w.Error(chunkErr(err))
				return
			}
			c.propagate(args)
			c.w.OK()
		}
		return
	}
	defer sh.mu.Unlock()
	if iter != 1 {
		c.w.Error(errNotFound)
		return
	}
	e, errMsg := s.newBloomEntry(key, true, func(o *redisbloom.Options) (*redisbloom.Chain, error) {
		return redisbloom.LoadHeader(data, o)
	})
	if e == nil {
		c.w.Error(errMsg)
		return
	}
	s.ks.insertLocked(sh, e)
	c.propagate(args)
	c.keyCreated(key)
	c.notify(evModule, "bloom.reserve", key)
	c.w.OK()
}

func chunkErr(err error) string {
	switch {
	case errors.Is(err, redisbloom.ErrNoLink):
		return "ERR invalid offset - no link found"
	case errors.Is(err, redisbloom.ErrChunkTooBig):
		return "ERR invalid chunk - Too big for current filter"
	case errors.Is(err, bloom.ErrCorrupt):
		return errBadData
	}
	return errBadData
}

// isSizeError reports whether err is a refusal by bf-max-filter-bytes or cf-max-filter-bytes.
func isSizeError(err error) bool {
	_, ok := errors.AsType[*filterconf.SizeError](err)
	return ok
}

// sizeErrorReply returns the error reply of a refusal by a size limit that err wraps.
func sizeErrorReply(err error) string {
	se, _ := errors.AsType[*filterconf.SizeError](err)
	return se.Error()
}

// satAdd returns a+b, at most math.MaxInt64.
func satAdd(a int64, b uint64) int64 {
	if b > uint64(math.MaxInt64-a) {
		return math.MaxInt64
	}
	return a + int64(b)
}
