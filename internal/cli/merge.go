package cli

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisbloom"
	"github.com/spf13/cobra"
)

func newMergeCmd(e *env) *cobra.Command {
	var from, to fileFormat
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "merge A B... -o OUT",
		Short: "Write the union of compatible filters",
		Long: `merge writes a filter that answers "maybe" for every item any input answers "maybe" for: the
bitwise OR of their bits. The inputs must be of one type, size, number of hash functions and
hashing scheme, as filters built with the same -n, -p and options are; anything else is
refused. Scalable filters and RedisBloom chains merge link by link, and the longer chain's
extra links are kept. A RedisBloom dump of one sub-filter merges with a native classic filter
hashed with redisbloom64; other native filters hash differently from RedisBloom and never
merge with its dumps.

The output has the format of the first input unless --to says otherwise. Counting filters
cannot be merged (adding counters is not what the library offers).`,
		Example: `  bloom merge monday.bloom tuesday.bloom -o week.bloom
  bloom merge --from guava a.guava b.guava -o ab.guava
  bloom merge shard-*.bfdump -o all.bfdump`,
		Args: argsUsage(2, -1, "bloom merge A B... -o OUT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("no output file: give -o OUT")
			}
			if err := checkOutput(out, force); err != nil {
				return err
			}
			var acc *filter
			for _, path := range args {
				f, err := readFilter(path, from, e.stdin)
				if err != nil {
					return err
				}
				if acc == nil {
					acc = f
					continue
				}
				if err := acc.union(f); err != nil {
					return fmt.Errorf("cannot merge %s into %s: %w", path, args[0], err)
				}
			}
			if to == formatAuto {
				to = acc.format
			}
			if err := writeFilter(e, out, acc, to, force); err != nil {
				return err
			}
			if out != "-" {
				d := acc.describe()
				fmt.Fprintf(e.stdout, "wrote %s: %s %s filter, about %s, fpp now %s\n", out, to, d.Kind, plural(d.Count, "item"), formatRate(d.FPP))
			}
			return nil
		},
	}
	cmd.Flags().Var(&from, "from", fromHelp)
	cmd.Flags().Var(&to, "to", "output format: native, guava or redisbloom (default: the first input's)")
	cmd.Flags().StringVarP(&out, "output", "o", "", `file to write ("-" for stdout)`)
	cmd.Flags().BoolVar(&force, "force", false, forceHelp)
	return cmd
}

// union adds every item of g to f. The first filter read is modified in place; it came from a
// file and nothing else holds it.
func (f *filter) union(g *filter) error {
	if (f.chain != nil) != (g.chain != nil) {
		// A classic filter hashed as RedisBloom hashes has the bits of a one-link chain: the
		// chain becomes a native filter and the two merge as native filters. Any other native
		// filter sets other bits for the same item than a chain does, so no conversion can
		// make the two merge.
		native, chain := f, g
		if f.chain != nil {
			native, chain = g, f
		}
		const never = "an item sets different bits in each, so they can never be merged, in any format; build both from the items the same way (bloom build --format redisbloom)"
		switch cf, ok := native.native.(*bloom.Filter); {
		case !ok:
			return fmt.Errorf("one is a RedisBloom chain and the other a native %s filter, which sizes and hashes its bits its own way: %s", native.native.Info().Kind, never)
		case cf.Scheme() != bloom.RedisBloom64:
			return fmt.Errorf("one is a RedisBloom chain, hashed with MurmurHash64A (redisbloom64), and the other a native classic filter hashed with %s: %s", cf.Scheme(), never)
		}
		nf, err := chain.toNative()
		if err != nil {
			return err
		}
		chain.native, chain.chain = nf, nil
	}
	if f.chain != nil {
		c, err := unionChains(f.chain, g.chain)
		if err != nil {
			return err
		}
		f.chain = c
		return nil
	}
	fk, gk := f.native.Info().Kind, g.native.Info().Kind
	if fk != gk {
		return fmt.Errorf("it is a %s filter and the first a %s one; only filters of one type merge", gk, fk)
	}
	var err error
	switch a := f.native.(type) {
	case *bloom.Filter:
		err = a.Union(g.native.(*bloom.Filter))
	case *bloom.Blocked:
		err = a.Union(g.native.(*bloom.Blocked))
	case *bloom.Scalable:
		err = a.Union(g.native.(*bloom.Scalable))
	case *bloom.Counting:
		return fmt.Errorf("counting filters cannot be merged: their counters would have to be added, which this version does not do")
	}
	if err != nil {
		return fmt.Errorf("%v; merge only filters built with the same -n, -p, --type and --scheme", err)
	}
	return nil
}

// unionChains returns the union of two RedisBloom chains whose common links have the same
// sizes: their bits ORed, the longer chain's extra links kept. Each link's item count becomes
// the largest of the two counts and the estimate from its merged bits, capped at its capacity,
// so that the chain grows no later than it should.
func unionChains(a, b *redisbloom.Chain) (*redisbloom.Chain, error) {
	if a.NonScaling() != b.NonScaling() || a.Expansion() != b.Expansion() {
		return nil, fmt.Errorf("the chains differ in growth (expansion %d, non-scaling %v, against %d, %v); merge only filters made with the same options",
			b.Expansion(), b.NonScaling(), a.Expansion(), a.NonScaling())
	}
	la, lb := a.Links(), b.Links()
	for i := range min(len(la), len(lb)) {
		x, y := la[i], lb[i]
		if x.Bytes != y.Bytes || x.Hashes != y.Hashes || x.Capacity != y.Capacity || x.ErrorRate != y.ErrorRate {
			return nil, fmt.Errorf("sub-filter %d differs (%d bytes, k=%d, capacity %d against %d bytes, k=%d, capacity %d); merge only filters made with the same capacity and error rate",
				i, y.Bytes, y.Hashes, y.Capacity, x.Bytes, x.Hashes, x.Capacity)
		}
	}
	long, short := a, b
	if len(lb) > len(la) {
		long, short = b, a
	}
	header := long.Header()
	out, err := redisbloom.LoadHeader(header, nil)
	if err != nil {
		return nil, err
	}
	for _, c := range []*redisbloom.Chain{long, short} {
		for it, data := range c.Chunks() {
			if it == 1 {
				continue
			}
			start := it - int64(len(data))
			if c == short {
				_, cur := out.ScanDump(start)
				if len(cur) < len(data) {
					return nil, fmt.Errorf("the chains' chunks do not line up") // same sizes make this unreachable
				}
				merged := make([]byte, len(data))
				for i := range data {
					merged[i] = data[i] | cur[i]
				}
				data = merged
			}
			if err := out.LoadChunk(it, data); err != nil {
				return nil, err
			}
		}
	}
	// Recount: the merged bits give an estimate per link.
	set := make([]uint64, len(long.Links()))
	links := long.Links()
	var linkStart int64 = 1
	li := 0
	for it, data := range out.Chunks() {
		if it == 1 {
			continue
		}
		start := it - int64(len(data))
		for li < len(links)-1 && start >= linkStart+int64(links[li].Bytes) {
			linkStart += int64(links[li].Bytes)
			li++
		}
		set[li] += popcount(data)
	}
	le := binary.LittleEndian
	var total uint64
	for i, l := range links {
		m := float64(l.Bytes * 8)
		est := uint64(math.Round(-m / float64(l.Hashes) * math.Log1p(-min(float64(set[i]), m-0.5)/m)))
		items := l.Items
		if i < len(la) && i < len(lb) {
			items = max(la[i].Items, lb[i].Items, est)
		}
		items = min(items, l.Capacity)
		le.PutUint64(header[20+53*i+16:], items)
		total += items
	}
	le.PutUint64(header[0:], total)
	final, err := redisbloom.LoadHeader(header, nil)
	if err != nil {
		return nil, err
	}
	for it, data := range out.Chunks() {
		if it == 1 {
			continue
		}
		if err := final.LoadChunk(it, data); err != nil {
			return nil, err
		}
	}
	return final, nil
}
