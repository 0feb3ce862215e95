package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A Source names where a limit comes from. The names are those INFO and the logs print.
type Source string

// The sources Detect reads, in the order Report.Bounds lists them.
const (
	RlimitAS   Source = "rlimit_as"
	RlimitData Source = "rlimit_data"
	CgroupV2   Source = "cgroup_v2"
	CgroupV1   Source = "cgroup_v1"
	GoMemLimit Source = "gomemlimit"
	Machine    Source = "machine"
)

// Describe names the limit for an operator: what it counts and how it is set.
func (s Source) Describe() string {
	switch s {
	case RlimitAS:
		return "address-space limit (RLIMIT_AS: ulimit -v, prlimit --as)"
	case RlimitData:
		return "data-segment limit (RLIMIT_DATA: ulimit -d, prlimit --data)"
	case CgroupV2, CgroupV1:
		return "memory cgroup's limit"
	case GoMemLimit:
		return "GOMEMLIMIT"
	case Machine:
		return "machine's memory"
	}
	return string(s)
}

// A Bound is one limit the process runs under and what of it is in use already, as that limit
// counts use.
type Bound struct {
	Source Source
	Limit  uint64 // bytes
	Used   uint64 // bytes counted against Limit now
	Where  string // the file Limit was read from (below the probe's root), or the variable
}

// Free returns the bytes the process may still take under b: Limit - Used, or 0.
func (b Bound) Free() uint64 {
	if b.Used >= b.Limit {
		return 0
	}
	return b.Limit - b.Used
}

func (b Bound) String() string {
	return fmt.Sprintf("%s %d bytes (%d used) from %s", b.Source, b.Limit, b.Used, b.Where)
}

// A Report is what Detect found.
type Report struct {
	Bounds   []Bound // every limit found, at most one per Source
	Problems []error // files that exist but could not be read or parsed; their limits are unknown
}

// Tightest returns the bound with the least free memory, and false if no limit was found.
// Between bounds with equal free memory the first in Bounds wins.
func (r Report) Tightest() (Bound, bool) {
	var best Bound
	found := false
	for _, b := range r.Bounds {
		if !found || b.Free() < best.Free() {
			best, found = b, true
		}
	}
	return best, found
}

// Find returns the bound of src, and false if there is none.
func (r Report) Find(src Source) (Bound, bool) {
	for _, b := range r.Bounds {
		if b.Source == src {
			return b, true
		}
	}
	return Bound{}, false
}

// A Probe says where Detect reads. The zero Probe reads the running process's own files.
type Probe struct {
	// Root is the directory that stands for "/" ("" is "/"). Tests point it at a fake tree.
	Root string
	// Getenv looks GOMEMLIMIT up; nil means os.Getenv.
	Getenv func(string) string
}

// unlimitedAbove is where a limit stops meaning anything: cgroup v1 reports "no limit" as
// 2^63 rounded down to a page, and rlimits as RLIM_INFINITY (printed "unlimited").
const unlimitedAbove = 1 << 62

// Detect reads every limit it knows (see the package documentation) and what the process or
// its cgroup uses of each. A file that does not exist means no limit of that kind; one that
// exists but cannot be read or parsed is listed in Problems and its limit left out. Detect is
// safe for concurrent use; it costs a few small file reads.
func (p Probe) Detect() Report {
	var r Report
	status, err := p.readKeyed("/proc/self/status")
	r.problem(err)
	limits, err := p.readLimits()
	r.problem(err)
	for _, rl := range []struct {
		src        Source
		name, used string
	}{{RlimitAS, "Max address space", "VmSize"}, {RlimitData, "Max data size", "VmData"}} {
		if v, ok := limits[rl.name]; ok && v < unlimitedAbove {
			r.Bounds = append(r.Bounds, Bound{Source: rl.src, Limit: v, Used: status[rl.used], Where: "/proc/self/limits"})
		}
	}
	if b, ok := p.cgroup(&r); ok {
		r.Bounds = append(r.Bounds, b)
	}
	getenv := p.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if s := getenv("GOMEMLIMIT"); s != "" && s != "off" {
		if v, err := parseGoMemLimit(s); err != nil {
			r.problem(err)
		} else if v < math.MaxInt64 {
			r.Bounds = append(r.Bounds, Bound{Source: GoMemLimit, Limit: v, Used: status["VmRSS"], Where: "GOMEMLIMIT"})
		}
	}
	meminfo, err := p.readKeyed("/proc/meminfo")
	r.problem(err)
	if total, ok := meminfo["MemTotal"]; ok && total > 0 {
		used := uint64(0)
		if avail, ok := meminfo["MemAvailable"]; ok && avail <= total {
			used = total - avail
		}
		r.Bounds = append(r.Bounds, Bound{Source: Machine, Limit: total, Used: used, Where: "/proc/meminfo"})
	}
	return r
}

// Refresh returns b with Used read again, and false if it can no longer be read. For the
// rlimits and GOMEMLIMIT that is one read of /proc/self/status; other sources are detected
// again.
func (p Probe) Refresh(b Bound) (Bound, bool) {
	key := map[Source]string{RlimitAS: "VmSize", RlimitData: "VmData", GoMemLimit: "VmRSS"}[b.Source]
	if key == "" {
		return p.Detect().Find(b.Source)
	}
	status, err := p.readKeyed("/proc/self/status")
	if err != nil {
		return b, false
	}
	used, ok := status[key]
	b.Used = used
	return b, ok
}

func (r *Report) problem(err error) {
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.Problems = append(r.Problems, err)
	}
}

func (p Probe) path(name string) string {
	if p.Root == "" {
		return name
	}
	return filepath.Join(p.Root, name)
}

func (p Probe) read(name string) (string, error) {
	b, err := os.ReadFile(p.path(name))
	if err != nil {
		return "", fmt.Errorf("memlimit: %w", err)
	}
	return string(b), nil
}

// readKeyed reads a "Key:   value [kB]" file (/proc/self/status, /proc/meminfo) into bytes.
// Lines whose value is not a number are left out.
func (p Probe) readKeyed(name string) (map[string]uint64, error) {
	text, err := p.read(name)
	if err != nil {
		return nil, err
	}
	m := map[string]uint64{}
	for line := range strings.Lines(text) {
		key, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			if v > math.MaxUint64/1024 {
				continue
			}
			v *= 1024
		}
		m[key] = v
	}
	return m, nil
}

// readLimits reads the soft limits in bytes of /proc/self/limits, by name; "unlimited" is
// math.MaxUint64.
func (p Probe) readLimits() (map[string]uint64, error) {
	text, err := p.read("/proc/self/limits")
	if err != nil {
		return nil, err
	}
	m := map[string]uint64{}
	for line := range strings.Lines(text) {
		for _, name := range []string{"Max address space", "Max data size"} {
			rest, ok := strings.CutPrefix(line, name)
			if !ok {
				continue
			}
			f := strings.Fields(rest)
			if len(f) < 2 {
				return nil, fmt.Errorf("memlimit: %s: cannot read %q", p.path("/proc/self/limits"), strings.TrimSpace(line))
			}
			if f[0] == "unlimited" {
				m[name] = math.MaxUint64
				continue
			}
			v, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("memlimit: %s: cannot read %q", p.path("/proc/self/limits"), strings.TrimSpace(line))
			}
			m[name] = v
		}
	}
	return m, nil
}

// parseGoMemLimit parses GOMEMLIMIT as the Go runtime does: a byte count with an optional
// suffix B, KiB, MiB, GiB or TiB.
func parseGoMemLimit(s string) (uint64, error) {
	num, mult := s, uint64(1)
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil || num == "" || num[0] == '+' {
		return 0, fmt.Errorf("memlimit: GOMEMLIMIT=%q is not a byte count", s)
	}
	if v > math.MaxInt64/mult {
		return math.MaxInt64, nil
	}
	return v * mult, nil
}
