package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/skipped"
)

func TestMain(m *testing.M) { skipped.Main(m) }

// TestString builds a small program that prints the version, in each way the package doc
// names, from a copy of this package in a new git repository: untagged (a pseudo-version with
// the commit), tagged, with uncommitted changes, without VCS stamping, and with the -X override.
func TestString(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		skipped.Missing(t, "git", "git is not installed; skipping")
	}
	dir := t.TempDir()
	copyFile := func(src, dst string) {
		t.Helper()
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, dst), string(data))
	}
	write(t, filepath.Join(dir, "go.mod"), "module github.com/bloomd/bloom\n\ngo 1.26.0\n")
	copyFile("version.go", "internal/version/version.go")
	copyFile("doc.go", "internal/version/doc.go")
	copyFile("testdata/printversion/main.go", "cmd/printversion/main.go")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "a commit")
	commit := git("rev-parse", "HEAD")

	// build builds the program with the given flags (the machine's GOFLAGS do not apply) and
	// returns what it prints.
	build := func(flags ...string) string {
		t.Helper()
		bin := filepath.Join(t.TempDir(), "printversion")
		cmd := exec.Command("go", append(append([]string{"build", "-o", bin}, flags...), "./cmd/printversion")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOENV=off", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", flags, err, out)
		}
		out, err := exec.Command(bin).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s: prints %q, want %q", what, got, want)
		}
	}

	got := build()
	if v, _, _ := strings.Cut(got, "|"); !strings.HasPrefix(v, "v0.0.0-") || !strings.HasSuffix(v, "-"+commit[:12]) {
		t.Errorf("untagged build: version %q, want a pseudo-version ending in the commit %s", v, commit[:12])
	}
	if !strings.HasSuffix(got, "|"+commit+"|false") {
		t.Errorf("untagged build: %q, want commit %s, not modified", got, commit)
	}
	git("tag", "v1.2.0")
	check("tagged build", build(), "v1.2.0|"+commit+"|false")
	write(t, filepath.Join(dir, "NOTES"), "an uncommitted change\n")
	check("tagged build with a change", build(), "v1.2.0+dirty|"+commit+"|true")
	check("-buildvcs=false", build("-buildvcs=false"), "devel||false")
	check("-X override", build("-buildvcs=false", "-ldflags", "-X github.com/bloomd/bloom/internal/version.override=1.2.0-debian1"), "1.2.0-debian1||false")
}

// TestDescribe covers what a real build does not produce here: a commit recorded without a
// version (go run -buildvcs=true), and no build information at all.
func TestDescribe(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "209f3db1a2b3c4d5e6f708192a3b4c5d6e7f8091"}, {Key: "vcs.modified", Value: "true"}}}
	if got := describe("", bi).version; got != "devel-209f3db1a2b3+dirty" {
		t.Errorf("devel build with a commit: %q", got)
	}
	if got := describe("", nil).version; got != "devel" {
		t.Errorf("no build information: %q", got)
	}
	if got := describe("2.0.0", bi).version; got != "2.0.0" {
		t.Errorf("override: %q", got)
	}
	if String() == "" {
		t.Error("String is empty")
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
