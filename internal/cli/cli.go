package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/bloomd/bloom/internal/version"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// Exit statuses.
const (
	exitOK    = 0
	exitNone  = 1 // bloom test: no item may be present
	exitError = 2
)

// exitStatus is returned by a command that ends with a status other than 0 without an error
// message, as bloom test does when no item may be present.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// env is what a command sees of the process: its standard streams and whether they are terminals.
type env struct {
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	stderrTTY bool // progress bars are shown by default only on a terminal
	stdoutTTY bool // binary output is refused on a terminal
}

// Main runs the bloom command with the process's arguments and streams, stopping cleanly on
// SIGINT and SIGTERM, and returns the exit status.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// Run runs the bloom command with the given arguments (without the program name) and streams and
// returns the exit status. Progress bars appear on stderr only when it is a terminal, unless
// forced with --progress. No panic escapes: it is reported as an internal error with status 2.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "bloom: internal error: %v\nThis is a bug; please report it with the command you ran and this trace:\n%s", r, debug.Stack())
			code = exitError
		}
	}()
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr,
		stderrTTY: isTerminal(stderr), stdoutTTY: isTerminal(stdout)}
	root := newRoot(e)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	name := "bloom"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		msg = "interrupted; nothing was written"
	}
	fmt.Fprintf(stderr, "%s: %s\n", name, msg)
	return exitError
}

func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "bloom",
		Short: "Size, build, query, inspect, convert and move Bloom filters",
		Long: `bloom sizes Bloom filters, builds them from lists of items, answers whether items may be in
them, and moves them between files (native, Guava's writeTo stream, RedisBloom dumps) and
servers (bloomd, or Redis with RedisBloom).

Exit status: 0 on success, 2 on error; bloom test exits 0 if any item may be present and
1 if none is, like grep.`,
		Example: `  bloom calc -n 100M -p 0.001
  bloom build -n 1e6 -p 0.01 -o users.bloom users.txt
  bloom test users.bloom alice@example.com
  bloom info users.bloom`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q; run 'bloom --help' for the list", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// No subcommand is a usage error: the usage goes to stderr, the status is 2.
			cmd.SetOut(e.stderr)
			cmd.Help()
			return exitStatus(exitError)
		},
		Version: version.String(),
	}
	root.SetVersionTemplate("bloom {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w; run '%s --help' for usage", err, c.CommandPath())
	})
	root.AddCommand(
		newCalcCmd(e),
		newBuildCmd(e),
		newTestCmd(e),
		newInfoCmd(e),
		newMergeCmd(e),
		newConvertCmd(e),
		newPushCmd(e),
		newPullCmd(e),
		newRDBCmd(e),
	)
	// A format flag's zero value means "detected" or "as the input": each flag's usage says
	// which, so pflag's "(default auto)" would only repeat it, wrongly.
	for _, c := range root.Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if _, ok := f.Value.(*fileFormat); ok && f.DefValue == formatAuto.String() {
				f.DefValue = ""
			}
		})
	}
	return root
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// argsUsage returns an Args validator that accepts between lo and hi arguments (hi < 0: any
// number) and otherwise says what the command takes.
func argsUsage(lo, hi int, usage string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || (hi >= 0 && len(args) > hi) {
			what := "too many arguments"
			if len(args) < lo {
				what = "missing arguments"
			}
			return fmt.Errorf("%s; usage: %s (run '%s --help' for examples)", what, usage, cmd.CommandPath())
		}
		return nil
	}
}

// quote returns s quoted for an error message, shortened if it is long.
func quote(s string) string {
	const max = 60
	if len(s) > max {
		s = s[:max] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// plural returns "1 item" or "n items" with the count grouped in thousands.
func plural(n uint64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return group(n) + " " + word + "s"
}

// group formats n with commas between groups of three digits.
func group(n uint64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
