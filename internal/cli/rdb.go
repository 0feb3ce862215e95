package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/bloomd/bloom/internal/rdb"
	"github.com/spf13/cobra"
)

// newRDBCmd is bloom rdb: the filters in a Redis RDB file (dump.rdb), listed or pulled out.
func newRDBCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rdb",
		Short: "List or pull out the filters of a Redis RDB file (dump.rdb)",
		Long: `rdb reads a Redis RDB file, such as the dump.rdb of Redis with the RedisBloom module or of
bloomd saving RDB: rdb list names its Bloom and cuckoo filters, rdb pull writes one to a file.
Files of Redis 6.2 to 7.4 are read; keys of other types are counted, not read.`,
		Args: argsUsage(0, 0, "bloom rdb list|pull"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(e.stderr)
			cmd.Help()
			return exitStatus(exitError)
		},
	}
	cmd.AddCommand(newRDBListCmd(e), newRDBPullCmd(e))
	return cmd
}

// openRDB opens an RDB file for reading every key (other types skipped and counted).
func openRDB(path string) (*rdb.Reader, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, pathError(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, pathError(err)
	}
	r, err := rdb.NewReader(bufio.NewReaderSize(f, 1<<20), &rdb.ReaderOptions{Size: st.Size(), SkipUnsupported: true})
	if err != nil {
		f.Close()
		if errors.Is(err, rdb.ErrNotRDB) {
			return nil, nil, fmt.Errorf("%s is not a Redis RDB file (no REDIS signature); for bloom's own filter files use bloom info", path)
		}
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, func() { f.Close() }, nil
}

func newRDBListCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "list FILE",
		Short: "List the Bloom and cuckoo filters of an RDB file",
		Long: `list prints one line per RedisBloom filter of FILE: its database, key, type (bloom or
cuckoo), capacity (Bloom) or buckets and bucket size (cuckoo), items, sub-filters and bytes, then
how many keys of other types the file holds. The filters' bits are skipped, not loaded.`,
		Example: `  bloom rdb list /var/lib/redis/dump.rdb`,
		Args:    argsUsage(1, 1, "bloom rdb list FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, done, err := openRDB(args[0])
			if err != nil {
				return err
			}
			defer done()
			tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "DB\tKEY\tTYPE\tCAPACITY\tITEMS\tFILTERS\tBYTES")
			others := 0
			for {
				en, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], err)
				}
				switch en.Kind {
				case rdb.KindBloom:
					h, err := en.ReadBloomHeader()
					if err != nil {
						return fmt.Errorf("%s: %w", args[0], err)
					}
					var capacity, bytes uint64
					for _, l := range h.Links {
						capacity += l.Capacity
						bytes += l.Bytes
					}
					fmt.Fprintf(tw, "%d\t%s\tbloom\t%d\t%d\t%d\t%d\n", en.DB, quote(string(en.Key)), capacity, h.Items, len(h.Links), bytes)
				case rdb.KindCuckoo:
					i, err := en.ReadCuckooInfo()
					if err != nil {
						return fmt.Errorf("%s: %w", args[0], err)
					}
					fmt.Fprintf(tw, "%d\t%s\tcuckoo\t%d buckets × %d\t%d\t%d\t%d\n", en.DB, quote(string(en.Key)), i.Buckets, i.BucketSize, i.Items, i.Filters, i.Bytes)
				default:
					others++
				}
			}
			tw.Flush()
			for _, n := range r.Skipped() {
				others += n
			}
			fmt.Fprintf(e.stdout, "%d other keys (strings, hashes and types that are not filters)\n", others)
			return nil
		},
	}
}

func newRDBPullCmd(e *env) *cobra.Command {
	to := formatRedisBloom
	var force bool
	var db int
	cmd := &cobra.Command{
		Use:   "pull FILE KEY OUT",
		Short: "Write one Bloom filter of an RDB file to a filter file",
		Long: `pull reads the Bloom filter KEY (of database --db, 0 by default) from the RDB file FILE and
writes it to OUT, as bloom pull does for a filter read from a server: by default as a RedisBloom
dump, which holds any such filter and which bloom push loads into bloomd or Redis; --to native
works while the filter has one sub-filter. Cuckoo filters are not written to files.`,
		Example: `  bloom rdb pull dump.rdb seen seen.bfdump
  bloom rdb pull dump.rdb users users.bloom --to native --db 2`,
		Args: argsUsage(3, 3, "bloom rdb pull FILE KEY OUT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == formatAuto {
				return fmt.Errorf("--to: give native, guava or redisbloom")
			}
			if err := checkOutput(args[2], force); err != nil {
				return err
			}
			r, done, err := openRDB(args[0])
			if err != nil {
				return err
			}
			defer done()
			for {
				en, err := r.Next()
				if err == io.EOF {
					return fmt.Errorf("%s has no key %s in database %d", args[0], quote(args[1]), db)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], err)
				}
				if en.DB != db || string(en.Key) != args[1] {
					continue
				}
				switch en.Kind {
				case rdb.KindBloom:
				case rdb.KindCuckoo:
					return fmt.Errorf("%s is a cuckoo filter; bloom writes Bloom filters to files (load the RDB file into bloomd to use it)", quote(args[1]))
				default:
					return fmt.Errorf("%s is a %s, not a filter", quote(args[1]), rdb.TypeName(en.Type))
				}
				ch, err := en.ReadChain(nil)
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], err)
				}
				if err := writeFilter(e, args[2], &filter{chain: ch, format: formatRedisBloom}, to, force); err != nil {
					return fmt.Errorf("%s cannot be written as %s: %w", quote(args[1]), to, err)
				}
				if args[2] != "-" {
					fmt.Fprintf(e.stdout, "wrote %s: %s, %d items in %d sub-filters\n", args[2], to, ch.Card(), ch.NumFilters())
				}
				return nil
			}
		},
	}
	cmd.Flags().Var(&to, "to", "output format: redisbloom (the default), native or guava")
	cmd.Flags().IntVar(&db, "db", 0, "database of the key")
	cmd.Flags().BoolVar(&force, "force", false, forceHelp)
	return cmd
}
