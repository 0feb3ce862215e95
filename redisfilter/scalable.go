package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"

	"github.com/bloomd/bloom"
	"github.com/redis/go-redis/v9"
)

// Scalable filters mirror bloom.Scalable: link i holds n·2^i keys at false-positive rate
// p·(1−r)·r^i with r = 0.5 (never below 1e-12), so the compound rate stays below p; like
// bloom.Scalable's classic links, each link is sized for 0.97 times its rate, a 3% margin. The
// margin is part of the stored parameters, so a change of this rule cannot pass unnoticed.
const (
	scalableGrowth     = 2
	scalableTightening = 0.5
	scalableMargin     = 0.97
	minLinkRate        = 1e-12
	maxChainLinks      = 64
)

// ScalableFilter is a scalable Bloom filter kept in Redis: a chain of bitmaps ("links") that
// grows as keys arrive, like bloom.Scalable and RedisBloom's BF.* filters. Link i holds n·2^i
// keys at rate p·0.5^(i+1), sized by opt.Scheme's rule with bloom.Scalable's 3% margin, so the
// compound false-positive rate stays below p however many keys arrive. With the default scheme it
// answers every Add and Test exactly as a bloom.Scalable given the same keys in the same order.
//
// Whether to grow is decided inside the add script, atomically with the add: a key that no link
// reports present goes to the newest link, and when that link already holds its capacity the
// script appends a new one first. The client computes each key's positions in every link it
// knows plus the next one; if another client has grown the chain further, the script answers
// with what it did so far and the chain's length, and the client resends the rest (one extra
// round trip, once per growth it missed). A link is one Redis key, so a link never exceeds
// opt.PartBits (MaxPartBits by default); when the next link would, the chain stops growing and
// further keys go to the newest link beyond its capacity, raising the false-positive rate above p
// as bloom.Scalable does when it cannot grow.
//
// The keys are "{name}:meta" (the parameter line, the number of links and each link's count) and
// "{name}:bits:0", "{name}:bits:1", ...; they share one hash slot, so the whole chain lives on one
// Cluster node. A ScalableFilter is safe for concurrent use by multiple goroutines.
type ScalableFilter struct {
	client redis.UniversalClient
	name   string
	scheme bloom.Scheme
	n      uint64
	p      float64
	meta   string
	line   string
	links  []chainLink  // every link the chain may ever have
	known  atomic.Int64 // links the chain had at the last reply
	opt    Options
}

type chainLink struct {
	key      string
	capacity uint64
	m        uint64
	k        int
}

// NewScalable returns a handle to the scalable filter called name, whose first link holds n keys
// at rate p/2, creating it if it does not exist; if it exists with other parameters, NewScalable
// fails with ErrConfigMismatch. opt.PartBits bounds the size of one link.
func NewScalable(ctx context.Context, c redis.UniversalClient, name string, n uint64, p float64, opt *Options) (*ScalableFilter, error) {
	if err := checkClient(c); err != nil {
		return nil, err
	}
	o, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	s, err := newScalable(c, name, o, n, p, maxChainLinks)
	if err != nil {
		return nil, err
	}
	if _, err := s.do(ctx, "new", "i", nil); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenScalable returns a handle to the existing scalable filter called name, with its stored
// parameters. It fails with ErrNotFound if there is none.
func OpenScalable(ctx context.Context, c redis.UniversalClient, name string, opt *Options) (*ScalableFilter, error) {
	if err := checkClient(c); err != nil {
		return nil, err
	}
	o, err := opt.resolve()
	if err != nil {
		return nil, err
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	line, err := c.HGet(ctx, "{"+name+"}:meta", "params").Result()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: no filter %q ({%s}:meta does not exist)", ErrNotFound, name, name)
	}
	if err != nil {
		return nil, opErr("open", name, err)
	}
	return parseScalable(c, name, line, o)
}

// parseScalable builds a handle from a stored parameter line, which must be one this package
// writes, byte for byte, for the parameters it states.
func parseScalable(c redis.UniversalClient, name, line string, o Options) (*ScalableFilter, error) {
	fields, err := expectKind(name, line, "scalable")
	if err != nil {
		return nil, err
	}
	sv, _ := lookup(fields, "scheme")
	nv, _ := lookup(fields, "n")
	pv, _ := lookup(fields, "p")
	lv, _ := lookup(fields, "maxlinks")
	scheme, serr := bloom.ParseScheme(sv)
	n, nerr := strconv.ParseUint(nv, 10, 64)
	p, perr := strconv.ParseFloat(pv, 64)
	limit, lerr := strconv.Atoi(lv)
	if serr != nil || nerr != nil || perr != nil || lerr != nil || limit < 1 || limit > maxChainLinks {
		return nil, fmt.Errorf("%w: filter %q has parameters this package cannot use: %q", ErrConfigMismatch, name, line)
	}
	o.Scheme, o.PartBits = scheme, MaxPartBits
	s, err := newScalable(c, name, o, n, p, limit)
	if err != nil {
		return nil, fmt.Errorf("%w: filter %q has parameters this package cannot use: %q: %w", ErrConfigMismatch, name, line, err)
	}
	if s.line != line {
		return nil, fmt.Errorf("%w: filter %q: %s", ErrConfigMismatch, name, describeMismatch(line, s.line))
	}
	return s, nil
}

// newScalable sizes the links of a chain: at most limit links, none larger than o.PartBits.
func newScalable(c redis.UniversalClient, name string, o Options, n uint64, p float64, limit int) (*ScalableFilter, error) {
	n = max(n, 1)
	if !(p > 0 && p < 1) {
		return nil, fmt.Errorf("%w: false-positive rate %g is not in (0, 1)", ErrInvalid, p)
	}
	s := &ScalableFilter{client: c, name: name, scheme: o.Scheme, n: n, p: p, meta: "{" + name + "}:meta", opt: o}
	capacity := n
	for i := range limit {
		rate := max(p*(1-scalableTightening)*math.Pow(scalableTightening, float64(i)), minLinkRate)
		m, k, err := size(s.scheme, capacity, rate*scalableMargin)
		if err != nil || m > o.PartBits {
			if i == 0 {
				if err == nil {
					err = fmt.Errorf("%w: the first link needs %d bits, more than PartBits (%d)", ErrInvalid, m, o.PartBits)
				}
				return nil, err
			}
			break
		}
		s.links = append(s.links, chainLink{key: "{" + name + "}:bits:" + strconv.Itoa(i), capacity: capacity, m: m, k: k})
		if capacity > math.MaxUint64/scalableGrowth {
			break
		}
		capacity *= scalableGrowth
	}
	// The number of links is part of the parameters: handles that disagree on where the chain
	// stops growing would otherwise disagree on where keys go.
	s.line = paramLine(field{"kind", "scalable"}, field{"scheme", s.scheme.String()}, field{"n", u64(n)},
		field{"p", formatRate(p)}, field{"growth", strconv.Itoa(scalableGrowth)},
		field{"tightening", formatRate(scalableTightening)}, field{"margin", formatRate(scalableMargin)},
		field{"maxlinks", strconv.Itoa(len(s.links))})
	return s, nil
}

// Add adds key unless some link reports it present, and reports whether it did: true means the
// key was definitely new. One round trip, unless the chain has grown since this handle last
// looked.
func (s *ScalableFilter) Add(ctx context.Context, key []byte) (bool, error) {
	r, err := s.do(ctx, "add", "a", [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// Test reports whether key may be in the filter: false means it was definitely never added.
func (s *ScalableFilter) Test(ctx context.Context, key []byte) (bool, error) {
	r, err := s.do(ctx, "test", "t", [][]byte{key})
	if err != nil {
		return false, err
	}
	return r[0], nil
}

// AddMany adds keys in one pipelined round trip per PipelineKeys keys, plus one round trip per
// growth of the chain that the batch itself causes beyond the next link.
func (s *ScalableFilter) AddMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return s.do(ctx, "add", "a", keys)
}

// TestMany tests keys in one pipelined round trip per PipelineKeys keys.
func (s *ScalableFilter) TestMany(ctx context.Context, keys [][]byte) ([]bool, error) {
	return s.do(ctx, "test", "t", keys)
}

// do runs op over keys. Keys the script could not finish (the chain needs a link this request did
// not carry) are sent again with the chain's new length; each retry follows a growth, and the
// chain has at most len(s.links) links, so the loop ends.
func (s *ScalableFilter) do(ctx context.Context, opName, op string, keys [][]byte) ([]bool, error) {
	out := make([]bool, len(keys))
	pending := make([]int, len(keys))
	for i := range pending {
		pending[i] = i
	}
	initOnly := op == "i"
	for round := 0; initOnly || len(pending) > 0; round++ {
		if round > len(s.links)+2 {
			return nil, fmt.Errorf("redisfilter: %s %q: the chain kept changing under %d retries", opName, s.name, round)
		}
		end := min(len(pending), s.opt.PipelineKeys)
		batch := pending[:end]
		known := int(s.known.Load())
		send := max(known, 1)
		if op == "a" {
			send = min(known+1, len(s.links))
		}
		if initOnly {
			send = 1 // the script checks that link 0 does not exist without parameters
		}
		calls := s.calls(op, keys, batch, send)
		run(ctx, s.client, calls)
		var again []int
		for _, cl := range calls {
			v, err := cl.cmd.Result()
			if err != nil {
				return nil, callErr(opName, s.name, cl, err)
			}
			res, links, err := chainReply(v, len(cl.idx))
			if err != nil {
				return nil, opErr(opName, s.name, err)
			}
			if links > len(s.links) {
				return nil, fmt.Errorf("%w: %s %q: the chain has %d links; these parameters allow %d", ErrConfigMismatch, opName, s.name, links, len(s.links))
			}
			for {
				old := s.known.Load()
				if int64(links) <= old || s.known.CompareAndSwap(old, int64(links)) {
					break
				}
			}
			for j, i := range cl.idx {
				if j < len(res) {
					out[i] = res[j] == '1'
				} else {
					again = append(again, i)
				}
			}
		}
		if initOnly {
			return out, nil
		}
		pending = append(again, pending[end:]...)
	}
	return out, nil
}

// calls builds the script calls for the keys at batch indexes, sending the first send links.
func (s *ScalableFilter) calls(op string, keys [][]byte, batch []int, send int) []*call {
	head := []any{s.line, op, 0, send, len(s.links)}
	for _, l := range s.links[:send] {
		head = append(head, l.capacity)
	}
	for _, l := range s.links[:send] {
		head = append(head, l.k)
	}
	skeys := []string{s.meta}
	for _, l := range s.links[:send] {
		skeys = append(skeys, l.key)
	}
	if len(batch) == 0 {
		return []*call{{script: chainScript, keys: skeys, args: head, want: s.line}}
	}
	var calls []*call
	var pos []uint64
	for st := 0; st < len(batch); st += s.opt.ScriptKeys {
		e := min(st+s.opt.ScriptKeys, len(batch))
		cl := &call{script: chainScript, keys: skeys, want: s.line, idx: batch[st:e]}
		cl.args = append([]any(nil), head...)
		cl.args[2] = e - st
		for _, i := range batch[st:e] {
			h1, h2 := s.scheme.Hash(keys[i])
			for _, l := range s.links[:send] {
				pos = pos[:0]
				for q := range l.k {
					pos = append(pos, s.scheme.Location(h1, h2, q, l.m))
				}
				for _, b := range pos {
					cl.args = append(cl.args, b^7) // the native layout's bit order, as in Filter
				}
			}
		}
		calls = append(calls, cl)
	}
	return calls
}

// chainReply decodes the scalable script's {results, links} reply.
func chainReply(v any, max int) (string, int, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		return "", 0, fmt.Errorf("unexpected script reply %T %.40v", v, v)
	}
	res, ok1 := arr[0].(string)
	links, ok2 := arr[1].(int64)
	if !ok1 || !ok2 || len(res) > max || links < 0 {
		return "", 0, fmt.Errorf("unexpected script reply %.60v", v)
	}
	if _, err := bitsReply(res, len(res)); err != nil {
		return "", 0, err
	}
	return res, int(links), nil
}

// Count returns the number of keys Add reported new (RedisBloom's BF.CARD), from the per-link
// counts stored beside the chain. One round trip.
func (s *ScalableFilter) Count(ctx context.Context) (uint64, error) {
	vals, err := s.client.HGetAll(ctx, s.meta).Result()
	if err != nil {
		return 0, opErr("count", s.name, err)
	}
	var total uint64
	for i := range s.links {
		v, ok := vals["c"+strconv.Itoa(i)]
		if !ok {
			break
		}
		c, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: count %q: unreadable link count %q", ErrConfigMismatch, s.name, v)
		}
		total += c
	}
	return total, nil
}

// Links returns the number of links the chain has now. One round trip.
func (s *ScalableFilter) Links(ctx context.Context) (int, error) {
	v, err := s.client.HGet(ctx, s.meta, "links").Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, opErr("links", s.name, err)
	}
	return v, nil
}

// Name returns the filter's name.
func (s *ScalableFilter) Name() string { return s.name }

// Keys returns the Redis keys the chain may use: the parameter hash and every possible link.
func (s *ScalableFilter) Keys() []string {
	keys := []string{s.meta}
	for _, l := range s.links {
		keys = append(keys, l.key)
	}
	return keys
}

// Delete removes the chain's keys, one round trip.
func (s *ScalableFilter) Delete(ctx context.Context) error {
	if err := s.client.Del(ctx, s.Keys()...).Err(); err != nil {
		return opErr("delete", s.name, err)
	}
	s.known.Store(0)
	return nil
}
