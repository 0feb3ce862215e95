package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func newTestCmd(e *env) *cobra.Command {
	var from fileFormat
	var keys keyFormat
	var quiet bool
	cmd := &cobra.Command{
		Use:   "test FILE [ITEM...]",
		Short: "Say whether items may be in a filter",
		Long: `test prints one line per item, in order: "maybe" if the item may be in the filter (it was
added, or is a false positive) and "no" if it certainly is not. The items are the arguments
after FILE or, when there are none, the lines of standard input.

Exit status, as grep's: 0 if any item may be present, 1 if none is, 2 on an error.`,
		Example: `  bloom test users.bloom alice@example.com bob@example.com
  bloom test -q users.bloom alice@example.com && echo "probably a user"
  cut -f1 calls.tsv | bloom test --keys int64 phones.bloom | paste - calls.tsv
  bloom test --from guava users.guava carol@example.com`,
		Args: argsUsage(1, -1, "bloom test FILE [ITEM...]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "-" && len(args) == 1 {
				return errors.New("the filter is read from stdin, so the items must be arguments (bloom test - ITEM...)")
			}
			f, err := readFilter(args[0], from, e.stdin)
			if err != nil {
				return err
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
			any, err := testAll(f, src, keys, out, len(args) == 1 && isTerminal(e.stdin))
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

// testAll tests every item of src in batches and prints maybe or no for each. It reports
// whether any item may be present; a bad item stops it with an error naming its place.
func testAll(f *filter, src lineSource, kf keyFormat, w io.Writer, interactive bool) (bool, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	var arena []byte
	var ends []int
	var keys [][]byte
	var res []bool
	anyMaybe := false
	flush := func() {
		keys = keys[:0]
		start := 0
		for _, end := range ends {
			keys = append(keys, arena[start:end:end])
			start = end
		}
		res = f.testMany(res[:0], keys)
		for _, ok := range res {
			if ok {
				anyMaybe = true
				bw.WriteString("maybe\n")
			} else {
				bw.WriteString("no\n")
			}
		}
		arena, ends = arena[:0], ends[:0]
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
			flush() // the answers for the items before the bad one
			bw.Flush()
			return anyMaybe, err
		}
		ends = append(ends, len(arena))
		if interactive || len(ends) == batchKeys || len(arena) >= batchBytes {
			flush()
			if interactive {
				bw.Flush()
			}
		}
	}
	flush()
	return anyMaybe, bw.Flush()
}
