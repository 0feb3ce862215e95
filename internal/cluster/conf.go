package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// flagNames are the node flags as CLUSTER NODES and nodes.conf write them, in Redis's order.
var flagNames = []struct {
	flag int
	name string
}{
	{FlagMyself, "myself"}, {FlagMaster, "master"}, {FlagSlave, "slave"}, {FlagPFail, "fail?"},
	{FlagFail, "fail"}, {FlagHandshake, "handshake"}, {FlagNoAddr, "noaddr"}, {FlagNoFailover, "nofailover"},
}

func appendFlags(b []byte, flags int) []byte {
	n := len(b)
	for _, f := range flagNames {
		if flags&f.flag != 0 {
			if len(b) > n {
				b = append(b, ',')
			}
			b = append(b, f.name...)
		}
	}
	if len(b) == n {
		b = append(b, "noflags"...)
	}
	return b
}

// slotRanges returns, for each node, the ranges of slots it owns as the slot table says.
func (c *Cluster) slotRanges() map[*node][][2]int {
	m := map[*node][][2]int{}
	var cur *node
	start := 0
	for i := 0; i <= Slots; i++ {
		var n *node
		if i < Slots {
			n = c.slots[i]
		}
		if n == cur {
			continue
		}
		if cur != nil {
			m[cur] = append(m[cur], [2]int{start, i - 1})
		}
		cur, start = n, i
	}
	return m
}

// appendNode appends n's line of CLUSTER NODES (clusterGenNodeDescription), without the newline.
func (c *Cluster) appendNode(b []byte, n *node, ranges [][2]int) []byte {
	b = append(b, n.name[:]...)
	b = append(b, ' ')
	b = append(b, n.ip...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(n.port), 10)
	b = append(b, '@')
	b = strconv.AppendInt(b, int64(n.cport), 10)
	if n.hostname != "" {
		b = append(b, ',')
		b = append(b, n.hostname...)
	}
	b = append(b, ' ')
	b = appendFlags(b, n.flags)
	b = append(b, ' ')
	if n.primary != nil {
		b = append(b, n.primary.name[:]...)
	} else {
		b = append(b, '-')
	}
	epoch := n.configEpoch
	if n.isReplica() && n.primary != nil {
		epoch = n.primary.configEpoch
	}
	link := "disconnected"
	if n.link != nil || n.flags&FlagMyself != 0 {
		link = "connected"
	}
	b = fmt.Appendf(b, " %d %d %d %s", n.pingSent, n.pongReceived, epoch, link)
	for _, r := range ranges {
		if r[0] == r[1] {
			b = fmt.Appendf(b, " %d", r[0])
		} else {
			b = fmt.Appendf(b, " %d-%d", r[0], r[1])
		}
	}
	if n == c.myself {
		for i := range Slots {
			if t := c.migratingTo[i]; t != nil {
				b = fmt.Appendf(b, " [%d->-%s]", i, t.name[:])
			} else if f := c.importingFrom[i]; f != nil {
				b = fmt.Appendf(b, " [%d-<-%s]", i, f.name[:])
			}
		}
	}
	return b
}

// nodesDescription returns CLUSTER NODES' text: a line for each node without a flag of filter.
func (c *Cluster) nodesDescription(filter int) []byte {
	ranges := c.slotRanges()
	var b []byte
	for _, n := range c.order {
		if n.flags&filter != 0 {
			continue
		}
		b = c.appendNode(b, n, ranges[n])
		b = append(b, '\n')
	}
	return b
}

// configText returns the nodes file's contents: CLUSTER NODES without handshake nodes, and the
// epochs.
func (c *Cluster) configText() []byte {
	b := c.nodesDescription(FlagHandshake)
	return fmt.Appendf(b, "vars currentEpoch %d lastVoteEpoch %d\n", c.currentEpoch, c.lastVoteEpoch)
}

// saveConfig writes the nodes file atomically: a temporary file, synced, renamed over the old
// one, and the directory synced, so that a crash leaves the old file or the new one. (Redis
// rewrites the file in place and pads it; the result on disk is the same text.)
func (c *Cluster) saveConfig() error {
	c.todo &^= todoSaveConfig | todoFsyncConfig
	err := writeFileAtomic(c.file, c.configText())
	c.saveErr = err
	return err
}

// saveConfigOrFail saves the nodes file and logs a failure as an error. (Redis exits instead:
// bloomd goes on serving its data, which is safe in its own files, and logs every failed save
// until the disk is fixed; a restart before then starts from the last file saved.)
func (c *Cluster) saveConfigOrFail() {
	if err := c.saveConfig(); err != nil {
		c.log.Error("cannot save the cluster configuration file; votes and epochs since the last save would be lost on a restart", "file", c.file, "err", err)
	}
}

func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// lockFile takes an exclusive lock on path + ".lock", held until the returned Closer closes,
// so that two nodes never share a nodes file.
func lockFile(path string) (io.Closer, error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cluster: cannot open %s.lock to lock the cluster configuration file: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("cluster: the cluster configuration file %s is already used by a different cluster node; make sure that different nodes use different cluster configuration files", path)
		}
		return nil, fmt.Errorf("cluster: cannot lock %s.lock: %w", path, err)
	}
	return f, nil
}

// ErrConfigFile reports a nodes file that cannot be read.
var ErrConfigFile = errors.New("cluster: corrupted cluster config file")

// loadConfig reads the nodes file (clusterLoadConfig); false means there is none yet (missing
// or empty). A damaged file is an error naming the line, and nothing is loaded.
func (c *Cluster) loadConfig() (bool, error) {
	f, err := os.Open(c.file)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cluster: loading the cluster node config from %s: %w", c.file, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() == 0 {
		return false, nil
	}
	return true, c.parseConfig(f, c.file)
}

func (c *Cluster) parseConfig(r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1024+Slots*128)
	lineNo := 0
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s line %d: %s", ErrConfigFile, name, lineNo, fmt.Sprintf(format, args...))
	}
	get := func(id string) (*node, error) {
		if !validNodeID([]byte(id)) {
			return nil, bad("%q is not a node ID", id)
		}
		n := c.nodes[NodeID([]byte(id))]
		if n == nil {
			nid := NodeID([]byte(id))
			n = c.createNode(&nid, 0)
			c.addNode(n)
		}
		return n, nil
	}
	now := c.now()
	for sc.Scan() {
		lineNo++
		argv := strings.Fields(sc.Text())
		if len(argv) == 0 {
			continue
		}
		if strings.EqualFold(argv[0], "vars") {
			if len(argv)%2 == 0 {
				return bad("vars needs name and value pairs")
			}
			for j := 1; j < len(argv); j += 2 {
				v, err := strconv.ParseUint(argv[j+1], 10, 64)
				switch strings.ToLower(argv[j]) {
				case "currentepoch":
					if err != nil {
						return bad("currentEpoch %q is not a number", argv[j+1])
					}
					c.currentEpoch = v
				case "lastvoteepoch":
					if err != nil {
						return bad("lastVoteEpoch %q is not a number", argv[j+1])
					}
					c.lastVoteEpoch = v
				default:
					c.log.Warn("skipping an unknown cluster config variable", "name", argv[j])
				}
			}
			continue
		}
		if len(argv) < 8 {
			return bad("a node line has at least 8 fields, this one %d", len(argv))
		}
		n, err := get(argv[0])
		if err != nil {
			return err
		}
		addr := argv[1]
		n.hostname = ""
		if i := strings.IndexByte(addr, ','); i >= 0 {
			n.hostname, addr = addr[i+1:], addr[:i]
		}
		colon := strings.LastIndexByte(addr, ':')
		if colon < 0 {
			return bad("address %q has no port", argv[1])
		}
		n.ip = cut(addr[:colon], ipLen-1)
		port, bus, hasBus := strings.Cut(addr[colon+1:], "@")
		p, err := strconv.Atoi(port)
		if err != nil || p < 0 || p > 65535 {
			return bad("address %q has a bad port", argv[1])
		}
		n.port, n.cport = p, p+portIncr
		if hasBus {
			bp, err := strconv.Atoi(bus)
			if err != nil || bp < 0 || bp > 65535 {
				return bad("address %q has a bad bus port", argv[1])
			}
			n.cport = bp
		}
		for _, fl := range strings.Split(argv[2], ",") {
			switch strings.ToLower(fl) {
			case "myself":
				if c.myself != nil {
					return bad("two nodes are marked myself")
				}
				c.myself = n
				n.flags |= FlagMyself
			case "master":
				n.flags |= FlagMaster
			case "slave":
				n.flags |= FlagSlave
			case "fail?":
				n.flags |= FlagPFail
			case "fail":
				n.flags |= FlagFail
				n.failTime = now
			case "handshake":
				n.flags |= FlagHandshake
			case "noaddr":
				n.flags |= FlagNoAddr
			case "nofailover":
				n.flags |= FlagNoFailover
			case "noflags":
			default:
				return bad("unknown flag %q", fl)
			}
		}
		if argv[3] != "-" {
			p, err := get(argv[3])
			if err != nil {
				return err
			}
			n.primary = p
			c.addReplica(p, n)
		}
		if v, _ := strconv.ParseInt(argv[4], 10, 64); v != 0 {
			n.pingSent = now
		}
		if v, _ := strconv.ParseInt(argv[5], 10, 64); v != 0 {
			n.pongReceived = now
		}
		if n.isReplica() && n.primary != nil {
			n.configEpoch = 0
		} else {
			e, err := strconv.ParseUint(argv[6], 10, 64)
			if err != nil {
				return bad("config epoch %q is not a number", argv[6])
			}
			n.configEpoch = e
		}
		for _, s := range argv[8:] {
			if s[0] == '[' {
				dash := strings.IndexByte(s, '-')
				end := strings.IndexByte(s, ']')
				if dash < 0 || end < 0 || end < dash+3 {
					return bad("open slot %q is malformed", s)
				}
				slot, err := strconv.Atoi(s[1:dash])
				if err != nil || slot < 0 || slot >= Slots {
					return bad("open slot %q is malformed", s)
				}
				dir := s[dash+1]
				other, err := get(s[dash+3 : end])
				if err != nil {
					return err
				}
				switch dir {
				case '>':
					c.migratingTo[slot] = other
				case '<':
					c.importingFrom[slot] = other
				default:
					return bad("open slot %q is malformed", s)
				}
				continue
			}
			lo, hi, isRange := strings.Cut(s, "-")
			start, err1 := strconv.Atoi(lo)
			stop := start
			var err2 error
			if isRange {
				stop, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || start < 0 || start >= Slots || stop < 0 || stop >= Slots {
				return bad("slot %q is out of range", s)
			}
			for ; start <= stop; start++ {
				c.addSlot(n, start)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w %s: %w", ErrConfigFile, name, err)
	}
	if c.myself == nil {
		return fmt.Errorf("%w %s: no node is marked myself", ErrConfigFile, name)
	}
	c.log.Info("node configuration loaded", "node", c.myself.name.String())
	if m := c.maxEpoch(); m > c.currentEpoch {
		c.currentEpoch = m
	}
	return nil
}
