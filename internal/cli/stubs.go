package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// stub stands for a subcommand that is still being written.
func stub(name string) *cobra.Command {
	return &cobra.Command{Use: name, Short: "(being written)", Example: "  bloom " + name,
		RunE: func(*cobra.Command, []string) error { return errors.New("not implemented yet") }}
}

func newPushCmd(e *env) *cobra.Command { return stub("push") }
func newPullCmd(e *env) *cobra.Command { return stub("pull") }
