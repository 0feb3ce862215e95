package skipped

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	mu      sync.Mutex
	missing = map[string][]string{} // program -> names of the tests it cost
)

// Missing skips tb because program is not installed, with msg as the skip message, and records
// the skip for Main's summary. It is safe for concurrent use.
func Missing(tb testing.TB, program, msg string) {
	tb.Helper()
	mu.Lock()
	missing[program] = append(missing[program], tb.Name())
	mu.Unlock()
	tb.Skip(msg)
}

// Summary returns the line Main prints for package pkg, or "" if no test skipped for a missing
// program.
func Summary(pkg string) string {
	mu.Lock()
	defer mu.Unlock()
	if len(missing) == 0 {
		return ""
	}
	programs := make([]string, 0, len(missing))
	for p := range missing {
		programs = append(programs, p)
	}
	slices.Sort(programs)
	var parts []string
	total := 0
	for _, p := range programs {
		n := len(missing[p])
		total += n
		parts = append(parts, fmt.Sprintf("%s missing (%d %s)", p, n, plural(n, "test")))
	}
	return fmt.Sprintf("%s: %d %s skipped, not run: %s\n", pkg, total, plural(total, "test"), strings.Join(parts, ", "))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Main runs the tests of m, prints the summary line if any test skipped for a missing program,
// and exits with the tests' status. Call it from TestMain:
//
//	func TestMain(m *testing.M) { skipped.Main(m) }
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main without the exit, for a TestMain that has more to do afterwards.
func Run(m *testing.M) int {
	code := m.Run()
	Report()
	return code
}

// Report prints the summary line of the package under test, if any test skipped for a missing
// program. Call it after m.Run, in a TestMain that does not use Main or Run.
func Report() {
	if line := Summary(packagePath()); line != "" {
		w, done := output()
		io.WriteString(w, line)
		done()
	}
}

// packagePath is the import path of the package under test.
func packagePath() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Path != "" {
		return strings.TrimSuffix(bi.Path, ".test")
	}
	return strings.TrimSuffix(os.Args[0], ".test")
}

// output is where the summary line is seen (see the package doc): standard output when go test
// shows it (-v, -json), else the go command's own output, else the terminal, else standard
// output.
func output() (io.Writer, func()) {
	if shown() {
		return os.Stdout, func() {}
	}
	if f := goCommandOutput(); f != nil {
		return f, func() { f.Close() }
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		return tty, func() { tty.Close() }
	}
	return os.Stdout, func() {}
}

// shown reports whether go test shows this test binary's output even when its tests pass: with
// -v its output is printed, and with -json it becomes the package's output events.
func shown() bool {
	f := flag.Lookup("test.v")
	return f != nil && f.Value.String() != "false"
}
