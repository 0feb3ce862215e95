package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newConvertCmd(e *env) *cobra.Command {
	var from, to fileFormat
	var force bool
	cmd := &cobra.Command{
		Use:   "convert IN OUT --to native|guava|redisbloom",
		Short: "Rewrite a filter file in another format",
		Long: `convert reads a filter and writes the same bits in another format. Native files and
RedisBloom dumps are recognised by their magic; a Guava writeTo stream has none and needs
--from guava.

A format holds only what it can express, and convert refuses, saying why, when the target
cannot hold the filter: Guava streams hold classic filters hashed with guava64 or guava32;
RedisBloom dumps hold RedisBloom's chains, and classic filters hashed with redisbloom64 (as a
non-scaling chain of one link); the native format holds every type of this tool, and a
RedisBloom chain only while it has one link. Bits cannot be rehashed without the items, so
the fix is always to rebuild from the items with bloom build.`,
		Example: `  bloom convert --from guava users.guava users.bloom --to native
  bloom convert users.bloom users.guava --to guava
  bloom convert seen.bfdump seen.bloom --to native`,
		Args: argsUsage(2, 2, "bloom convert IN OUT --to native|guava|redisbloom"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == formatAuto {
				return fmt.Errorf("no output format: give --to native, guava or redisbloom")
			}
			if err := checkOutput(args[1], force); err != nil {
				return err
			}
			f, err := readFilter(args[0], from, e.stdin)
			if err != nil {
				return err
			}
			if err := writeFilter(e, args[1], f, to, force); err != nil {
				return fmt.Errorf("%s cannot be converted to %s: %w", args[0], to, err)
			}
			if args[1] != "-" {
				fmt.Fprintf(e.stdout, "wrote %s: %s, from %s\n", args[1], to, f.format)
			}
			return nil
		},
	}
	cmd.Flags().Var(&from, "from", fromHelp)
	cmd.Flags().Var(&to, "to", "output format: native, guava or redisbloom (required)")
	cmd.Flags().BoolVar(&force, "force", false, forceHelp)
	return cmd
}
