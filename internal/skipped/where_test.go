package skipped

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestWhereTheLineGoes runs go test, as the README's test command does, on a package whose
// one test skips for a missing program, in a new session (no terminal, as in CI or an IDE), and
// finds the summary line in what the go command printed: through a pipe, with -v, with -json
// (inside an output event, the stream still JSON), and, with standard output in a file the
// shell truncated, on standard error, the file's own lines intact.
func TestWhereTheLineGoes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the go command's output is found through /proc, on Linux only")
	}
	const want = "github.com/bloomd/bloom/internal/skipped/testdata/skipper: 1 test skipped, not run: frobnicator missing (1 test)"
	goTest := func(stdout *os.File, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command("go", append(append([]string{"test", "-count=1"}, args...), "./testdata/skipper")...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if stdout != nil {
			cmd.Stdout = stdout
		}
		if err := cmd.Run(); err != nil {
			t.Fatalf("go test %v: %v\n%s%s", args, err, o.String(), e.String())
		}
		return o.String(), e.String()
	}
	for _, flags := range [][]string{nil, {"-v"}} {
		out, errOut := goTest(nil, flags...)
		if strings.Count(out, want) != 1 || !strings.Contains(out, "ok  \tgithub.com/bloomd/bloom/internal/skipped/testdata/skipper") {
			t.Errorf("go test %v: the summary is not in its output once:\nstdout:\n%s\nstderr:\n%s", flags, out, errOut)
		}
	}

	out, _ := goTest(nil, "-json")
	found := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct{ Action, Output string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("go test -json printed a line that is not JSON: %q", line)
		}
		found = found || ev.Action == "output" && strings.Contains(ev.Output, want)
	}
	if !found {
		t.Errorf("go test -json: no output event holds the summary:\n%s", out)
	}

	log, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	_, errOut := goTest(log)
	data, _ := os.ReadFile(log.Name())
	if !strings.Contains(errOut, want) || !strings.HasPrefix(string(data), "ok  \tgithub.com/bloomd/bloom/internal/skipped/testdata/skipper") || strings.Contains(string(data), "not run") {
		t.Errorf("go test > file: the summary should be on stderr and the file intact:\nfile:\n%s\nstderr:\n%s", data, errOut)
	}
}
