// Package cli implements the bloom command. Each subcommand lives in its own file as a function
// that returns a *cobra.Command; Run executes the command tree with the given arguments and
// standard streams and returns the exit status, so tests run every subcommand in-process.
//
// Exit statuses: 0 on success, 2 on any error (a bad flag, an unreadable or corrupt file, a
// server that refused), and for bloom test, 0 if any item may be present and 1 if none is,
// like grep.
package cli
