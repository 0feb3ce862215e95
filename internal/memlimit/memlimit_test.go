package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fake trees below copy the shape of the real files (Linux 6.x): /proc/self/limits with its
// fixed columns, status and meminfo in kB, cgroup v1 reporting "no limit" as 2^63 rounded down
// to a 4 KiB page, cgroup v2 as "max".

const limitsUnlimited = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max file size             unlimited            unlimited            bytes     
Max data size             unlimited            unlimited            bytes     
Max stack size            8388608              unlimited            bytes     
Max core file size        0                    unlimited            bytes     
Max resident set          unlimited            unlimited            bytes     
Max processes             96364                96364                processes 
Max open files            20000                20000                files     
Max locked memory         8388608              8388608              bytes     
Max address space         unlimited            unlimited            bytes     
Max file locks            unlimited            unlimited            locks     
`

const status = "Name:\tbloomd\nVmPeak:\t  1300000 kB\nVmSize:\t  1200000 kB\nVmRSS:\t    20000 kB\nVmData:\t   300000 kB\nThreads:\t5\n"

const meminfo = "MemTotal:       24683620 kB\nMemFree:        23737356 kB\nMemAvailable:   24225536 kB\nBuffers:            1234 kB\n"

const v1Unlimited = "9223372036854771712\n"

// tree writes files (path -> content) under a new root; a content of "\x00unreadable" makes a
// directory where the file should be, which reading fails on with an error other than
// not-exist.
func tree(t *testing.T, files map[string]string) Probe {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if content == "\x00unreadable" {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Probe{Root: root, Getenv: func(string) string { return "" }}
}

// base is a process with no limit but the machine's memory, on a pure cgroup v2 system.
func base() map[string]string {
	return map[string]string{
		"/proc/self/limits":    limitsUnlimited,
		"/proc/self/status":    status,
		"/proc/meminfo":        meminfo,
		"/proc/self/cgroup":    "0::/\n",
		"/proc/self/mountinfo": "30 22 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func only(t *testing.T, r Report, src Source) Bound {
	t.Helper()
	b, ok := r.Find(src)
	if !ok {
		t.Fatalf("no %s bound in %v (problems %v)", src, r.Bounds, r.Problems)
	}
	return b
}

func TestMachineOnly(t *testing.T) {
	r := tree(t, base()).Detect()
	if len(r.Problems) != 0 {
		t.Fatalf("problems: %v", r.Problems)
	}
	if len(r.Bounds) != 1 {
		t.Fatalf("bounds: %v, want the machine's only", r.Bounds)
	}
	b, _ := r.Tightest()
	want := Bound{Source: Machine, Limit: 24683620 * 1024, Used: (24683620 - 24225536) * 1024, Where: "/proc/meminfo"}
	if b != want {
		t.Fatalf("tightest %+v, want %+v", b, want)
	}
}

func TestRlimits(t *testing.T) {
	limits := strings.Replace(limitsUnlimited, "Max address space         unlimited   ", "Max address space         12000000000 ", 1)
	limits = strings.Replace(limits, "Max data size             unlimited   ", "Max data size             2000000000  ", 1)
	r := tree(t, with(base(), "/proc/self/limits", limits)).Detect()
	as, data := only(t, r, RlimitAS), only(t, r, RlimitData)
	if as.Limit != 12000000000 || as.Used != 1200000*1024 {
		t.Errorf("RLIMIT_AS %+v", as)
	}
	if data.Limit != 2000000000 || data.Used != 300000*1024 {
		t.Errorf("RLIMIT_DATA %+v", data)
	}
	if b, _ := r.Tightest(); b.Source != RlimitData || b.Free() != 2000000000-300000*1024 {
		t.Errorf("tightest %+v, want RLIMIT_DATA", b)
	}
}

func TestRlimitUsedPastLimit(t *testing.T) {
	limits := strings.Replace(limitsUnlimited, "Max address space         unlimited   ", "Max address space         1000000     ", 1)
	r := tree(t, with(base(), "/proc/self/limits", limits)).Detect()
	if b, _ := r.Tightest(); b.Source != RlimitAS || b.Free() != 0 {
		t.Errorf("tightest %+v: a VmSize past the limit leaves 0 free", b)
	}
}

func TestCgroupV2(t *testing.T) {
	files := with(base(),
		"/proc/self/cgroup", "0::/system.slice/bloomd.service\n",
		"/sys/fs/cgroup/system.slice/bloomd.service/memory.max", "1073741824\n",
		"/sys/fs/cgroup/system.slice/bloomd.service/memory.current", "104857600\n",
		"/sys/fs/cgroup/system.slice/bloomd.service/memory.stat", "anon 50000000\nfile 54857600\nactive_file 14857600\ninactive_file 40000000\n",
		"/sys/fs/cgroup/system.slice/memory.max", "max\n",
	)
	b := only(t, tree(t, files).Detect(), CgroupV2)
	want := Bound{Source: CgroupV2, Limit: 1 << 30, Used: 104857600 - 40000000, Where: "/sys/fs/cgroup/system.slice/bloomd.service/memory.max"}
	if b != want {
		t.Fatalf("got %+v, want %+v", b, want)
	}
}

func TestCgroupV2Max(t *testing.T) {
	files := with(base(),
		"/proc/self/cgroup", "0::/user.slice\n",
		"/sys/fs/cgroup/user.slice/memory.max", "max\n",
		"/sys/fs/cgroup/user.slice/memory.current", "1000\n",
	)
	r := tree(t, files).Detect()
	if _, ok := r.Find(CgroupV2); ok || len(r.Problems) != 0 {
		t.Fatalf("memory.max \"max\" gave %v, problems %v", r.Bounds, r.Problems)
	}
}

// A parent's smaller limit binds the child: the walk goes up to the mount point.
func TestCgroupV2NestedParentBinds(t *testing.T) {
	files := with(base(),
		"/proc/self/cgroup", "0::/a/b/c\n",
		"/sys/fs/cgroup/a/b/c/memory.max", "8000000000\n",
		"/sys/fs/cgroup/a/b/c/memory.current", "1000000\n",
		"/sys/fs/cgroup/a/b/memory.max", "max\n",
		"/sys/fs/cgroup/a/memory.max", "500000000\n",
		"/sys/fs/cgroup/a/memory.current", "300000000\n",
	)
	b := only(t, tree(t, files).Detect(), CgroupV2)
	if b.Where != "/sys/fs/cgroup/a/memory.max" || b.Free() != 200000000 {
		t.Fatalf("got %+v, want /a's limit with 200000000 free", b)
	}
}

// Inside a container the cgroup2 mount's root is the container's cgroup, and /proc/self/cgroup
// may still show the full path (no cgroup namespace): the mount's root is cut off it.
func TestCgroupV2ContainerMountRoot(t *testing.T) {
	files := with(base(),
		"/proc/self/cgroup", "0::/kubepods/pod1/ctr\n",
		"/proc/self/mountinfo", "1200 1100 0:30 /kubepods/pod1/ctr /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n",
		"/sys/fs/cgroup/memory.max", "268435456\n",
		"/sys/fs/cgroup/memory.current", "0\n",
	)
	b := only(t, tree(t, files).Detect(), CgroupV2)
	if b.Limit != 256<<20 || b.Where != "/sys/fs/cgroup/memory.max" {
		t.Fatalf("got %+v", b)
	}
}

// With a cgroup namespace the path is "/" and the mount's root is "/" too.
func TestCgroupV2Namespace(t *testing.T) {
	files := with(base(),
		"/proc/self/cgroup", "0::/\n",
		"/sys/fs/cgroup/memory.max", "100000000\n",
		"/sys/fs/cgroup/memory.current", "20000000\n",
	)
	if b := only(t, tree(t, files).Detect(), CgroupV2); b.Free() != 80000000 {
		t.Fatalf("got %+v", b)
	}
}

// A hybrid system (this is how many CI machines are set up): v1 controllers including memory,
// and a cgroup2 mount without it. The v1 memory controller is the one in force.
func TestCgroupV1Hybrid(t *testing.T) {
	files := with(base(),
		"/proc/self/cgroup", "9:name=systemd:/\n4:memory:/process_api/job1\n3:cpu,cpuacct:/\n0::/\n",
		"/proc/self/mountinfo", strings.Join([]string{
			"30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
			"31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct",
			"34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
			"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
		}, "\n")+"\n",
		"/sys/fs/cgroup/memory/process_api/job1/memory.limit_in_bytes", "2147483648\n",
		"/sys/fs/cgroup/memory/process_api/job1/memory.usage_in_bytes", "7888896\n",
		"/sys/fs/cgroup/memory/process_api/job1/memory.stat", "cache 3000000\ninactive_file 2502656\ntotal_inactive_file 2502656\n",
		"/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes", v1Unlimited,
		"/sys/fs/cgroup/memory/memory.limit_in_bytes", v1Unlimited,
		"/sys/fs/cgroup/unified/memory.max", "1000\n", // not the memory controller's hierarchy here
	)
	r := tree(t, files).Detect()
	if _, ok := r.Find(CgroupV2); ok {
		t.Fatalf("cgroup v2 read on a system whose memory controller is v1: %v", r.Bounds)
	}
	b := only(t, r, CgroupV1)
	want := Bound{Source: CgroupV1, Limit: 2 << 30, Used: 7888896 - 2502656, Where: "/sys/fs/cgroup/memory/process_api/job1/memory.limit_in_bytes"}
	if b != want || len(r.Problems) != 0 {
		t.Fatalf("got %+v (problems %v), want %+v", b, r.Problems, want)
	}
	if tb, _ := r.Tightest(); tb != want {
		t.Fatalf("tightest %+v", tb)
	}
}

func TestCgroupV1Unlimited(t *testing.T) {
	files := with(base(),
		"/proc/self/cgroup", "4:memory:/docker/abc\n",
		"/proc/self/mountinfo", "34 30 0:31 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
		"/sys/fs/cgroup/memory/memory.limit_in_bytes", v1Unlimited,
		"/sys/fs/cgroup/memory/memory.usage_in_bytes", "100\n",
	)
	r := tree(t, files).Detect()
	if _, ok := r.Find(CgroupV1); ok || len(r.Problems) != 0 {
		t.Fatalf("an unlimited v1 cgroup gave %v, problems %v", r.Bounds, r.Problems)
	}
}

// A mount point with a space is escaped as \040 in mountinfo.
func TestCgroupEscapedMountPoint(t *testing.T) {
	files := with(base(),
		"/proc/self/cgroup", "0::/x\n",
		"/proc/self/mountinfo", `30 22 0:27 / /sys/fs/cg\040two rw - cgroup2 cgroup2 rw`+"\n",
		"/sys/fs/cg two/x/memory.max", "4096\n",
		"/sys/fs/cg two/x/memory.current", "0\n",
	)
	if b := only(t, tree(t, files).Detect(), CgroupV2); b.Limit != 4096 {
		t.Fatalf("got %+v", b)
	}
}

// Files that exist but cannot be read are problems; the limits that could be read still count.
func TestUnreadable(t *testing.T) {
	limits := strings.Replace(limitsUnlimited, "Max address space         unlimited   ", "Max address space         12000000000 ", 1)
	files := with(base(),
		"/proc/self/limits", limits,
		"/proc/self/status", "\x00unreadable",
		"/proc/self/cgroup", "0::/svc\n",
		"/sys/fs/cgroup/svc/memory.max", "\x00unreadable",
	)
	r := tree(t, files).Detect()
	if len(r.Problems) != 2 {
		t.Fatalf("problems %v, want status and memory.max", r.Problems)
	}
	for _, p := range r.Problems {
		if !strings.Contains(p.Error(), "status") && !strings.Contains(p.Error(), "memory.max") {
			t.Errorf("unexpected problem %v", p)
		}
	}
	// The address-space limit is known; its use is not (status unreadable): it counts as 0.
	if b := only(t, r, RlimitAS); b.Limit != 12000000000 || b.Used != 0 {
		t.Errorf("RLIMIT_AS %+v", b)
	}
	if _, ok := r.Find(CgroupV2); ok {
		t.Error("an unreadable memory.max gave a bound")
	}
}

func TestGarbage(t *testing.T) {
	files := with(base(),
		"/proc/self/limits", "Max address space         lots                 unlimited            bytes\n",
		"/proc/self/cgroup", "0::/svc\n",
		"/sys/fs/cgroup/svc/memory.max", "12 GB\n",
	)
	r := tree(t, files).Detect()
	if len(r.Problems) != 2 || len(r.Bounds) != 1 {
		t.Fatalf("bounds %v problems %v: want the machine's and two problems", r.Bounds, r.Problems)
	}
}

// No /proc at all (another OS, or a sandbox): no limit, no problem.
func TestNothing(t *testing.T) {
	r := tree(t, nil).Detect()
	if len(r.Bounds) != 0 || len(r.Problems) != 0 {
		t.Fatalf("got %v %v", r.Bounds, r.Problems)
	}
	if _, ok := r.Tightest(); ok {
		t.Fatal("Tightest found a bound in nothing")
	}
}

func TestGoMemLimit(t *testing.T) {
	for _, c := range []struct {
		env  string
		want uint64 // 0: no bound
		bad  bool
	}{
		{"off", 0, false}, {"", 0, false}, {"1GiB", 1 << 30, false}, {"512MiB", 512 << 20, false},
		{"100000000", 1e8, false}, {"64KiB", 64 << 10, false}, {"2TiB", 2 << 40, false}, {"1000B", 1000, false},
		{"9223372036854775807", 0, false}, {"1GB", 0, true}, {"-1", 0, true}, {"MiB", 0, true}, {"+5", 0, true},
	} {
		p := tree(t, base())
		p.Getenv = func(k string) string {
			if k == "GOMEMLIMIT" {
				return c.env
			}
			return ""
		}
		r := p.Detect()
		b, ok := r.Find(GoMemLimit)
		switch {
		case c.bad && len(r.Problems) != 1:
			t.Errorf("GOMEMLIMIT=%q: problems %v, want one", c.env, r.Problems)
		case c.want == 0 && ok:
			t.Errorf("GOMEMLIMIT=%q: bound %+v, want none", c.env, b)
		case c.want != 0 && (!ok || b.Limit != c.want || b.Used != 20000*1024):
			t.Errorf("GOMEMLIMIT=%q: %+v, want limit %d used VmRSS", c.env, b, c.want)
		}
	}
}

// The tightest bound is the one with the least free memory, not the smallest limit.
func TestTightestByFree(t *testing.T) {
	r := Report{Bounds: []Bound{
		{Source: RlimitAS, Limit: 10 << 30, Used: 9 << 30},
		{Source: CgroupV2, Limit: 4 << 30, Used: 1 << 30},
		{Source: Machine, Limit: 64 << 30, Used: math.MaxUint64},
	}}
	if b, _ := r.Tightest(); b.Source != Machine {
		t.Fatalf("tightest %+v", b)
	}
	r.Bounds = r.Bounds[:2]
	if b, _ := r.Tightest(); b.Source != RlimitAS {
		t.Fatalf("tightest %+v", b)
	}
}

// The real files of the machine the test runs on parse without problems, and the machine's
// memory is found.
func TestThisMachine(t *testing.T) {
	if _, err := os.Stat("/proc/self/limits"); err != nil {
		t.Skip("no /proc here")
	}
	r := Probe{}.Detect()
	if len(r.Problems) != 0 {
		t.Fatalf("problems: %v", r.Problems)
	}
	b := only(t, r, Machine)
	if b.Limit < 64<<20 || b.Used > b.Limit {
		t.Fatalf("machine %+v", b)
	}
	t.Logf("bounds: %v", r.Bounds)
}

func TestCgroupDir(t *testing.T) {
	p := tree(t, with(base(),
		"/proc/self/cgroup", "4:memory:/a/b\n0::/\n",
		"/proc/self/mountinfo", "34 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"))
	if dir, v, ok := p.CgroupDir(); !ok || dir != "/sys/fs/cgroup/memory/a/b" || v != CgroupV1 {
		t.Fatalf("v1: %q %q %v", dir, v, ok)
	}
	p = tree(t, with(base(), "/proc/self/cgroup", "0::/x.slice/y.service\n"))
	if dir, v, ok := p.CgroupDir(); !ok || dir != "/sys/fs/cgroup/x.slice/y.service" || v != CgroupV2 {
		t.Fatalf("v2: %q %q %v", dir, v, ok)
	}
	if _, _, ok := tree(t, nil).CgroupDir(); ok {
		t.Fatal("a cgroup found without /proc")
	}
}

func TestRefresh(t *testing.T) {
	limits := strings.Replace(limitsUnlimited, "Max address space         unlimited   ", "Max address space         12000000000 ", 1)
	p := tree(t, with(base(), "/proc/self/limits", limits))
	b := only(t, p.Detect(), RlimitAS)
	if err := os.WriteFile(filepath.Join(p.Root, "proc/self/status"), []byte("VmSize:\t 5000000 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if nb, ok := p.Refresh(b); !ok || nb.Used != 5000000*1024 || nb.Limit != b.Limit {
		t.Fatalf("refreshed %+v %v", nb, ok)
	}
	m := only(t, p.Detect(), Machine)
	if nb, ok := p.Refresh(m); !ok || nb != m {
		t.Fatalf("refreshed machine %+v %v, want %+v", nb, ok, m)
	}
	os.Remove(filepath.Join(p.Root, "proc/self/status"))
	if _, ok := p.Refresh(b); ok {
		t.Fatal("refreshed without a status file")
	}
}

// BenchmarkRefresh measures re-reading the address space in use, as bloomd does before a large
// allocation under RLIMIT_AS.
func BenchmarkRefresh(b *testing.B) {
	bound := Bound{Source: RlimitAS}
	for b.Loop() {
		Probe{}.Refresh(bound)
	}
}

// BenchmarkDetect measures one Detect of this process's real files: what a large allocation
// under an address-space limit pays to re-read the address space in use.
func BenchmarkDetect(b *testing.B) {
	for b.Loop() {
		Probe{}.Detect()
	}
}
