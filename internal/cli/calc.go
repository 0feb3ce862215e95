package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/bloomd/bloom"
	"github.com/spf13/cobra"
)

func newCalcCmd(e *env) *cobra.Command {
	var n, p, m, k, plotFile string
	cmd := &cobra.Command{
		Use:   "calc (-n N -p P | -m M [-k K] (-n N | -p P))",
		Short: "Size a filter, or say what a given size achieves",
		Long: `calc answers sizing questions without building anything.

With -n and -p it gives the bits, bytes, hash functions (k) and bits per item that a filter
for n items at false-positive rate p needs, under Guava's rule (BloomFilter.create), under
RedisBloom's (BF.RESERVE) and for a blocked filter (every probe in one 64-byte cache line:
faster, slightly larger). A table then shows the false-positive rate as the filter fills:
at a quarter, half, all, twice and four times the planned items.

With -m (a size in bits, or in bytes with a trailing B) it says what that size achieves:
with -n, the best k and the rate at n items; with -p, how many items fit at that rate;
with -k alone, the rate at the count where that k is optimal. -k fixes k instead of
choosing the best one.

Counts take 1000000, 1_000_000, 1e6 or 1M (k, M, G, T: powers of 1000); rates take 0.01,
1e-2, 1% or 1/100; sizes take 9585088, 10M, 8Mi (bits) or 1.2MB, 1MiB (bytes).`,
		Example: `  # de-duplicate 100 million phone numbers, one false "seen before" in a thousand
  bloom calc -n 100M -p 0.001

  # what does a 16 MiB filter with 7 hash functions give at 10 million items?
  bloom calc -m 16MiB -k 7 -n 10M

  # how many items fit in 1 MB at 1%?
  bloom calc -m 1MB -p 1%

  # the same sizing, with the rate as the filter fills drawn to fpp.svg
  bloom calc -n 100M -p 0.001 --plot fpp.svg`,
		Args: argsUsage(0, 0, "bloom calc -n N -p P | bloom calc -m M [-k K] -n N|-p P"),
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := parseCalc(n, p, m, k)
			if err != nil {
				return err
			}
			if err := q.print(e.stdout); err != nil {
				return err
			}
			if plotFile != "" {
				fmt.Fprintln(e.stdout)
				return writePlot(e.stdout, plotFile, q.chart())
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&n, "items", "n", "", "number of items the filter will hold")
	f.StringVarP(&p, "rate", "p", "", "false-positive rate, in (0, 1)")
	f.StringVarP(&m, "bits", "m", "", "filter size: bits, or bytes with a trailing B")
	f.StringVarP(&k, "hashes", "k", "", "number of hash functions (with -m)")
	f.StringVar(&plotFile, "plot", "", plotHelp)
	return cmd
}

// calcQuery is a parsed calc request; zero fields were not given.
type calcQuery struct {
	n    uint64
	p    float64
	m    uint64
	k    int
	hasN bool
}

func parseCalc(n, p, m, k string) (calcQuery, error) {
	var q calcQuery
	var err error
	if n != "" {
		if q.n, err = parseCount(n); err != nil {
			return q, fmt.Errorf("-n: %w", err)
		}
		if q.n == 0 {
			return q, fmt.Errorf("-n: a filter for 0 items needs no bits; give the number of items it will hold")
		}
		q.hasN = true
	}
	if p != "" {
		if q.p, err = parseRate(p); err != nil {
			return q, fmt.Errorf("-p: %w", err)
		}
	}
	if m != "" {
		if q.m, err = parseBits(m); err != nil {
			return q, fmt.Errorf("-m: %w", err)
		}
		if q.m == 0 {
			return q, fmt.Errorf("-m: a filter needs at least 1 bit")
		}
	}
	if k != "" {
		v, err := strconv.Atoi(k)
		if err != nil || v < 1 || v > bloom.MaxK {
			return q, fmt.Errorf("-k: %s is not a number of hash functions; give a whole number from 1 to %d", quote(k), bloom.MaxK)
		}
		q.k = v
	}
	const forms = "give -n and -p to size a filter, or -m with -n, -p or -k to see what a size achieves"
	switch {
	case q.m == 0 && q.k != 0:
		return q, fmt.Errorf("-k goes with -m (the size): %s", forms)
	case q.m == 0 && (!q.hasN || q.p == 0):
		return q, fmt.Errorf("not enough to go on: %s", forms)
	case q.m != 0 && q.hasN && q.p != 0:
		return q, fmt.Errorf("-m, -n and -p together leave nothing to compute: drop one of them")
	case q.m != 0 && !q.hasN && q.p == 0 && q.k == 0:
		return q, fmt.Errorf("-m alone is not enough: add -n (items) to get the rate, -p (rate) to get the capacity, or -k")
	}
	return q, nil
}

func (q calcQuery) print(w io.Writer) error {
	if q.m == 0 {
		return q.printSizing(w)
	}
	return q.printGiven(w)
}

// fillPoints are the fractions of n at which the tables show the rate.
var fillPoints = []struct {
	num, den uint64
	label    string
}{{1, 4, "¼n"}, {1, 2, "½n"}, {1, 1, "n"}, {2, 1, "2n"}, {4, 1, "4n"}}

// calcRow is one sizing of a filter: its rule, size and rate function.
type calcRow struct {
	rule    string
	m       uint64
	k       int
	sectors int // blocked filters only
	err     error
	fpp     func(n uint64) float64
}

func (q calcQuery) printSizing(w io.Writer) error {
	var rows []calcRow
	if m, k, err := bloom.GuavaSize(q.n, q.p); err != nil {
		rows = append(rows, calcRow{rule: "guava", err: err})
	} else {
		rows = append(rows, calcRow{rule: "guava", m: m, k: k,
			fpp: func(n uint64) float64 { return bloom.FalsePositiveRate(m, k, n) }})
	}
	if m, k, _, err := bloom.RedisBloomSize(q.n, q.p); err != nil {
		rows = append(rows, calcRow{rule: "redisbloom", err: err})
	} else {
		rows = append(rows, calcRow{rule: "redisbloom", m: m, k: k,
			fpp: func(n uint64) float64 { return bloom.FalsePositiveRate(m, k, n) }})
	}
	if m, k, z, err := bloom.BlockedSize(q.n, q.p); err != nil {
		rows = append(rows, calcRow{rule: "blocked", err: err})
	} else {
		rows = append(rows, calcRow{rule: "blocked", m: m, k: k, sectors: z,
			fpp: func(n uint64) float64 { return bloom.BlockedFalsePositiveRate(m, k, z, n) }})
	}
	if allFailed(rows) {
		return rows[0].err
	}
	fmt.Fprintf(w, "%s at a false-positive rate of %s (%g):\n\n", plural(q.n, "item"), formatRate(q.p), q.p)
	printRows(w, rows, q.n)
	fmt.Fprintln(w)
	printFillTable(w, rows, q.n)
	fmt.Fprintln(w, `
guava: BloomFilter.create(funnel, n, p), and bloom build --type classic.
redisbloom: BF.RESERVE key p n NONSCALING; without NONSCALING RedisBloom adds a larger
  filter when this one is full, instead of letting the rate climb past n.
blocked: bloom build --type blocked; k probes in one 64-byte block, spread over
  "sectors" 64-bit words.`)
	return nil
}

func (q calcQuery) printGiven(w io.Writer) error {
	m, k, n := q.m, q.k, q.n
	var note string
	switch {
	case q.p != 0: // capacity at p
		if k == 0 {
			for c := 1; c <= 64; c++ {
				if cp := bloom.Capacity(m, c, q.p); k == 0 || cp > n {
					k, n = c, cp
				}
			}
			note = fmt.Sprintf("k=%d holds the most items at %s", k, formatRate(q.p))
		} else {
			n = bloom.Capacity(m, k, q.p)
		}
		if n == 0 {
			return fmt.Errorf("%s cannot reach a false-positive rate of %s even with one item; give a larger -m", sizeString(m), formatRate(q.p))
		}
	case q.hasN: // rate at n
		if k == 0 {
			k = bloom.OptimalK(n, m)
			note = fmt.Sprintf("k=%d is the best for %s (Guava's choice)", k, plural(n, "item"))
		}
	default: // -m and -k: the count where k is optimal
		n = max(1, uint64(math.Round(float64(m)*math.Ln2/float64(k))))
		note = fmt.Sprintf("n = m·ln2/k = %s is the count at which k=%d is optimal", group(n), k)
	}
	fmt.Fprintf(w, "A filter of %s with k=%d:\n\n", sizeString(m), k)
	row := calcRow{rule: "classic", m: m, k: k, fpp: func(n uint64) float64 { return bloom.FalsePositiveRate(m, k, n) }}
	printRows(w, []calcRow{row}, n)
	if note != "" {
		fmt.Fprintf(w, "(%s)\n", note)
	}
	if q.p != 0 {
		fmt.Fprintf(w, "\nIt holds %s at a false-positive rate of %s.\n", plural(n, "item"), formatRate(q.p))
	} else {
		fmt.Fprintf(w, "\nAt %s its false-positive rate is %s.\n", plural(n, "item"), formatRate(row.fpp(n)))
	}
	fmt.Fprintln(w)
	printFillTable(w, []calcRow{row}, n)
	return nil
}

func allFailed(rows []calcRow) bool {
	for _, r := range rows {
		if r.err == nil {
			return false
		}
	}
	return true
}

func printRows(w io.Writer, rows []calcRow, n uint64) {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "rule\tbits\tsize\tk\tbits/item")
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(tw, "%s\t%s\n", r.rule, briefError(r.err))
			continue
		}
		k := strconv.Itoa(r.k)
		if r.sectors != 0 {
			k += fmt.Sprintf(" (%s)", plural(uint64(r.sectors), "sector"))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\n", r.rule, group(r.m), bloom.FormatBytes((r.m+7)/8), k, float64(r.m)/float64(n))
	}
	tw.Flush()
}

func printFillTable(w io.Writer, rows []calcRow, n uint64) {
	fmt.Fprintln(w, "False-positive rate as the filter fills:")
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\titems\t")
	for _, r := range rows {
		if r.err == nil {
			fmt.Fprintf(tw, "%s\t", r.rule)
		}
	}
	fmt.Fprintln(tw)
	for _, pt := range fillPoints {
		at := n * pt.num / pt.den
		fmt.Fprintf(tw, "%s\t%s\t", pt.label, group(at))
		for _, r := range rows {
			if r.err == nil {
				fmt.Fprintf(tw, "%s\t", formatRate(r.fpp(at)))
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// sizeString formats a bit count with its size in bytes.
func sizeString(m uint64) string {
	return fmt.Sprintf("%s bits (%s)", group(m), bloom.FormatBytes((m+7)/8))
}

// briefError drops the package prefix of a library error for a table cell.
func briefError(err error) string {
	for _, s := range []error{bloom.ErrInvalidParameter, bloom.ErrTooLarge} {
		if errors.Is(err, s) {
			msg := err.Error()
			if p := s.Error() + ": "; len(msg) > len(p) && msg[:len(p)] == p {
				return "cannot: " + msg[len(p):]
			}
		}
	}
	return "cannot: " + err.Error()
}
