package cli

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/guava"
	"github.com/bloomd/bloom/redisbloom"
)

// Filter files come in three formats. The native format and RedisBloom dump files start with a
// magic number and are recognised by it; Guava's writeTo stream has none, so reading one takes
// --from guava.
type fileFormat int

const (
	formatAuto       fileFormat = iota // detect by magic (reading only)
	formatNative                       // bloom's own format: any kind, checksummed
	formatGuava                        // Guava's BloomFilter.writeTo stream: classic, guava64/guava32
	formatRedisBloom                   // a BF.SCANDUMP dump file: RedisBloom's scalable chain
)

var formatNames = []string{"auto", "native", "guava", "redisbloom"}

func (f fileFormat) String() string { return formatNames[f] }

// Set implements pflag.Value.
func (f *fileFormat) Set(s string) error {
	for i, n := range formatNames {
		if s == n && i != int(formatAuto) {
			*f = fileFormat(i)
			return nil
		}
	}
	return fmt.Errorf("unknown format %s: want native, guava or redisbloom", quote(s))
}

// Type implements pflag.Value.
func (f *fileFormat) Type() string { return "native|guava|redisbloom" }

const fromHelp = "format of the filter file: native or redisbloom (detected by their magic when not given) or guava (Guava's writeTo stream has no magic, so it must be named)"

const (
	nativeMagic     = "\x89BLOOM\r\n"
	redisBloomMagic = "\x89BFDUMP\n"
)

// filter is a filter of any kind in memory: a native one (classic, blocked, scalable, counting)
// or a RedisBloom chain, which has its own sizing and growth and so no native equivalent.
type filter struct {
	native bloom.AnyFilter
	chain  *redisbloom.Chain
	format fileFormat // the format it was read in or is built for
}

// readFilter reads the filter in the named file ("-" is stdin) in the given format, or in the
// format its magic names for formatAuto. The whole file must be one filter: trailing bytes are
// refused as corruption, and nothing is returned with an error.
func readFilter(path string, from fileFormat, stdin io.Reader) (*filter, error) {
	var r io.Reader
	name := path
	if path == "-" {
		r, name = stdin, "stdin"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("cannot read the filter: %w", pathError(err))
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory, not a filter file", path)
		}
		r = f
	}
	br := bufio.NewReaderSize(r, 1<<20)
	magic, _ := br.Peek(8)
	detected := formatAuto
	switch {
	case string(magic) == nativeMagic:
		detected = formatNative
	case string(magic) == redisBloomMagic:
		detected = formatRedisBloom
	}
	switch {
	case from == formatAuto && detected == formatAuto:
		if len(magic) == 0 {
			return nil, fmt.Errorf("%s is empty, not a filter file", name)
		}
		if len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b {
			return nil, fmt.Errorf("%s is gzip-compressed; decompress it first (gunzip)", name)
		}
		return nil, fmt.Errorf("%s: no magic: not a native or RedisBloom dump file; if this is a Guava writeTo stream, pass --from guava", name)
	case from == formatAuto:
		from = detected
	case from == formatGuava && detected != formatAuto:
		return nil, fmt.Errorf("%s is a %s file, not a Guava stream; drop --from guava", name, detected)
	case from == formatGuava:
	case from != detected:
		what := "has no magic"
		if detected != formatAuto {
			what = "is a " + detected.String() + " file"
		}
		return nil, fmt.Errorf("%s %s, not a %s one; drop --from, or pass --from guava for a Guava writeTo stream", name, what, from)
	}
	f := &filter{format: from}
	var err error
	switch from {
	case formatNative:
		f.native, err = bloom.Decode(br)
	case formatGuava:
		f.native, err = guava.ReadFrom(br)
	case formatRedisBloom:
		f.chain, err = redisbloom.ReadDump(br, nil)
	}
	if err == nil {
		if extra, _ := br.Peek(1); len(extra) > 0 {
			err = fmt.Errorf("%w: unexpected bytes after the filter", bloom.ErrCorrupt)
		}
	}
	if err != nil {
		return nil, fileError(name, from, err)
	}
	return f, nil
}

// fileError explains a decoding failure of a filter file.
func fileError(name string, format fileFormat, err error) error {
	switch {
	case errors.Is(err, bloom.ErrCorrupt):
		hint := "the file is damaged or truncated; rebuild it or fetch it again"
		if format == formatGuava {
			hint = "is it really a Guava writeTo stream?"
		}
		return fmt.Errorf("%s: refused as a %s file: %v (%s)", name, format, err, hint)
	case errors.Is(err, bloom.ErrTooLarge):
		return fmt.Errorf("%s: %v", name, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// forceHelp is the usage of the --force flag of every command that writes a filter file.
const forceHelp = "replace the output file if it exists"

// checkOutput refuses to replace an existing file at path unless force is set: the one rule of
// every command that writes a filter, files (build, convert, merge, pull) and keys (push) alike.
func checkOutput(path string, force bool) error {
	if path == "-" || force {
		return nil
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s already exists; pass --force to replace it", path)
	}
	return nil
}

// writeFilter writes f to path in the given format, atomically: it writes a temporary file in
// the same directory and renames it over path only once everything is written and synced, so an
// error or an interrupt never leaves a half-written filter. "-" writes to stdout, which must
// not be a terminal.
func writeFilter(e *env, path string, f *filter, to fileFormat, force bool) error {
	if err := checkOutput(path, force); err != nil {
		return err
	}
	write, err := f.encoder(to)
	if err != nil {
		return err
	}
	if path == "-" {
		if e.stdoutTTY {
			return fmt.Errorf("not writing a binary filter to a terminal; give -o FILE or redirect stdout")
		}
		bw := bufio.NewWriterSize(e.stdout, 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		// Name the user's path, not the temporary file's (whose directory is the same).
		if fi, serr := os.Stat(dir); serr != nil || !fi.IsDir() {
			return fmt.Errorf("cannot write %s: the directory %s does not exist", path, dir)
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	bw := bufio.NewWriterSize(tmp, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil { // make the rename durable
		d.Sync()
		d.Close()
	}
	return nil
}

// encoder returns a function that writes f in format to, or the reason the format cannot hold f.
func (f *filter) encoder(to fileFormat) (func(io.Writer) error, error) {
	switch to {
	case formatNative:
		nf, err := f.toNative()
		if err != nil {
			return nil, err
		}
		return func(w io.Writer) error { _, err := nf.WriteTo(w); return err }, nil
	case formatGuava:
		cf, ok := f.native.(*bloom.Filter)
		switch {
		case f.chain != nil:
			return nil, fmt.Errorf("a RedisBloom filter cannot be written as a Guava stream: it hashes with MurmurHash64A, which Guava does not know; rebuild it from the items with bloom build --format guava")
		case !ok:
			return nil, fmt.Errorf("a %s filter cannot be written as a Guava stream, which holds only classic filters; keep it native, or rebuild it from the items with bloom build --type classic --format guava", f.native.Info().Kind)
		case cf.Scheme() != bloom.Guava64 && cf.Scheme() != bloom.Guava32:
			return nil, fmt.Errorf("a filter hashed with %s cannot be written as a Guava stream: Guava hashes with guava64 or guava32, and bits cannot be rehashed without the items; rebuild it with bloom build --format guava", cf.Scheme())
		}
		return func(w io.Writer) error { _, err := guava.WriteTo(w, cf); return err }, nil
	case formatRedisBloom:
		c, err := f.toChain()
		if err != nil {
			return nil, err
		}
		return func(w io.Writer) error { _, err := c.WriteTo(w); return err }, nil
	}
	return nil, fmt.Errorf("no output format given; pass --to native, guava or redisbloom")
}

// toNative returns f as a native filter. A RedisBloom chain of one sub-filter becomes a classic
// filter with the redisbloom64 scheme; longer chains have no native form.
func (f *filter) toNative() (bloom.AnyFilter, error) {
	if f.native != nil {
		return f.native, nil
	}
	if n := f.chain.NumFilters(); n != 1 {
		return nil, fmt.Errorf("this RedisBloom filter has grown to a chain of %d sub-filters, which the native format cannot hold (its scalable kind sizes and hashes differently); keep it as --to redisbloom", n)
	}
	link := f.chain.Links()[0]
	cf, err := bloom.NewWithParams(link.Bytes*8, link.Hashes, bloom.RedisBloom64)
	if err != nil {
		return nil, err
	}
	for it, data := range f.chain.Chunks() {
		if it == 1 {
			continue // the header
		}
		if _, err := cf.WriteAt(data, it-int64(len(data))-1); err != nil {
			return nil, err
		}
	}
	return cf, nil
}

// toChain returns f as a RedisBloom chain. A classic filter with the redisbloom64 scheme becomes
// a non-scaling chain of one sub-filter with the same bits; other filters cannot be RedisBloom's.
func (f *filter) toChain() (*redisbloom.Chain, error) {
	if f.chain != nil {
		return f.chain, nil
	}
	cf, ok := f.native.(*bloom.Filter)
	if !ok {
		return nil, fmt.Errorf("a %s filter cannot be held by RedisBloom, which keeps classic filters in a scalable chain; rebuild it from the items with bloom build --format redisbloom", f.native.Info().Kind)
	}
	if cf.Scheme() != bloom.RedisBloom64 {
		return nil, fmt.Errorf("a filter hashed with %s cannot be held by RedisBloom, which hashes with MurmurHash64A (redisbloom64), and bits cannot be rehashed without the items; rebuild it with bloom build --format redisbloom", cf.Scheme())
	}
	return chainFromFilter(cf)
}

// chainFromFilter makes a non-scaling RedisBloom chain whose one sub-filter has the bits of cf.
// RedisBloom keeps an error rate, bits per entry and capacity beside the bits and insists that
// k = ⌈ln2·bpe⌉; the rate chosen is 2^-(k-½), whose bits per entry give exactly k, and the
// capacity is m/bpe, the items RedisBloom would size such a sub-filter for.
func chainFromFilter(cf *bloom.Filter) (*redisbloom.Chain, error) {
	k := cf.K()
	bytesLen := uint64(cf.ByteLen())
	rate := math.Exp2(-(float64(k) - 0.5))
	bpe := -math.Log(rate) / 0.480453013918201
	capacity := max(1, uint64(float64(cf.M())/bpe))
	items := cf.ApproximateCount()
	le := binary.LittleEndian
	h := le.AppendUint64(nil, items)
	h = le.AppendUint32(h, 1)
	h = le.AppendUint32(h, 13) // FORCE64|NOROUND|NO_SCALING
	h = le.AppendUint32(h, redisbloom.DefaultExpansion)
	h = le.AppendUint64(h, bytesLen)
	h = le.AppendUint64(h, bytesLen*8)
	h = le.AppendUint64(h, items)
	h = le.AppendUint64(h, math.Float64bits(rate))
	h = le.AppendUint64(h, math.Float64bits(bpe))
	h = le.AppendUint32(h, uint32(k))
	h = le.AppendUint64(h, capacity)
	h = append(h, 0)
	c, err := redisbloom.LoadHeader(h, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot describe this filter to RedisBloom: %w", err)
	}
	buf := make([]byte, min(bytesLen, redisbloom.MaxChunkSize))
	for off := uint64(0); off < bytesLen; {
		n := min(uint64(len(buf)), bytesLen-off)
		if _, err := cf.ReadAt(buf[:n], int64(off)); err != nil {
			return nil, err
		}
		if err := c.LoadChunk(int64(off+n+1), buf[:n]); err != nil {
			return nil, err
		}
		off += n
	}
	return c, nil
}

// description is what bloom info reports about a filter.
type description struct {
	Format     string  `json:"format"`
	Kind       string  `json:"kind"`
	Scheme     string  `json:"scheme"`
	Bits       uint64  `json:"bits"`                // bits, or counters for a counting filter
	K          int     `json:"k"`                   // of the first link for chains
	Sectors    int     `json:"sectors,omitempty"`   // blocked filters
	Links      int     `json:"links,omitempty"`     // scalable filters and RedisBloom chains
	Bytes      int64   `json:"bytes"`               // memory of the bit or counter arrays
	Capacity   uint64  `json:"capacity"`            // see capacityNote
	Count      uint64  `json:"count"`               // exact or estimated, see CountExact
	CountExact bool    `json:"count_exact"`         // whether Count is a tally rather than an estimate
	FillRatio  float64 `json:"fill_ratio"`          // set bits (nonzero counters) over all
	FPP        float64 `json:"fpp"`                 // the rate now, from the bits set
	Expansion  uint32  `json:"expansion,omitempty"` // RedisBloom chains
	NonScaling bool    `json:"nonscaling,omitempty"`
}

// describe reads the whole filter (O(m)) and describes it.
func (f *filter) describe() description {
	d := description{Format: f.format.String()}
	if f.chain != nil {
		links := f.chain.Links()
		d.Kind, d.Scheme, d.K, d.Links = "scalable", bloom.RedisBloom64.String(), links[0].Hashes, len(links)
		if f.chain.NonScaling() {
			d.Kind = "classic" // RedisBloom's NONSCALING: one fixed link
		}
		d.Capacity, d.Count, d.CountExact = f.chain.Capacity(), f.chain.Card(), true
		d.Expansion, d.NonScaling = f.chain.Expansion(), f.chain.NonScaling()
		set := make([]uint64, len(links))
		var linkStart int64 = 1 // iterator of the first byte of link i
		li := 0
		for it, data := range f.chain.Chunks() {
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
		q := 1.0
		var allSet uint64
		for i, l := range links {
			d.Bits += l.Bytes * 8
			d.Bytes += int64(l.Bytes)
			allSet += set[i]
			q *= 1 - math.Pow(float64(set[i])/float64(l.Bytes*8), float64(l.Hashes))
		}
		d.FPP = 1 - q
		d.FillRatio = float64(allSet) / float64(d.Bits)
		return d
	}
	info := f.native.Info()
	d.Kind, d.Scheme, d.K, d.Sectors, d.Links = info.Kind, info.Scheme.String(), info.K, info.Sectors, info.Links
	d.Bits, d.Bytes, d.Count, d.FPP = info.M, info.Bytes, info.Count, info.FPP
	switch nf := f.native.(type) {
	case *bloom.Filter:
		d.FillRatio = nf.FillRatio()
	case *bloom.Blocked:
		d.FillRatio = nf.FillRatio()
	case *bloom.Counting:
		d.FillRatio = float64(nf.NonzeroCount()) / float64(nf.M())
		d.CountExact = true
	case *bloom.Scalable:
		d.Capacity, d.CountExact = nf.Capacity(), true
		d.FillRatio = math.NaN()
	}
	if d.Capacity == 0 {
		d.Capacity = optimalCount(d.Bits, d.K)
	}
	return d
}

// optimalCount is m·ln2/k, the number of items for which k hash functions are the best choice:
// the capacity a fixed-size filter was sized for, as near as its bits and k tell.
func optimalCount(m uint64, k int) uint64 {
	return uint64(math.Round(float64(m) * math.Ln2 / float64(k)))
}

func popcount(b []byte) uint64 {
	var n uint64
	for len(b) >= 8 {
		n += uint64(bits.OnesCount64(binary.LittleEndian.Uint64(b)))
		b = b[8:]
	}
	for _, c := range b {
		n += uint64(bits.OnesCount8(c))
	}
	return n
}

// addMany adds keys and returns how many were definitely new. dst is scratch space.
func (f *filter) addMany(dst []bool, keys [][]byte) ([]bool, uint64, error) {
	var added uint64
	if f.chain != nil {
		for _, k := range keys {
			ok, err := f.chain.Add(k)
			if err != nil {
				return dst, added, err
			}
			if ok {
				added++
			}
		}
		return dst, added, nil
	}
	dst = f.native.AddMany(dst[:0], keys)
	for _, ok := range dst {
		if ok {
			added++
		}
	}
	return dst, added, nil
}

// testMany appends to dst whether each key may be present.
func (f *filter) testMany(dst []bool, keys [][]byte) []bool {
	if f.chain != nil {
		for _, k := range keys {
			dst = append(dst, f.chain.Exists(k))
		}
		return dst
	}
	return f.native.TestMany(dst, keys)
}
