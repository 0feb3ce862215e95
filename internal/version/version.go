package version

import (
	"runtime/debug"
	"sync"
)

// override, set with -ldflags "-X github.com/bloomd/bloom/internal/version.override=V", wins
// over what the build recorded.
var override string

// String returns the version of the running program: the -X override if set, else the module
// version the build recorded, else "devel" with the commit if the build recorded one
// ("devel-209f3db1a2b3", "devel-209f3db1a2b3+dirty" with uncommitted changes, as Go marks
// them). It is never "" and has no spaces, so it reads as one field in INFO and in logs.
func String() string { return info().version }

// Revision returns the commit the program was built from and whether the tree had changes, or
// "" when the build recorded no commit (go run, -buildvcs=false, a build outside a repository).
func Revision() (commit string, modified bool) {
	i := info()
	return i.revision, i.modified
}

type buildInfo struct {
	version  string
	revision string
	modified bool
}

var info = sync.OnceValue(func() buildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return describe(override, nil)
	}
	return describe(override, bi)
})

// describe derives the version from an override and a build's recorded information (nil when
// the program has none).
func describe(override string, bi *debug.BuildInfo) buildInfo {
	var i buildInfo
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.revision = s.Value
			case "vcs.modified":
				i.modified = s.Value == "true"
			}
		}
	}
	switch {
	case override != "":
		i.version = override
	case bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)":
		i.version = bi.Main.Version
	case i.revision != "":
		i.version = "devel-" + short(i.revision)
		if i.modified {
			i.version += "+dirty"
		}
	default:
		i.version = "devel"
	}
	return i
}

// short is a commit hash cut to the 12 characters Go's pseudo-versions use.
func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
