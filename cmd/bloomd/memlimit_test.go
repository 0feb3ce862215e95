package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/memlimit"
	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// These tests run the real binary under real limits: an address-space rlimit (prlimit --as) and,
// where the machine lets a test make one, a memory cgroup. Oversized commands must be refused
// with an error while other clients go on, accepted sizes must not kill the process, nothing
// acknowledged may be lost, and data that cannot fit at start-up must stop bloomd cleanly.

// prlimit returns the path of util-linux's prlimit, or skips the test (fails it with
// BLOOM_REQUIRE_PRLIMIT=1, as .ci/run sets) when it is missing.
func prlimit(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("prlimit")
	if err != nil {
		msg := "prlimit (util-linux) is not installed"
		if os.Getenv("BLOOM_REQUIRE_PRLIMIT") == "1" {
			t.Fatal(msg + "; BLOOM_REQUIRE_PRLIMIT=1 makes this a failure")
		}
		t.Skip(msg + "; set BLOOM_REQUIRE_PRLIMIT=1 to make this a failure")
	}
	return p
}

func client(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, ReadTimeout: 30 * time.Second, PoolSize: 2})
	t.Cleanup(func() { c.Close() })
	return c
}

// memInfo returns the INFO memory fields.
func memInfo(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	s, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for line := range strings.Lines(s) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// vmSize returns a process's address-space size in bytes.
func vmSize(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatal("no VmSize")
	return 0
}

// loadChunkHeader is a valid BF.SCANDUMP header of one empty sub-filter of the given bytes.
func loadChunkHeader(bytes uint64) []byte {
	const rate = 0.01
	bpe := -math.Log(rate) / 0.480453013918201
	le := binary.LittleEndian
	b := le.AppendUint64(nil, 0) // items
	b = le.AppendUint32(b, 1)    // sub-filters
	b = le.AppendUint32(b, 5)    // options: FORCE64|NOROUND
	b = le.AppendUint32(b, 2)    // expansion
	b = le.AppendUint64(b, bytes)
	b = le.AppendUint64(b, bytes*8)
	b = le.AppendUint64(b, 0) // items in the link
	b = le.AppendUint64(b, math.Float64bits(rate))
	b = le.AppendUint64(b, math.Float64bits(bpe))
	b = le.AppendUint32(b, uint32(math.Ceil(0.693147180559945*bpe)))
	b = le.AppendUint64(b, 1000) // capacity
	return append(b, 0)          // n2
}

// capacityFor returns the capacity whose BF.RESERVE at 0.01 takes about bytes.
func capacityFor(bytes int64) int64 {
	bpe := -math.Log(0.01/2) / 0.480453013918201
	return int64(float64(bytes) * 8 / bpe)
}

// steadyWriter adds items to its own filter on its own connection until stop is closed (at
// most n), and returns the items that were acknowledged and any error.
func steadyWriter(c *redis.Client, key string, n int, stop <-chan struct{}) (acked []string, err error) {
	ctx := context.Background()
	for i := range n {
		select {
		case <-stop:
			return acked, nil
		default:
		}
		item := fmt.Sprint("item-", i)
		if err := c.Do(ctx, "BF.ADD", key, item).Err(); err != nil {
			return acked, fmt.Errorf("BF.ADD %s %s: %w", key, item, err)
		}
		acked = append(acked, item)
	}
	return acked, nil
}

// wantRefusal checks that err is the refusal of what ("create" or "grow") naming source.
func wantRefusal(t *testing.T, name string, err error, what, source string) {
	t.Helper()
	prefix := "ERR Insufficient memory to " + what + " filter: "
	if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), source) || !strings.Contains(err.Error(), " bytes (") {
		t.Errorf("%s: %v, want %q... naming %s", name, err, prefix, source)
	}
}

// oversized sends what a user under a memory limit could send: a filter of 18 GB (the report
// that started this), one past the ceiling by BF.INSERT, a BF.LOADCHUNK header past it, and the
// growth of a scalable filter past it. Each gets the error and creates nothing.
func oversized(t *testing.T, c *redis.Client, source string, ceiling int64) {
	t.Helper()
	ctx := context.Background()
	wantRefusal(t, "BF.RESERVE 1e-300", c.Do(ctx, "BF.RESERVE", "tinyerr", "1e-300", "100000000").Err(), "create", source)
	wantRefusal(t, "BF.INSERT CAPACITY", c.Do(ctx, "BF.INSERT", "ins", "CAPACITY", capacityFor(2*ceiling), "ITEMS", "a").Err(), "create", source)
	wantRefusal(t, "BF.LOADCHUNK header", c.Do(ctx, "BF.LOADCHUNK", "chunk", 1, loadChunkHeader(uint64(2*ceiling)&^7)).Err(), "create", source)
	if err := c.Do(ctx, "BF.RESERVE", "g", "0.01", "1000", "EXPANSION", capacityFor(2*ceiling)/1000).Err(); err != nil {
		t.Fatalf("BF.RESERVE g: %v", err)
	}
	// 1100 items into a link of 1000: those found new fill it (a few are false positives,
	// reported 0), and then every new item needs the refused growth.
	args := []any{"BF.MADD", "g"}
	for i := range 1100 {
		args = append(args, i)
	}
	res, err := c.Do(ctx, args...).Slice()
	if err != nil || len(res) != 1100 {
		t.Fatalf("BF.MADD g: %v %v", len(res), err)
	}
	added, refused := 0, 0
	for _, r := range res {
		switch r := r.(type) {
		case int64:
			added += int(r)
		case error:
			refused++
			wantRefusal(t, "growth of g", r, "grow", source)
		}
	}
	if added != 1000 || refused == 0 {
		t.Errorf("BF.MADD g: %d added, %d refused; want 1000 and some", added, refused)
	}
	if n, err := c.Exists(ctx, "tinyerr", "ins", "chunk").Result(); n != 0 || err != nil {
		t.Errorf("refused keys exist: %d %v", n, err)
	}
	if info, err := c.Do(ctx, "BF.INFO", "g", "FILTERS").Slice(); err != nil || info[0] != int64(1) {
		t.Errorf("g after refused growth: %v %v", info, err)
	}
}

// TestAddressSpaceLimit runs bloomd under prlimit --as: the ceiling comes from RLIMIT_AS,
// oversized commands are refused while another client keeps adding, a filter of most of the
// ceiling is accepted (and re-made after DEL, which must reuse the freed memory), and after
// kill -9 every acknowledged add is there.
func TestAddressSpaceLimit(t *testing.T) {
	pl := prlimit(t)
	bin := build(t)
	dir := t.TempDir()
	const as = 3 << 30
	d := startWrapped(t, []string{pl, fmt.Sprintf("--as=%d", as)}, bin, dir, "--appendfsync", "always", "--save", "")
	if vm := vmSize(t, d.cmd.Process.Pid); vm > as-(700<<20) {
		t.Skipf("bloomd's address space at start (%d bytes) leaves too little under %d for this test", vm, as)
	}
	c := client(t, d.addr)
	info := memInfo(t, c)
	ceiling, _ := strconv.ParseInt(info["memory_limit"], 10, 64)
	if info["memory_limit_source"] != "rlimit_as" || ceiling <= 0 || ceiling >= as {
		t.Fatalf("INFO memory under prlimit --as=%d: %v", as, info)
	}

	stop := make(chan struct{})
	var acked []string
	var werr error
	var wg sync.WaitGroup
	wg.Go(func() { acked, werr = steadyWriter(client(t, d.addr), "steady", 200000, stop) })

	oversized(t, c, "rlimit_as", ceiling)
	ctx := context.Background()
	// A filter of 80% of the ceiling fits. Once deleted, its memory stays mapped (Go does not
	// unmap heap), so making it again may be refused, but must not kill the process.
	near := capacityFor(ceiling * 8 / 10)
	if err := c.Do(ctx, "BF.RESERVE", "near", "0.01", near).Err(); err != nil {
		t.Fatalf("a filter of 80%% of the ceiling: %v", err)
	}
	if err := c.Do(ctx, "BF.ADD", "near", "x").Err(); err != nil {
		t.Fatal(err)
	}
	remade := 0
	for round := range 3 {
		c.Del(ctx, "near")
		err := c.Do(ctx, "BF.RESERVE", "near", "0.01", near).Err()
		switch {
		case err == nil:
			remade++
		case strings.HasPrefix(err.Error(), "ERR Insufficient memory to create filter: ") && strings.Contains(err.Error(), "rlimit_as"):
		default:
			t.Fatalf("round %d: making the filter again: %v", round, err)
		}
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	time.Sleep(200 * time.Millisecond) // let the writer run alongside a little longer
	close(stop)
	wg.Wait()
	if werr != nil || len(acked) == 0 {
		t.Fatalf("the other client: %d acknowledged, %v\n%s", len(acked), werr, d.stderr)
	}

	// kill -9, then restart without the limit: every acknowledged add is there.
	d.cmd.Process.Kill()
	<-d.exited
	if !strings.Contains(d.stderr.String(), `msg="memory limit" source=rlimit_as`) {
		t.Errorf("the start-up log does not name the limit:\n%s", d.stderr)
	}
	d = start(t, bin, dir)
	c = client(t, d.addr)
	pipe := c.Pipeline()
	cmds := make([]*redis.Cmd, len(acked))
	for i, item := range acked {
		cmds[i] = pipe.Do(ctx, "BF.EXISTS", "steady", item)
	}
	pipe.Exec(ctx)
	for i, cmd := range cmds {
		if v, err := cmd.Int(); v != 1 || err != nil {
			t.Fatalf("acknowledged %s lost: %d %v", acked[i], v, err)
		}
	}
	if n, _ := c.Exists(ctx, "g", "tinyerr", "ins", "chunk").Result(); n != 1 {
		t.Errorf("after restart %d of g, tinyerr, ins, chunk exist; want g only", n)
	}
	t.Logf("%d adds acknowledged alongside the refusals, all present after kill -9; ceiling %d bytes under --as=%d; the deleted filter made again %d times of 3", len(acked), ceiling, as, remade)
	d.stop(t)
}

// TestStartupLoadPastLimit makes data files holding a 150 MB filter, then starts bloomd on them
// with an address space that leaves less than that: from the log and then from a snapshot, it
// exits with status 1 saying what does not fit and under which limit, and leaves the files as
// they were; without the limit they load.
func TestStartupLoadPastLimit(t *testing.T) {
	pl := prlimit(t)
	bin := build(t)
	dir := t.TempDir()
	d := start(t, bin, dir, "--appendfsync", "always", "--save", "")
	base := vmSize(t, d.cmd.Process.Pid)
	c := client(t, d.addr)
	ctx := context.Background()
	if err := c.Do(ctx, "BF.RESERVE", "big", "0.01", capacityFor(150<<20)).Err(); err != nil {
		t.Fatal(err)
	}
	c.Do(ctx, "BF.ADD", "big", "x")
	d.cmd.Process.Kill() // the filter is in the log only
	<-d.exited

	limited := func(what string) {
		t.Helper()
		before := redistest.FileDigests(t, dir)
		cmd := exec.Command(pl, fmt.Sprintf("--as=%d", base+150<<20), bin, "--port", fmt.Sprint(freePort(t)), "--dir", dir)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("%s: bloomd under the limit: %v\n%s", what, err, out)
		}
		for _, want := range []string{"Insufficient memory to create filter", "rlimit_as", "the data files are left as they were", what} {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("%s: the output lacks %q:\n%s", what, want, out)
			}
		}
		if !maps.Equal(before, redistest.FileDigests(t, dir)) {
			t.Fatalf("%s: the failed start changed the data files", what)
		}
	}
	limited(`"BF.RESERVE" "big"`)

	d = start(t, bin, dir, "--save", "")
	c = client(t, d.addr)
	if v, err := c.Do(ctx, "BF.EXISTS", "big", "x").Int(); v != 1 || err != nil {
		t.Fatalf("after the refused start: %d %v", v, err)
	}
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	d.stop(t)
	limited(`filter "big"`)
}

// TestCgroupLimit runs bloomd inside a memory cgroup made for the test (a child of the test's
// own, limit 512 MiB), where the machine allows it: the ceiling comes from the cgroup,
// oversized commands are refused, and a filter of most of the ceiling, with its pages touched,
// does not get the process killed.
func TestCgroupLimit(t *testing.T) {
	dir, version, ok := memlimit.Probe{}.CgroupDir()
	if !ok {
		t.Skip("no memory cgroup: /proc/self/cgroup names none")
	}
	cg := filepath.Join(dir, fmt.Sprintf("bloomd-test-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Skipf("cannot make a cgroup under %s: %v", dir, err)
	}
	t.Cleanup(func() {
		for range 50 { // the killed process leaves the cgroup shortly after
			if err := os.Remove(cg); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("cannot remove the test cgroup %s", cg)
	})
	const limit = 512 << 20
	limitFile := "memory.max"
	if version == memlimit.CgroupV1 {
		limitFile = "memory.limit_in_bytes"
	}
	if err := os.WriteFile(filepath.Join(cg, limitFile), []byte(fmt.Sprint(limit)), 0o644); err != nil {
		t.Skipf("cannot set %s in %s (%s): %v", limitFile, cg, version, err)
	}
	// Into the cgroup before bloomd starts: the shell moves itself, then becomes bloomd.
	if err := exec.Command("sh", "-c", "echo $$ > "+filepath.Join(cg, "cgroup.procs")).Run(); err != nil {
		t.Skipf("cannot move a process into %s: %v", cg, err)
	}
	bin := build(t)
	d := startWrapped(t, []string{"sh", "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(cg, "cgroup.procs")}, bin, t.TempDir(), "--appendonly", "no", "--save", "")
	c := client(t, d.addr)
	info := memInfo(t, c)
	ceiling, _ := strconv.ParseInt(info["memory_limit"], 10, 64)
	if info["memory_limit_source"] != string(version) || ceiling <= 0 || ceiling >= limit {
		t.Fatalf("INFO memory in a %s cgroup of %d bytes: %v", version, limit, info)
	}

	stop := make(chan struct{})
	var acked []string
	var werr error
	var wg sync.WaitGroup
	wg.Go(func() { acked, werr = steadyWriter(client(t, d.addr), "steady", 200000, stop) })
	oversized(t, c, string(version), ceiling)

	// 80% of the ceiling, every page written: adds of random items set bits all over it.
	ctx := context.Background()
	if err := c.Do(ctx, "BF.RESERVE", "near", "0.01", capacityFor(ceiling*8/10)).Err(); err != nil {
		t.Fatalf("a filter of 80%% of the ceiling: %v", err)
	}
	for i := range 200 {
		args := []any{"BF.MADD", "near"}
		for j := range 1000 {
			args = append(args, i*1000+j)
		}
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("filling the filter: %v\n%s", err, d.stderr)
		}
	}
	close(stop)
	wg.Wait()
	if werr != nil || len(acked) == 0 {
		t.Fatalf("the other client: %d acknowledged, %v", len(acked), werr)
	}
	if rss := memInfo(t, c)["used_memory_rss"]; rss == "" {
		t.Fatal("no used_memory_rss")
	}
	select {
	case err := <-d.exited:
		t.Fatalf("bloomd died in the cgroup: %v\n%s", err, d.stderr)
	default:
	}
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
}

// startLimited runs bin under prlimit --as=as and returns its combined output once it exits,
// and its exit status; a bloomd that is still serving after it answered PING is stopped with
// SIGTERM first (then ok is set).
func startLimited(t *testing.T, pl, bin string, as uint64) (out string, status int, d *daemon) {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(pl, fmt.Sprintf("--as=%d", as), bin, "--port", fmt.Sprint(port), "--dir", t.TempDir(), "--save", "")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d = &daemon{cmd: cmd, addr: fmt.Sprintf("127.0.0.1:%d", port), stderr: &buf, exited: make(chan error, 1)}
	go func() { d.exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-d.exited:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return buf.String(), ee.ExitCode(), nil
			}
			return buf.String(), 0, nil
		default:
		}
		if line, err := roundTrip(d.addr, "PING"); err == nil && line == "+PONG\r\n" {
			return "", -1, d
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("bloomd under --as=%d neither served nor exited within 10s:\n%s", as, buf.String())
	return "", 0, nil
}

// TestAddressSpaceBaseline: bloomd built as README.md says (without cgo) starts with far less
// address space than a cgo build (whose threads each reserve a glibc malloc arena), so that
// prlimit --as=2000000000 leaves filters hundreds of MB instead of 113 MiB; a limit that leaves
// little is warned about in the log; one that leaves none stops bloomd at start with one line,
// not a goroutine dump; and a cgo build under a limit says it should be built without cgo.
func TestAddressSpaceBaseline(t *testing.T) {
	pl := prlimit(t)
	bin := build(t)
	if info, err := buildinfo.ReadFile(bin); err != nil {
		t.Fatal(err)
	} else {
		for _, s := range info.Settings {
			if s.Key == "CGO_ENABLED" && s.Value != "0" {
				t.Fatalf("the test build has CGO_ENABLED=%s", s.Value)
			}
		}
	}
	d := start(t, bin, t.TempDir())
	base := vmSize(t, d.cmd.Process.Pid)
	d.stop(t)
	t.Logf("address space at start, without cgo: %d bytes", base)
	if base > 1500<<20 {
		t.Errorf("bloomd starts with %d bytes of address space; a build without cgo should need less than 1.5 GiB", base)
	}

	// 2000000000 and 1700000000 bytes: bloomd serves, with room for filters, and warns.
	var inUse uint64 // address space at start under the limit, as the log reports it
	for _, tc := range []struct {
		as      uint64
		atLeast int64
	}{{2000000000, 400 << 20}, {1700000000, 100 << 20}} {
		out, status, d := startLimited(t, pl, bin, tc.as)
		if d == nil {
			t.Fatalf("--as=%d: exited with status %d:\n%s", tc.as, status, out)
		}
		c := client(t, d.addr)
		info := memInfo(t, c)
		limit, _ := strconv.ParseInt(info["memory_limit"], 10, 64)
		if info["memory_limit_source"] != "rlimit_as" || limit < tc.atLeast {
			t.Errorf("--as=%d: memory_limit %s (%s), want at least %d", tc.as, info["memory_limit"], info["memory_limit_source"], tc.atLeast)
		}
		c.Close()
		d.stop(t)
		if log := d.stderr.String(); !strings.Contains(log, "leaves little memory for filters") {
			t.Errorf("--as=%d (memory_limit %d): no warning in the log:\n%s", tc.as, limit, log)
		}
		t.Logf("--as=%d: memory_limit %d", tc.as, limit)
		if m := regexp.MustCompile(`msg="memory limit" .* in_use=(\d+)`).FindStringSubmatch(d.stderr.String()); m != nil {
			inUse, _ = strconv.ParseUint(m[1], 10, 64)
		}
	}

	// A limit just above what bloomd has at start: no room for filters. It stops at start,
	// status 1, with one line saying why after its start-up log, and no goroutine dump.
	if inUse == 0 {
		t.Fatal("the log did not say what was in use under the limit")
	}
	as := inUse + 100<<20
	out, status, d := startLimited(t, pl, bin, as)
	if d != nil {
		d.stop(t)
		t.Fatalf("--as=%d (%d in use at start under --as=1700000000): bloomd serves", as, inUse)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if status != 1 || !strings.HasPrefix(last, "bloomd: server: the address-space limit (RLIMIT_AS: ulimit -v, prlimit --as) of ") ||
		!strings.Contains(last, "leaves no memory for filters") || strings.Contains(out, "goroutine ") || strings.Contains(out, "fatal error") {
		t.Fatalf("--as=%d: status %d, output:\n%s", as, status, out)
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "time=") {
			t.Errorf("--as=%d: a line besides the log and the reason: %q", as, l)
		}
	}

	// A cgo build (where a C compiler is at hand) under a limit warns that it is one.
	if cc, err := exec.Command("go", "env", "CC").Output(); err != nil || len(bytes.TrimSpace(cc)) == 0 {
		return
	} else if _, err := exec.LookPath(string(bytes.TrimSpace(cc))); err != nil {
		t.Logf("no C compiler (%s): the cgo build is not checked", bytes.TrimSpace(cc))
		return
	}
	cgoBin := buildWith(t, "CGO_ENABLED=1")
	d = start(t, cgoBin, t.TempDir())
	cgoBase := vmSize(t, d.cmd.Process.Pid)
	d.stop(t)
	t.Logf("address space at start, with cgo: %d bytes", cgoBase)
	out, status, d = startLimited(t, pl, cgoBin, 4<<30)
	if d == nil {
		t.Fatalf("the cgo build under --as=%d: status %d\n%s", 4<<30, status, out)
	}
	d.stop(t)
	if !strings.Contains(d.stderr.String(), "built with cgo") || !strings.Contains(d.stderr.String(), "CGO_ENABLED=0") {
		t.Errorf("the cgo build under a limit does not say so:\n%s", d.stderr)
	}
}
