package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// CheckArgs reports whether args (the command line without the program name) name a bloom
// subcommand and only flags that subcommand has, with the number of arguments it accepts, without
// running anything or touching a file or server. It keeps documented command lines honest
// (internal/docs checks every bloom command in the README with it). It is safe for concurrent
// use.
func CheckArgs(args []string) error {
	root := newRoot(&env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	root.InitDefaultHelpCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); errors.Is(err, pflag.ErrHelp) {
		return nil
	} else if err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	pos := cmd.Flags().Args()
	if cmd == root && len(pos) > 0 {
		return fmt.Errorf("bloom: unknown command %q", pos[0])
	}
	if err := cmd.ValidateArgs(pos); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	return nil
}
