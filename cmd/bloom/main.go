// Command bloom sizes, builds, queries, inspects, converts and moves Bloom filters.
// Run bloom --help for the subcommands; each has examples in its own --help.
package main

import (
	"os"

	"github.com/bloomd/bloom/internal/cli"
)

func main() { os.Exit(cli.Main()) }
