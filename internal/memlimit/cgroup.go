package memlimit

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// cgroupFiles are the names one cgroup version uses for the limit, the usage, and the
// statistic of inactive file cache (reclaimable, so not counted as used).
type cgroupFiles struct {
	src             Source
	fstype          string
	limit, usage    string
	inactive        string // key in memory.stat
	controllerInOpt bool   // v1: the mount's super options name the controller
}

var (
	v1Files = cgroupFiles{CgroupV1, "cgroup", "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file", true}
	v2Files = cgroupFiles{CgroupV2, "cgroup2", "memory.max", "memory.current", "inactive_file", false}
)

// cgroup returns the tightest memory limit of the process's cgroup and the cgroups above it,
// and false if none has one.
func (p Probe) cgroup(r *Report) (Bound, bool) {
	files, mountPoint, dir, err := p.findCgroup()
	if err != nil {
		r.problem(err)
		return Bound{}, false
	}
	if dir == "" {
		return Bound{}, false
	}
	return p.walkCgroups(r, files, mountPoint, dir)
}

// CgroupDir returns the directory of the process's memory cgroup (a path in the probed tree,
// without Root) and its version, CgroupV1 or CgroupV2; ok is false if there is none.
func (p Probe) CgroupDir() (dir string, version Source, ok bool) {
	files, _, dir, err := p.findCgroup()
	if err != nil || dir == "" {
		return "", "", false
	}
	return dir, files.src, true
}

// findCgroup finds the memory cgroup's directory and the mount point of its hierarchy; dir is ""
// if there is none. A v1 memory controller, when /proc/self/cgroup lists one, is the one in
// force (a controller is attached to one hierarchy only); otherwise the v2 hierarchy's.
func (p Probe) findCgroup() (files cgroupFiles, mountPoint, dir string, err error) {
	text, err := p.read("/proc/self/cgroup")
	if err != nil {
		return files, "", "", err
	}
	var v1Path, v2Path string
	var haveV1, haveV2 bool
	for line := range strings.Lines(text) {
		// hierarchy-ID:controller-list:cgroup-path
		_, rest, ok1 := strings.Cut(strings.TrimRight(line, "\n"), ":")
		ctrls, cgPath, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			continue
		}
		if ctrls == "" {
			v2Path, haveV2 = cgPath, true
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			if c == "memory" {
				v1Path, haveV1 = cgPath, true
			}
		}
	}
	files, cgPath := v2Files, v2Path
	switch {
	case haveV1:
		files, cgPath = v1Files, v1Path
	case !haveV2:
		return files, "", "", nil
	}
	mounts, err := p.read("/proc/self/mountinfo")
	if err != nil {
		return files, "", "", err
	}
	mountPoint, dir, _ = findCgroupDir(mounts, files, cgPath)
	return files, mountPoint, dir, nil
}

// findCgroupDir finds the mount of the hierarchy in mountinfo and returns its mount point and
// the directory of the cgroup at cgPath in it. The mount's root (field 4) is the cgroup that
// the mount shows at its mount point: inside a container it is the container's own cgroup, and
// cgPath is below it, or outside it when cgroup namespaces make the two disagree, in which case
// the mount point itself is the best guess (as the Go runtime does).
func findCgroupDir(mountinfo string, files cgroupFiles, cgPath string) (mountPoint, dir string, ok bool) {
	for line := range strings.Lines(mountinfo) {
		pre, post, found := strings.Cut(strings.TrimRight(line, "\n"), " - ")
		if !found {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 || g[0] != files.fstype {
			continue
		}
		if files.controllerInOpt {
			if len(g) < 3 || !hasOption(g[2], "memory") {
				continue
			}
		}
		root, mp := unescapeMount(f[3]), unescapeMount(f[4])
		rel, under := cutPathPrefix(cgPath, root)
		if !under {
			if !ok {
				mountPoint, dir, ok = mp, mp, true // keep looking for a mount that holds cgPath
			}
			continue
		}
		return mp, path.Join(mp, rel), true
	}
	return mountPoint, dir, ok
}

func hasOption(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// cutPathPrefix returns p relative to prefix, and whether p is prefix or below it.
func cutPathPrefix(p, prefix string) (string, bool) {
	p, prefix = path.Clean("/"+p), path.Clean("/"+prefix)
	if prefix == "/" {
		return p, true
	}
	if p == prefix {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(p, prefix+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, and so on).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// walkCgroups reads the limit of dir and of every cgroup above it up to the mount point, and
// returns the one that leaves the least free: a parent's limit binds its children too.
func (p Probe) walkCgroups(r *Report, files cgroupFiles, mountPoint, dir string) (Bound, bool) {
	var best Bound
	found := false
	for d := dir; ; d = path.Dir(d) {
		if b, ok := p.cgroupLevel(r, files, d); ok && (!found || b.Free() < best.Free()) {
			best, found = b, true
		}
		if d == mountPoint || d == "/" || !strings.HasPrefix(d, mountPoint) {
			break
		}
	}
	return best, found
}

// cgroupLevel reads one cgroup's limit and working set.
func (p Probe) cgroupLevel(r *Report, files cgroupFiles, dir string) (Bound, bool) {
	name := path.Join(dir, files.limit)
	text, err := p.read(name)
	if err != nil {
		r.problem(err)
		return Bound{}, false
	}
	s := strings.TrimSpace(text)
	if s == "max" {
		return Bound{}, false
	}
	limit, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		r.problem(fmt.Errorf("memlimit: %s: %q is not a byte count", p.path(name), s))
		return Bound{}, false
	}
	if limit >= unlimitedAbove {
		return Bound{}, false
	}
	b := Bound{Source: files.src, Limit: limit, Where: name}
	usage, err := p.read(path.Join(dir, files.usage))
	if err != nil {
		r.problem(err)
		return b, true
	}
	used, err := strconv.ParseUint(strings.TrimSpace(usage), 10, 64)
	if err != nil {
		r.problem(fmt.Errorf("memlimit: %s: %q is not a byte count", p.path(path.Join(dir, files.usage)), strings.TrimSpace(usage)))
		return b, true
	}
	if stat, err := p.read(path.Join(dir, "memory.stat")); err == nil {
		for line := range strings.Lines(stat) {
			if v, ok := strings.CutPrefix(line, files.inactive+" "); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil && n <= used {
					used -= n
				}
			}
		}
	} else {
		r.problem(err)
	}
	b.Used = used
	return b, true
}
