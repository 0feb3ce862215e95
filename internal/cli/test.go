package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/bloomd/bloom/redisfilter"

	"github.com/spf13/cobra"
)

func newTestCmd(e *env) *cobra.Command {
	var from fileFormat
	var keys keyFormat
	var quiet bool
	var pf plainFlags
	var rf remoteFlags
	cmd := &cobra.Command{
		Use:   "test FILE [ITEM...]",
		Short: "Say whether items may be in a filter",
		Long: `test prints one line per item, in order: "maybe" if the item may be in the filter (it was
added, or is a false positive) and "no" if it certainly is not. The items are the arguments
after FILE or, when there are none, the lines of standard input.

FILE may also be a key on a server, redis://[user:password@]host[:port]/KEY (rediss:// for
TLS): a Bloom or cuckoo filter of bloomd or of Redis with RedisBloom (BF.*, CF.*), tested with
BF.MEXISTS or CF.MEXISTS, or a plain string of bits written with SETBIT (as Java services keep
with the Spring BloomFilterHelper), given its parameters: --m --k --scheme --bit-order, or
--rule spring-helper -n -p. Items are tested on the server, a batch per round trip, and
nothing is written.

Exit status, as grep's: 0 if any item may be present, 1 if none is, 2 on an error.`,
		Example: `  bloom test users.bloom alice@example.com bob@example.com
  bloom test -q users.bloom alice@example.com && echo "probably a user"
  cut -f1 calls.tsv | bloom test --keys int64 phones.bloom | paste - calls.tsv
  bloom test --from guava users.guava carol@example.com
  bloom test redis://localhost:6379/phones +15550000042
  bloom test redis://localhost/bloom:users alice@example.com --rule spring-helper -n 1000000 -p 0.01`,
		Args: argsUsage(1, -1, "bloom test FILE [ITEM...]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "-" && len(args) == 1 {
				return errors.New("the filter is read from stdin, so the items must be arguments (bloom test - ITEM...)")
			}
			var testMany func(dst []bool, keys [][]byte) ([]bool, error)
			if isRedisURL(args[0]) || pf.given() {
				ctx := cmd.Context()
				k, err := openRedisKey(ctx, &rf, &pf, args[0])
				if err != nil {
					return err
				}
				defer k.c.Close()
				c, t, params := k.c, k.t, k.params
				switch {
				case k.typ != "string":
					testMany = moduleTest(ctx, c, t, k.typ)
				case !pf.given():
					return needPlainFlags(t, "to test items in")
				default:
					rfl, err := redisfilter.OpenPlain(ctx, c, t.key, params, nil)
					if err != nil {
						return plainError(t, params, err)
					}
					testMany = func(dst []bool, keys [][]byte) ([]bool, error) {
						res, err := rfl.TestMany(ctx, keys)
						if err != nil {
							return dst, plainError(t, params, err)
						}
						return append(dst, res...), nil
					}
				}
			} else {
				f, err := readFilter(args[0], from, e.stdin)
				if err != nil {
					return err
				}
				testMany = func(dst []bool, keys [][]byte) ([]bool, error) { return f.testMany(dst, keys), nil }
			}
			var src lineSource = &argLines{items: args[1:]}
			if len(args) == 1 {
				src = newInputs(nil, e.stdin)
			}
			out := io.Discard
			if !quiet {
				out = e.stdout
			}
			// Typed at a terminal, each item is answered at once instead of in batches.
			any, err := testAll(testMany, src, keys, out, len(args) == 1 && isTerminal(e.stdin))
			if err != nil {
				return err
			}
			if !any {
				return exitStatus(exitNone)
			}
			return nil
		},
	}
	cmd.Flags().Var(&from, "from", fromHelp)
	cmd.Flags().Var(&keys, "keys", keysHelp)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing; only the exit status tells")
	pf.register(cmd)
	rf.registerConn(cmd)
	return cmd
}

// lineSource yields items one line at a time: *inputs, or argLines.
type lineSource interface {
	next() ([]byte, error)
	where() string
}

// argLines yields command-line arguments as lines.
type argLines struct {
	items []string
	i     int
}

func (a *argLines) next() ([]byte, error) {
	if a.i == len(a.items) {
		return nil, io.EOF
	}
	a.i++
	return []byte(a.items[a.i-1]), nil
}

func (a *argLines) where() string { return fmt.Sprintf("item %d", a.i) }

// testAll tests every item of src in batches with testMany and prints maybe or no for each. It
// reports whether any item may be present; a bad item or a failed batch stops it with an error.
func testAll(testMany func(dst []bool, keys [][]byte) ([]bool, error), src lineSource, kf keyFormat, w io.Writer, interactive bool) (bool, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	var arena []byte
	var ends []int
	var keys [][]byte
	var res []bool
	anyMaybe := false
	flush := func() error {
		keys = keys[:0]
		start := 0
		for _, end := range ends {
			keys = append(keys, arena[start:end:end])
			start = end
		}
		var err error
		if res, err = testMany(res[:0], keys); err != nil {
			return err
		}
		for _, ok := range res {
			if ok {
				anyMaybe = true
				bw.WriteString("maybe\n")
			} else {
				bw.WriteString("no\n")
			}
		}
		arena, ends = arena[:0], ends[:0]
		return nil
	}
	for {
		line, err := src.next()
		if err == io.EOF {
			break
		}
		if err == nil {
			arena, err = kf.appendKey(arena, line)
			if err != nil {
				err = fmt.Errorf("%s: %w", src.where(), err)
			}
		}
		if err != nil {
			if ferr := flush(); ferr == nil { // the answers for the items before the bad one
				bw.Flush()
			}
			return anyMaybe, err
		}
		ends = append(ends, len(arena))
		if interactive || len(ends) == batchKeys || len(arena) >= batchBytes {
			if err := flush(); err != nil {
				bw.Flush()
				return anyMaybe, err
			}
			if interactive {
				bw.Flush()
			}
		}
	}
	if err := flush(); err != nil {
		bw.Flush()
		return anyMaybe, err
	}
	return anyMaybe, bw.Flush()
}
