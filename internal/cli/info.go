package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisfilter"
	"github.com/spf13/cobra"
)

func newInfoCmd(e *env) *cobra.Command {
	var from fileFormat
	var asJSON bool
	var plotFile string
	var pf plainFlags
	var rf remoteFlags
	cmd := &cobra.Command{
		Use:   "info FILE",
		Short: "Describe a filter: format, sizes, fill and false-positive rate now",
		Long: `info reads a filter file and prints its format, type, hashing scheme, size in bits, number
of hash functions (k), capacity, count of items, fill ratio (the fraction of bits set) and
the false-positive rate it has now, computed from the bits that are set.

FILE may also be a key on a server, redis://[user:password@]host[:port]/KEY (rediss:// for
TLS): for a Bloom or cuckoo filter of bloomd or of Redis with RedisBloom, info prints what
BF.INFO or CF.INFO says, under their names; for a plain string of bits written with SETBIT,
given its parameters (--m --k --scheme --bit-order, or --rule spring-helper -n -p), it reads
the string and describes it as it describes a file.

The capacity of a fixed-size filter is m·ln2/k, the count for which its k is the best
choice: past it the false-positive rate climbs quickly. A scalable filter or RedisBloom chain
reports the total capacity of its links, which grows as items are added. The count is a tally
for scalable, counting and RedisBloom filters, and otherwise an estimate from the bits set.`,
		Example: `  bloom info users.bloom
  bloom info --from guava users.guava
  bloom info --json seen.bfdump | jq .fpp
  bloom info users.bloom --plot users.svg
  bloom info redis://localhost:6379/phones`,
		Args: argsUsage(1, 1, "bloom info FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var f *filter
			var params redisfilter.PlainParams
			if isRedisURL(args[0]) || pf.given() {
				ctx := cmd.Context()
				k, err := openRedisKey(ctx, &rf, &pf, args[0])
				if err != nil {
					return err
				}
				defer k.c.Close()
				c, t, typ := k.c, k.t, k.typ
				params = k.params
				switch {
				case typ != "string":
					if plotFile != "" {
						return fmt.Errorf("--plot draws a filter from its bits, which BF.INFO and CF.INFO do not give; bloom pull %s to a file and draw that", t.display)
					}
					mi, err := moduleInfoOf(ctx, c, t, typ)
					if err != nil {
						return err
					}
					if asJSON {
						return mi.writeJSON(e.stdout, t)
					}
					mi.print(e.stdout, t)
					return nil
				case !pf.given():
					return needPlainFlags(t, "to describe")
				}
				snap, err := pullPlain(ctx, c, t, params)
				if err != nil {
					return err
				}
				f = &filter{native: snap, format: formatNative}
			} else {
				var err error
				if f, err = readFilter(args[0], from, e.stdin); err != nil {
					return err
				}
			}
			d := f.describe()
			if isRedisURL(args[0]) {
				d.Format = "plain Redis string (" + params.String() + ")"
			}
			// The chart is drawn first, so that nothing is printed if it cannot be; what was
			// written is said after the description (on stderr with --json, which keeps
			// stdout one JSON object).
			var said bytes.Buffer
			if plotFile != "" {
				if err := writePlot(&said, plotFile, f.chart(args[0], d)); err != nil {
					return err
				}
			}
			if asJSON {
				if err := writeJSON(e.stdout, d); err != nil {
					return err
				}
				_, err := said.WriteTo(e.stderr)
				return err
			}
			printDescription(e.stdout, d)
			_, err := said.WriteTo(e.stdout)
			return err
		},
	}
	cmd.Flags().Var(&from, "from", fromHelp)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (bits, bytes and counts as numbers)")
	cmd.Flags().StringVar(&plotFile, "plot", "", plotHelp)
	pf.register(cmd)
	rf.registerConn(cmd)
	return cmd
}

func writeJSON(w io.Writer, d description) error {
	type out description
	v := out(d)
	if math.IsNaN(v.FillRatio) {
		v.FillRatio = -1 // JSON has no NaN; -1 means not available
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printDescription(w io.Writer, d description) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t"+format+"\n", append([]any{k}, args...)...)
	}
	row("format", "%s", d.Format)
	row("type", "%s", d.Kind)
	row("scheme", "%s", d.Scheme)
	unit := "bits"
	if d.Kind == "counting" {
		unit = "counters"
	}
	row(unit, "%s (%s)", group(d.Bits), bloom.FormatBytes(uint64(d.Bytes)))
	k := fmt.Sprint(d.K)
	if d.Sectors > 0 {
		k += fmt.Sprintf(" (%d sectors of 64 bits)", d.Sectors)
	}
	if d.Links > 0 {
		k += " (first link)"
	}
	row("k", "%s", k)
	if d.Links > 0 {
		links := fmt.Sprint(d.Links)
		switch {
		case d.NonScaling:
			links += " (non-scaling)"
		case d.Expansion > 0:
			links += fmt.Sprintf(" (each new one %d× larger)", d.Expansion)
		}
		row("links", "%s", links)
	}
	capNote := fmt.Sprintf("items (m·ln2/k, the count for which k=%d is optimal: within 1/(2k) of the -n it was built for, as k is rounded)", d.K)
	if d.Links > 0 {
		capNote = "items in the links so far"
	}
	row("capacity", "%s %s", group(d.Capacity), capNote)
	countNote := "(estimated from the bits set)"
	if d.CountExact {
		countNote = "(counted as added)"
	}
	row("count", "%s %s", group(d.Count), countNote)
	if math.IsNaN(d.FillRatio) {
		row("fill ratio", "n/a")
	} else {
		row("fill ratio", "%.4f (%s of bits set)", d.FillRatio, formatRate(d.FillRatio))
	}
	row("fpp now", "%s", formatRate(d.FPP))
	tw.Flush()
}
