// Package docs holds no code: its tests keep README.md and BENCHMARKS.md true to the repository.
//
// They fail when either document links to a file that does not exist (a result under
// bench/results/, a package, an image) or to a heading that does not exist, and when a shell
// block of the README runs bloom or bloomd with a subcommand or flag that the program does not
// have. bloom's command lines are checked against its command tree (cli.CheckArgs), bloomd's
// against its settings (server.ParseArgs); the cheap ones (bloom calc) are run through the
// command's Go entry point, and where the README shows their output, the output must match.
package docs
