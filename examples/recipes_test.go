// Package examples_test checks the examples as programs: each answers -h with its usage and
// status 0, and each run the README quotes prints what the README shows.
package examples_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/skipped"
)

func TestMain(m *testing.M) {
	code := skipped.Run(m)
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// build compiles every example once into a temporary directory and returns it. The programs
// are built as a user's go run builds them (no -race), so the README's runs take the time they
// take for a user.
func build(t *testing.T) string {
	t.Helper()
	built.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "examples-"); built.err != nil {
			return
		}
		if out, err := exec.Command("go", "build", "-o", built.dir+string(filepath.Separator), "./...").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./examples/...: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

var built struct {
	sync.Once
	dir string
	err error
}

// examples lists the example programs: the directories here with a main.go.
func examples(t *testing.T) []string {
	t.Helper()
	mains, err := filepath.Glob("*/main.go")
	if err != nil || len(mains) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	var names []string
	for _, m := range mains {
		names = append(names, filepath.Dir(m))
	}
	return names
}

// TestHelp: every example answers -h and -help with its usage and exit status 0, and an
// unknown flag with a non-zero status.
func TestHelp(t *testing.T) {
	dir := build(t)
	for _, name := range examples(t) {
		for _, flag := range []string{"-h", "-help", "--help"} {
			out, err := exec.Command(filepath.Join(dir, name), flag).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Usage") {
				t.Errorf("%s %s: %v\n%s", name, flag, err, out)
			}
		}
		if out, err := exec.Command(filepath.Join(dir, name), "-no-such-flag").CombinedOutput(); err == nil {
			t.Errorf("%s -no-such-flag: exit status 0\n%s", name, out)
		}
	}
}

// A quotedRun is a run of an example that README.md shows with its output, in a console block:
//
//	$ go run ./examples/NAME ARGS...   # a comment
//	output line
//	...
//
// A line "..." stands for any number of output lines, and "…" within a line for any text (the
// timings, which differ from machine to machine and from run to run); every other line must be
// printed as shown, in that order, with nothing between.
type quotedRun struct {
	where   string // README.md:LINE
	example string
	args    []string
	lines   []string
}

var runLine = regexp.MustCompile(`^\$ go run \./examples/([a-z-]+)((?:\s+[^#\s]+)*)\s*(?:#.*)?$`)

// quotedRuns finds the runs of examples that the document shows in its console blocks.
func quotedRuns(doc, name string) []quotedRun {
	var runs []quotedRun
	in, console := false, false
	var cur *quotedRun
	sc := bufio.NewScanner(strings.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if !in {
				console = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "`")) == "console"
			}
			in, cur = !in, nil
			continue
		}
		if !in || !console {
			continue
		}
		if strings.HasPrefix(line, "$ ") {
			cur = nil
			if m := runLine.FindStringSubmatch(line); m != nil {
				runs = append(runs, quotedRun{where: fmt.Sprintf("%s:%d", name, n), example: m[1], args: strings.Fields(m[2])})
				cur = &runs[len(runs)-1]
			}
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, line)
		}
	}
	return runs
}

// match reports whether got is what quoted shows ("..." and "…" as the quotedRun type says),
// and if not, the first quoted line it could not find.
func match(quoted, got []string) (bool, string) {
	pats := make([]*regexp.Regexp, len(quoted))
	for i, q := range quoted {
		parts := strings.Split(strings.TrimRight(q, " "), "…")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		pats[i] = regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
	}
	best := 0 // the furthest quoted line reached, for the message
	var try func(qi, gi int) bool
	try = func(qi, gi int) bool {
		best = max(best, qi)
		if qi == len(quoted) {
			return gi == len(got)
		}
		if quoted[qi] == "..." {
			for k := gi; k <= len(got); k++ {
				if try(qi+1, k) {
					return true
				}
			}
			return false
		}
		return gi < len(got) && pats[qi].MatchString(strings.TrimRight(got[gi], " ")) && try(qi+1, gi+1)
	}
	if try(0, 0) {
		return true, ""
	}
	if best < len(quoted) {
		return false, quoted[best]
	}
	return false, "(the end: the program prints more)"
}

// heavy names the examples whose quoted runs need more than a test should take by default, and
// why; BLOOM_EXAMPLES_FULL=1 runs them too.
var heavy = map[string]string{
	"phones": "about 3 GB of memory and minutes of CPU for 100 million numbers",
}

// TestREADMERecipes runs every example the README shows with its output, with the arguments
// shown, and requires the output shown: the counts in the README are what the programs print.
func TestREADMERecipes(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	runs := quotedRuns(string(data), "README.md")
	shown := map[string]bool{}
	for _, r := range runs {
		shown[r.example] = true
	}
	for _, name := range examples(t) {
		if !shown[name] && name != "quickstart" {
			t.Errorf("README.md shows no run of examples/%s with its output", name)
		}
	}
	dir := build(t)
	for _, r := range runs {
		t.Run(r.example, func(t *testing.T) {
			if why, ok := heavy[r.example]; ok && os.Getenv("BLOOM_EXAMPLES_FULL") != "1" {
				t.Skipf("%s: %s; BLOOM_EXAMPLES_FULL=1 runs it", r.where, why)
			}
			if r.example == "weak-passwords" {
				if _, err := os.Stat("/usr/share/dict/american-english"); err != nil {
					skipped.Missing(t, "wamerican", "/usr/share/dict/american-english is missing (apt-get install wamerican); skipping")
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(dir, r.example), r.args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatal(err)
				}
				t.Fatalf("%s: go run ./examples/%s %s: %v\n%s%s", r.where, r.example, strings.Join(r.args, " "), err, out, stderr.String())
			}
			got := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
			if ok, missing := match(r.lines, got); !ok {
				t.Errorf("%s: go run ./examples/%s %s prints\n%s\nwhere the README shows\n%s\n(first line not matched: %q)",
					r.where, r.example, strings.Join(r.args, " "), out, strings.Join(r.lines, "\n"), missing)
			}
		})
	}
}

// TestMatch: the rules of quoted output, on planted cases.
func TestMatch(t *testing.T) {
	got := []string{"header 1.5s", "a 1", "b 2", "c 3", "total 6 in 2ms"}
	for _, tc := range []struct {
		quoted []string
		want   bool
	}{
		{[]string{"header …", "a 1", "b 2", "c 3", "total 6 in …"}, true},
		{[]string{"header …", "...", "total 6 in …"}, true},
		{[]string{"...", "b 2", "..."}, true},
		{[]string{"header …", "a 1", "c 3", "total 6 in …"}, false}, // a line left out without "..."
		{[]string{"header …", "a 1", "b 2", "c 3"}, false},          // a line the program prints is missing
		{[]string{"header …", "...", "total 7 in …"}, false},        // a wrong count
		{[]string{"header 2.5s", "..."}, false},                     // a timing quoted literally
	} {
		if ok, _ := match(tc.quoted, got); ok != tc.want {
			t.Errorf("match(%q) = %v, want %v", tc.quoted, ok, tc.want)
		}
	}
	doc := "```console\n$ go run ./examples/spam -checkers 2   # a comment\nline 1\n...\n$ ls\nnot this\n```\n```sh\n$ go run ./examples/phones\nnor this\n```\n"
	runs := quotedRuns(doc, "d.md")
	if len(runs) != 1 || runs[0].example != "spam" || strings.Join(runs[0].args, " ") != "-checkers 2" ||
		strings.Join(runs[0].lines, "|") != "line 1|..." || runs[0].where != "d.md:2" {
		t.Errorf("quotedRuns = %+v", runs)
	}
}
