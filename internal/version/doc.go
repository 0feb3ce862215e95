// Package version is the one version of this module's programs: bloom --version, bloomd
// --version, bloomd's start-up log and the bloomd_version field of INFO server all print
// String, so the two programs of one build always say the same.
//
// The version comes from the build, through runtime/debug.ReadBuildInfo:
//
//   - go install github.com/bloomd/bloom/cmd/...@v1.2.0 builds the module at that version and
//     reports v1.2.0.
//   - go build or go install in a clone stamps the version Go derives from the repository: its
//     tag (v1.2.0), or a pseudo-version naming the commit (v0.0.0-20261127120000-209f3db1a2b3),
//     with "+dirty" when the tree has uncommitted changes.
//   - go run, go test and builds with -buildvcs=false carry no version: String is "devel",
//     followed by the commit when the build recorded one (devel-209f3db1a2b3).
//
// A packager who builds without the repository sets the version at link time:
//
//	go build -ldflags "-X github.com/bloomd/bloom/internal/version.override=1.2.0" ./cmd/...
//
// bloomd's redis_version (INFO, HELLO) is not this version: it is the Redis release whose
// behaviour bloomd follows (7.0.15), which clients check before they use a command.
// TestString proves each case on a real build.
package version
