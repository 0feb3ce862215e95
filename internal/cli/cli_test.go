package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/version"
)

// result is what one in-process run of the bloom command produced.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the bloom command in-process with the given standard input and arguments.
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return runReader(t, strings.NewReader(stdin), args...)
}

func runReader(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, stdin, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// ok fails the test unless the run succeeded, and returns its standard output.
func (r result) ok(t *testing.T) string {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", r.code, r.stderr)
	}
	return r.stdout
}

// fails fails the test unless the run exited with status 2 and an error that contains every
// one of want; nothing must be written to stdout.
func (r result) fails(t *testing.T, want ...string) {
	t.Helper()
	if r.code != exitError {
		t.Fatalf("exit status %d, want %d; stdout:\n%s\nstderr:\n%s", r.code, exitError, r.stdout, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q does not say %q", r.stderr, w)
		}
	}
	if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
		t.Errorf("stderr shows a panic:\n%s", r.stderr)
	}
}

// testdata returns the path of a file in testdata/.
func testdata(name string) string { return filepath.Join("testdata", name) }

// tempPath returns a path in a fresh temporary directory.
func tempPath(t *testing.T, name string) string { return filepath.Join(t.TempDir(), name) }

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRootHelpListsSubcommands(t *testing.T) {
	out := run(t, "", "--help").ok(t)
	for _, sub := range []string{"calc", "build", "test", "info", "merge", "convert", "push", "pull"} {
		if !strings.Contains(out, sub) {
			t.Errorf("bloom --help does not list %s:\n%s", sub, out)
		}
	}
}

func TestEverySubcommandHelpHasAnExample(t *testing.T) {
	for _, sub := range []string{"calc", "build", "test", "info", "merge", "convert", "push", "pull"} {
		out := run(t, "", sub, "--help").ok(t)
		if !strings.Contains(out, "Examples:") || !strings.Contains(out, "bloom "+sub) {
			t.Errorf("bloom %s --help shows no example:\n%s", sub, out)
		}
	}
}

func TestUnknownCommandAndFlag(t *testing.T) {
	run(t, "", "frobnicate").fails(t, "unknown command", "frobnicate", "bloom --help")
	run(t, "", "calc", "--frob").fails(t, "unknown flag: --frob", "bloom calc --help")
}

// TestRootUsage: bare bloom is a usage error (usage on stderr, status 2); --version prints the
// version on stdout, the one internal/version gives bloomd too (cmd/bloomd's TestOneVersion).
func TestRootUsage(t *testing.T) {
	r := run(t, "")
	if r.code != exitError || r.stdout != "" || !strings.Contains(r.stderr, "Usage:") {
		t.Fatalf("bare bloom: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"calc", "-h"}, {"help", "calc"}} {
		if out := run(t, "", args...).ok(t); !strings.Contains(out, "Usage:") {
			t.Errorf("%v: status 0 but no usage on stdout: %q", args, out)
		}
	}
	if out := run(t, "", "--version").ok(t); out != "bloom "+version.String()+"\n" {
		t.Fatalf("--version: %q", out)
	}
}

// TestFlagDefaultsSaidOnce: no flag's help states its default twice, or "(default auto)".
func TestFlagDefaultsSaidOnce(t *testing.T) {
	for _, sub := range []string{"build", "calc", "test", "info", "merge", "convert", "push", "pull"} {
		out := run(t, "", sub, "--help").ok(t)
		for _, line := range strings.Split(out, "\n") {
			if strings.Count(line, "default") > 1 || strings.Contains(line, "(default auto)") {
				t.Errorf("bloom %s --help: %q", sub, line)
			}
		}
	}
}

// TestOutputNeedsForce: every command that writes a filter file refuses to replace one without
// --force, before doing any work, and names the user's path when the directory is missing.
func TestOutputNeedsForce(t *testing.T) {
	items := testdata("items/nums.txt.gz")
	f := tempPath(t, "f.bloom")
	run(t, "", "build", "-n", "1000", "-o", f, items).ok(t)
	before := mustRead(t, f)
	run(t, "", "build", "-n", "2000", "-o", f, items).fails(t, f+" already exists; pass --force to replace it")
	run(t, "", "convert", f, f, "--to", "guava").fails(t, "already exists; pass --force")
	run(t, "", "merge", f, f, "-o", f).fails(t, "already exists; pass --force")
	if !bytes.Equal(before, mustRead(t, f)) {
		t.Fatal("a refused command changed the file")
	}
	run(t, "", "build", "-n", "2000", "--force", "-o", f, items).ok(t)
	if bytes.Equal(before, mustRead(t, f)) {
		t.Fatal("--force did not replace the file")
	}
	missing := filepath.Join(t.TempDir(), "no", "such", "x.bloom")
	r := run(t, "", "build", "-n", "10", "-o", missing, items)
	r.fails(t, "cannot write "+missing+": the directory "+filepath.Dir(missing)+" does not exist")
	if strings.Contains(r.stderr, ".tmp") {
		t.Fatalf("the error names the temporary file: %q", r.stderr)
	}
}

// TestCheckArgs: known subcommands and flags pass without running anything; unknown ones fail.
func TestCheckArgs(t *testing.T) {
	for _, ok := range [][]string{
		{"calc", "-n", "1M", "-p", "0.01"},
		{"build", "-n", "200000", "-p", "0.001", "-o", "phones.bloom", "phones.txt"},
		{"test", "missing-file.bloom", "x"},
		{"help", "build"},
		{"--help"},
	} {
		if err := CheckArgs(ok); err != nil {
			t.Errorf("CheckArgs(%q) = %v; want nil", ok, err)
		}
	}
	for _, bad := range [][]string{
		{"calculate", "-n", "1M"},
		{"calc", "--capacity", "1M"},
		{"build", "--no-such-flag", "x.txt"},
	} {
		if err := CheckArgs(bad); err == nil {
			t.Errorf("CheckArgs(%q) = nil; want an error", bad)
		}
	}
}
