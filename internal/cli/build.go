package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisbloom"
	"github.com/spf13/cobra"
)

// buildOptions are the flags of bloom build.
type buildOptions struct {
	n, p     string
	typ      string
	format   fileFormat
	scheme   string
	growth   int
	keys     keyFormat
	out      string
	force    bool
	progress progressFlags
}

func newBuildCmd(e *env) *cobra.Command {
	o := buildOptions{p: "0.01", typ: "classic", format: formatNative, growth: 2}
	cmd := &cobra.Command{
		Use:   "build -n N [-p P] -o FILE [INPUT...]",
		Short: "Build a filter from items, one per line",
		Long: `build makes a filter for n items at false-positive rate p and adds every line of the
inputs to it: files, or standard input when none is given or for "-". Files compressed with
gzip are recognised and decompressed. Every line is an item (an empty line too); a trailing
\r is dropped.

Types: classic (Guava's layout), blocked (every probe in one cache line: faster, and larger
by a share that grows as p falls: about 8% at p = 1%, 19% at 0.1%, 30% at 0.001%; bloom calc
shows both for your n and p), scalable (a chain that grows past n, keeping its rate under p; -n sizes the first
link) and counting (4-bit counters, four times the memory, allows removal).

Formats: native (any type, checksummed), guava (classic only: BloomFilter.readFrom reads it)
and redisbloom (classic or scalable: a BF.SCANDUMP dump for bloom push, sized and hashed as
BF.RESERVE; a classic one is NONSCALING and refuses items past n).

A progress bar with rate and time left is drawn on stderr when it is a terminal. At the end
build reports how many items were new and how many tested present already (duplicates, or
false positives). The file is written only once every item is in: an error or an interrupt
leaves no half-written filter.`,
		Example: `  bloom build -n 1e6 -p 0.01 -o users.bloom users.txt
  zcat phones-*.gz | bloom build -n 100M -p 0.001 --keys int64 -o phones.bloom
  bloom build -n 1e6 --format guava -o users.guava users.txt.gz
  bloom build -n 100k --type scalable --format redisbloom -o seen.bfdump seen.txt`,
		Args: argsUsage(0, -1, "bloom build -n N [-p P] -o FILE [INPUT...]"),
		RunE: func(cmd *cobra.Command, args []string) error { return runBuild(cmd.Context(), e, o, args) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.n, "items", "n", "", "number of items expected (for scalable filters, of the first link)")
	f.StringVarP(&o.p, "rate", "p", o.p, "false-positive rate, in (0, 1)")
	f.StringVar(&o.typ, "type", o.typ, "filter type: classic, blocked, scalable or counting")
	f.Var(&o.format, "format", "file format: native, guava or redisbloom")
	f.StringVar(&o.scheme, "scheme", "", "hashing scheme for classic and counting filters: guava64, guava32, redisbloom64 or redisson (default guava64)")
	f.IntVar(&o.growth, "growth", o.growth, "scalable filters: capacity factor from one link to the next (RedisBloom's EXPANSION)")
	f.Var(&o.keys, "keys", keysHelp)
	f.StringVarP(&o.out, "output", "o", "", `file to write ("-" for stdout)`)
	f.BoolVar(&o.force, "force", false, forceHelp)
	o.progress.register(cmd)
	return cmd
}

func runBuild(ctx context.Context, e *env, o buildOptions, args []string) error {
	if err := o.progress.check(); err != nil {
		return err
	}
	if o.out == "" {
		return fmt.Errorf("no output file: give -o FILE (or -o - for stdout)")
	}
	if err := checkOutput(o.out, o.force); err != nil {
		return err // before reading any input
	}
	if o.n == "" {
		return fmt.Errorf("-n is required: the number of items the filter will hold (e.g. -n 1e6); bloom calc shows what it costs")
	}
	n, err := parseCount(o.n)
	if err != nil {
		return fmt.Errorf("-n: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("-n: a filter for 0 items is useless; give the number of items it will hold")
	}
	p, err := parseRate(o.p)
	if err != nil {
		return fmt.Errorf("-p: %w", err)
	}
	f, err := newFilter(o, n, p)
	if err != nil {
		return err
	}
	in := newInputs(args, e.stdin)
	var items, added atomic.Uint64
	var prog *progress
	if o.progress.enabled(e) {
		prog = startProgress(e.stderr, "adding", in.size(), in.bytesRead, items.Load)
	}
	err = addAll(ctx, f, in, o.keys, &items, &added)
	prog.finish()
	if err != nil {
		return err
	}
	if err := writeFilter(e, o.out, f, o.format, o.force); err != nil {
		return err
	}
	report := e.stdout
	if o.out == "-" {
		report = e.stderr
	}
	total, fresh := items.Load(), added.Load()
	d := f.describe()
	fmt.Fprintf(report, "wrote %s: %s %s filter, %s, k=%d\n", o.out, o.format, d.Kind, sizeString(d.Bits), d.K)
	fmt.Fprintf(report, "%s: %s new, %s already present (duplicates or false positives)\n",
		plural(total, "item"), group(fresh), group(total-fresh))
	if d.Links == 0 && fresh > n {
		fmt.Fprintf(report, "warning: %s new items exceed -n %s: the false-positive rate is now about %s, not %s; rebuild with a larger -n, or with --type scalable\n",
			group(fresh), group(n), formatRate(d.FPP), formatRate(p))
	}
	return nil
}

// newFilter makes the empty filter that build fills.
func newFilter(o buildOptions, n uint64, p float64) (*filter, error) {
	scheme := bloom.Guava64
	if o.scheme != "" {
		s, err := bloom.ParseScheme(o.scheme)
		if err != nil {
			return nil, fmt.Errorf("--scheme %s is unknown: want guava64, guava32, redisbloom64 or redisson", quote(o.scheme))
		}
		scheme = s
		if o.typ != "classic" && o.typ != "counting" {
			return nil, fmt.Errorf("--scheme applies to classic and counting filters; a %s filter hashes as guava64", o.typ)
		}
	}
	if o.growth < 1 {
		return nil, fmt.Errorf("--growth %d: give a factor of at least 1 (2 doubles each new link)", o.growth)
	}
	f := &filter{format: o.format}
	var err error
	switch o.format {
	case formatGuava:
		if o.typ != "classic" {
			return nil, fmt.Errorf("--format guava holds only classic filters, not %s ones; use --type classic or --format native", o.typ)
		}
		if scheme != bloom.Guava64 && scheme != bloom.Guava32 {
			return nil, fmt.Errorf("--format guava needs --scheme guava64 or guava32; Guava does not hash with %s", scheme)
		}
	case formatRedisBloom:
		if o.typ != "classic" && o.typ != "scalable" {
			return nil, fmt.Errorf("--format redisbloom holds classic and scalable filters, not %s ones; use --format native", o.typ)
		}
		if o.scheme != "" && scheme != bloom.RedisBloom64 {
			return nil, fmt.Errorf("--format redisbloom hashes with redisbloom64, not %s; drop --scheme", scheme)
		}
		f.chain, err = redisbloom.NewChain(n, p, uint32(o.growth), o.typ == "classic", nil)
		return f, sizeError(err, n, p)
	}
	switch o.typ {
	case "classic", "counting":
		var m uint64
		var k int
		switch scheme {
		case bloom.RedisBloom64:
			m, k, _, err = bloom.RedisBloomSize(n, p)
		case bloom.Redisson:
			if m, err = bloom.OptimalBits(n, p); err == nil {
				k = bloom.OptimalK(n, m)
			}
		default:
			m, k, err = bloom.GuavaSize(n, p)
		}
		if err != nil {
			return nil, sizeError(err, n, p)
		}
		if o.typ == "classic" {
			f.native, err = bloom.NewWithParams(m, k, scheme)
		} else {
			f.native, err = bloom.NewCountingWithParams(m, k, scheme)
		}
	case "blocked":
		f.native, err = bloom.NewBlocked(n, p)
	case "scalable":
		f.native, err = bloom.NewScalable(n, p, &bloom.ScalableOptions{Growth: o.growth})
	default:
		return nil, fmt.Errorf("--type %s is unknown: want classic, blocked, scalable or counting", quote(o.typ))
	}
	return f, sizeError(err, n, p)
}

// sizeError explains a failure to make a filter for n items at rate p.
func sizeError(err error, n uint64, p float64) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bloom.ErrTooLarge):
		return fmt.Errorf("a filter for %s at %s does not fit: %v; lower -n, raise -p, or use a machine with more memory (bloom calc shows sizes)", plural(n, "item"), formatRate(p), err)
	}
	return fmt.Errorf("cannot make a filter for %s at %s: %v", plural(n, "item"), formatRate(p), err)
}

// batch is a slice of keys read from the inputs, packed in one buffer.
type batch struct {
	arena []byte
	ends  []int
	keys  [][]byte
	err   error
}

const (
	batchKeys  = 4096
	batchBytes = 1 << 20
)

// addAll adds every line of in to f, reading and parsing on one goroutine while another adds,
// and counts the items and the new ones. It stops at the first bad line, with its place.
func addAll(ctx context.Context, f *filter, in *inputs, kf keyFormat, items, added *atomic.Uint64) error {
	full := make(chan *batch, 2)
	free := make(chan *batch, 3)
	for range 3 {
		free <- &batch{arena: make([]byte, 0, batchBytes), ends: make([]int, 0, batchKeys)}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // reader
		defer wg.Done()
		defer close(full)
		for {
			var b *batch
			select {
			case b = <-free:
			case <-stop:
				return
			}
			b.arena, b.ends, b.err = b.arena[:0], b.ends[:0], nil
			for len(b.ends) < batchKeys && len(b.arena) < batchBytes {
				line, err := in.next()
				if err == io.EOF {
					break
				}
				if err == nil {
					b.arena, err = kf.appendKey(b.arena, line)
					if err != nil {
						err = fmt.Errorf("%s: %w", in.where(), err)
					}
				}
				if err != nil {
					b.err = err
					break
				}
				b.ends = append(b.ends, len(b.arena))
			}
			if len(b.ends) == 0 && b.err == nil {
				return
			}
			full <- b
			if b.err != nil || len(b.ends) < batchKeys && len(b.arena) < batchBytes {
				return
			}
		}
	}()
	defer func() {
		close(stop)
		for range full { // let the reader finish
		}
		wg.Wait()
		in.close()
	}()
	var dst []bool
	for b := range full {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.keys = b.keys[:0]
		start := 0
		for _, end := range b.ends {
			b.keys = append(b.keys, b.arena[start:end:end])
			start = end
		}
		var n uint64
		var err error
		dst, n, err = f.addMany(dst, b.keys)
		added.Add(n)
		if err != nil {
			if errors.Is(err, redisbloom.ErrFull) {
				return fmt.Errorf("the filter is full after %s: RedisBloom's non-scaling filters refuse items past their capacity; give a larger -n, or --type scalable to let it grow", plural(added.Load(), "new item"))
			}
			return fmt.Errorf("adding items: %w", err)
		}
		items.Add(uint64(len(b.keys)))
		if b.err != nil {
			return b.err
		}
		free <- b
	}
	return ctx.Err()
}
