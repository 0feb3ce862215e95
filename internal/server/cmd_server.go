package server

import (
	"fmt"
	"github.com/bloomd/bloom/internal/acl"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bloomd/bloom/internal/procmem"
	"github.com/bloomd/bloom/internal/version"
)

// An InfoProvider adds fields to a section of INFO. A Journal that implements it reports the
// persistence section (Redis's aof_* and rdb_* fields).
type InfoProvider interface {
	// AppendInfo appends "name:value\r\n" lines for section (lower case) to b.
	AppendInfo(b []byte, section string) []byte
}

var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules",
	"bloom", "commandstats", "errorstats", "latencystats", "cluster", "keyspace"}

func infoCmd(c *Conn, args [][]byte) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		switch s := strings.ToLower(string(a)); s {
		case "all", "everything", "default":
			for _, n := range infoSections {
				want[n] = want[n] || s != "default" || !infoNotDefault[n]
			}
		default:
			want[s] = true
		}
	}
	if len(args) == 1 {
		for _, n := range infoSections {
			want[n] = !infoNotDefault[n]
		}
	}
	var b []byte
	for _, sec := range infoSections {
		if !want[sec] {
			continue
		}
		if len(b) > 0 {
			b = append(b, "\r\n"...)
		}
		b = c.srv.appendInfo(b, sec, c)
	}
	c.w.Verbatim(string(b))
}

func field(b []byte, name string, v any) []byte {
	return fmt.Appendf(b, "%s:%v\r\n", name, v)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

func (s *Server) appendInfo(b []byte, sec string, c *Conn) []byte {
	cfg := s.config()
	up := time.Since(s.started)
	switch sec {
	case "server":
		b = append(b, "# Server\r\n"...)
		b = field(b, "redis_version", redisVersion)
		b = field(b, "bloomd_version", version.String())
		mode := "standalone"
		if s.cluster != nil {
			mode = "cluster"
		}
		b = field(b, "redis_mode", mode)
		b = field(b, "os", runtime.GOOS+" "+runtime.GOARCH)
		b = field(b, "arch_bits", strconv.IntSize)
		b = field(b, "go_version", runtime.Version())
		b = field(b, "process_id", os.Getpid())
		b = field(b, "run_id", s.runID)
		b = field(b, "tcp_port", cfg.Port)
		b = field(b, "server_time_usec", time.Now().UnixMicro())
		b = field(b, "uptime_in_seconds", int64(up.Seconds()))
		b = field(b, "uptime_in_days", int64(up.Hours()/24))
		b = field(b, "executable", executable())
	case "clients":
		b = append(b, "# Clients\r\n"...)
		b = field(b, "connected_clients", s.clients.Load())
		b = field(b, "cluster_connections", s.clusterConnections())
		b = field(b, "maxclients", cfg.MaxClients)
		b = field(b, "client_recent_max_input_buffer", 0)
		b = field(b, "client_recent_max_output_buffer", s.obufPeak.max(time.Now().Unix()))
		b = field(b, "blocked_clients", s.stats.blocked.Load())
		b = field(b, "tracking_clients", 0)
		b = field(b, "clients_in_timeout_table", 0)
	case "memory":
		used := s.ks.used.Load()
		b = append(b, "# Memory\r\n"...)
		b = field(b, "used_memory", used)
		b = field(b, "used_memory_human", humanBytes(used))
		b = field(b, "used_memory_dataset", used)
		rss, err := procmem.RSS()
		if err != nil {
			rss = 0 // not Linux: unknown
		}
		b = field(b, "used_memory_rss", rss)
		b = field(b, "used_memory_rss_human", humanBytes(rss))
		goTotal, goHeap := goMemory()
		b = field(b, "go_memory_total", goTotal)
		b = field(b, "go_memory_total_human", humanBytes(goTotal))
		b = field(b, "go_memory_heap_objects", goHeap)
		peak := max(s.peakMem.Load(), used)
		b = field(b, "used_memory_peak", peak)
		b = field(b, "used_memory_peak_human", humanBytes(peak))
		b = field(b, "used_memory_startup", 0)
		b = s.appendScriptMemory(b)
		frag := 0.0
		if used > 0 {
			frag = float64(rss) / float64(used)
		}
		b = fmt.Appendf(b, "mem_fragmentation_ratio:%.2f\r\n", frag)
		b = field(b, "mem_replication_backlog", s.repl.BacklogMemory())
		b = field(b, "mem_allocator", "go")
		b = field(b, "total_system_memory", s.systemMemory())
		b = field(b, "total_system_memory_human", humanBytes(s.systemMemory()))
		b = field(b, "maxmemory", cfg.MaxMemory)
		b = field(b, "maxmemory_human", humanBytes(cfg.MaxMemory))
		b = field(b, "maxmemory_policy", "noeviction")
		limit, src := s.memoryLimit()
		b = field(b, "memory_limit", limit)
		b = field(b, "memory_limit_human", humanBytes(limit))
		b = field(b, "memory_limit_source", src)
	case "persistence":
		b = append(b, "# Persistence\r\n"...)
		loading := 0
		if s.ks.loading.Load() && !s.repl.IsReplica() || s.dataLoading.Load() {
			loading = 1
		}
		b = field(b, "loading", loading)
		if ip, ok := s.journal.(InfoProvider); ok {
			b = ip.AppendInfo(b, sec)
			// bloomd's own field, in latencystats' format: the append-only log's fsyncs.
			h := s.stats.fsyncs.Snapshot()
			b = fmt.Appendf(b, "aof_fsync_latency_usec:p50=%.3f,p99=%.3f,p99.9=%.3f\r\n",
				float64(h.Percentile(50))/1000, float64(h.Percentile(99))/1000, float64(h.Percentile(99.9))/1000)
		} else {
			b = field(b, "aof_enabled", 0)
			b = field(b, "rdb_bgsave_in_progress", 0)
			b = field(b, "aof_rewrite_in_progress", 0)
		}
	case "stats":
		c.publish()
		b = append(b, "# Stats\r\n"...)
		b = field(b, "total_connections_received", s.stats.conns.Load())
		b = field(b, "total_commands_processed", s.totalCommands())
		b = field(b, "instantaneous_ops_per_sec", s.opsRing.opsPerSec())
		b = field(b, "total_net_input_bytes", s.stats.netIn.Load())
		b = field(b, "total_net_output_bytes", s.stats.netOut.Load())
		b = field(b, "rejected_connections", s.stats.rejected.Load())
		b = field(b, "expired_keys", s.stats.expired.Load())
		b = field(b, "evicted_keys", 0)
		b = field(b, "evicted_clients", 0)
		b = field(b, "client_output_buffer_limit_disconnections", s.stats.obufDisconnects.Load()+s.repl.OutputLimitDisconnections())
		b = field(b, "keyspace_hits", 0)
		b = field(b, "keyspace_misses", 0)
		b = field(b, "pubsub_channels", 0)
		b = field(b, "pubsub_patterns", 0)
		b = field(b, "total_error_replies", s.mstats.ErrorReplies())
		b = field(b, "total_rejected_calls", s.mstats.RejectedCalls())
		b = field(b, "oom_rejections", s.stats.oom.Load())
		b = field(b, "acl_access_denied_auth", s.acl.denied[acl.DeniedAuth].Load())
		b = field(b, "acl_access_denied_cmd", s.acl.denied[acl.DeniedCommand].Load())
		b = field(b, "acl_access_denied_key", s.acl.denied[acl.DeniedKey].Load())
		b = field(b, "acl_access_denied_channel", s.acl.denied[acl.DeniedChannel].Load())
		b = s.repl.AppendStats(b)
	case "replication":
		b = s.repl.AppendInfo(b)
	case "modules":
		b = append(b, "# Modules\r\n"...)
		b = fmt.Appendf(b, "module:name=bf,ver=%d,api=1,filters=0,usedby=[],using=[],options=[]\r\n", bfModuleVer)
	case "bloom":
		b = s.appendBloomInfo(b)
	case "cluster":
		b = s.appendClusterInfo(b)
	case "keyspace":
		b = append(b, "# Keyspace\r\n"...)
		if keys, vol := s.ks.count(); keys > 0 {
			var ttl int64
			if vol > 0 {
				ttl = s.ks.avgTTL()
			}
			b = fmt.Appendf(b, "db0:keys=%d,expires=%d,avg_ttl=%d\r\n", keys, vol, ttl)
		}
	case "commandstats", "errorstats", "latencystats", "cpu":
		if sec == "commandstats" || sec == "latencystats" {
			c.publish()
		}
		b = s.appendStatsInfo(b, sec)
	}
	if ip, ok := s.journal.(InfoProvider); ok && sec != "persistence" {
		b = ip.AppendInfo(b, sec)
	}
	return b
}

func executable() string {
	p, _ := os.Executable()
	return p
}

// goMemory returns the Go runtime's own figures: all the memory it has mapped (address space,
// including what it reserved and never touched and what it returned to the system), and the
// bytes of live and not yet swept heap objects.
func goMemory() (total, heapObjects int64) {
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	get := func(s metrics.Sample) int64 {
		if s.Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s.Value.Uint64())
	}
	return get(sample[0]), get(sample[1])
}

// configGetCmd implements CONFIG GET pattern [pattern ...].
func configGetCmd(c *Conn, args [][]byte) {
	cfg := c.srv.config()
	var out []string
	seen := map[string]bool{}
	for _, pat := range args[2:] {
		for _, p := range params {
			if !seen[p.name] && globMatch([]byte(strings.ToLower(string(pat))), []byte(p.name)) {
				seen[p.name] = true
				out = append(out, p.name, p.get(&cfg))
			}
		}
		out = appendAliases(out, seen, strings.ToLower(string(pat)), &cfg)
	}
	c.w.Map(len(out) / 2)
	for _, s := range out {
		c.w.BulkString(s)
	}
}

// configSetCmd implements CONFIG SET name value [name value ...], all or nothing.
func configSetCmd(c *Conn, args [][]byte) {
	if len(args)%2 != 0 {
		c.w.Error(arityError("config|set"))
		return
	}
	s := c.srv
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	next := s.cfg
	seen := map[string]bool{}
	for i := 2; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		p := findParam(name)
		if p == nil {
			c.w.Error("ERR Unknown option or number of arguments for CONFIG SET - '" + cString(args[i], 128) + "'")
			return
		}
		if seen[name] {
			c.w.Error("ERR CONFIG SET failed (possibly related to argument '" + name + "') - duplicate parameter")
			return
		}
		seen[name] = true
		if !p.mutable {
			c.w.Error("ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config")
			return
		}
		if err := p.set(&next, string(args[i+1])); err != nil {
			c.w.Error("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + err.Error())
			return
		}
	}
	old := s.cfg
	s.cfg = next
	s.applyConfig(&next)
	s.applyPersist(&old, &next)
	s.applyRepl(&next)
	s.applyCluster(&next)
	if next.Timeout != old.Timeout {
		s.rearmTimeouts()
	}
	s.log.Info("configuration changed", "by", c.addr, "settings", len(args)/2-1)
	c.w.OK()
}

func configResetStatCmd(c *Conn, args [][]byte) {
	s := c.srv
	s.stats.conns.Store(0)
	s.stats.rejected.Store(0)
	s.stats.commands.Store(0)
	s.stats.expired.Store(0)
	s.stats.oom.Store(0)
	for _, o := range s.clientList() {
		o.ncmds.Store(0)
	}
	c.statCalls, c.statNs = 0, 0
	s.mstats.Reset()
	s.peakMem.Store(s.ks.used.Load())
	c.w.OK()
}

// writeCommandInfo writes one command as COMMAND and COMMAND INFO describe it (Redis 7's ten
// fields).
func (c *Conn) writeCommandInfo(cmd *Command) {
	c.w.Array(10)
	c.w.BulkString(cmd.Name)
	arity := cmd.Arity
	if cmd.Flags&FlagModule != 0 {
		arity = -1 // modules register with arity -1 and check it themselves
	}
	c.w.Int(int64(arity))
	var flags []string
	for _, f := range flagNames {
		if cmd.Flags&f.f != 0 && f.f != FlagExclusive {
			flags = append(flags, f.name)
		}
	}
	c.w.Set(len(flags))
	for _, f := range flags {
		c.w.Simple(f)
	}
	c.w.Int(int64(cmd.FirstKey))
	c.w.Int(int64(cmd.LastKey))
	c.w.Int(int64(cmd.Step))
	var cats []string
	var specs []acl.KeySpec
	if cmd.acl != nil {
		cats, specs = cmd.acl.Categories.Names(), cmd.acl.KeySpecs
	}
	c.w.Set(len(cats))
	for _, cat := range cats {
		c.w.Simple(cat)
	}
	c.w.Set(0) // tips
	c.w.Array(len(specs))
	for _, ks := range specs {
		if ks.Notes != "" {
			c.w.Map(4)
			c.w.BulkString("notes")
			c.w.BulkString(ks.Notes)
		} else {
			c.w.Map(3)
		}
		c.w.BulkString("flags")
		flags := ks.Flags.Names()
		c.w.Set(len(flags))
		for _, f := range flags {
			c.w.Simple(f)
		}
		c.w.BulkString("begin_search")
		c.w.Map(2)
		c.w.BulkString("type")
		if ks.Keyword != "" {
			c.w.BulkString("keyword")
			c.w.BulkString("spec")
			c.w.Map(2)
			c.w.BulkString("keyword")
			c.w.BulkString(ks.Keyword)
			c.w.BulkString("startfrom")
			c.w.Int(int64(ks.StartFrom))
		} else {
			c.w.BulkString("index")
			c.w.BulkString("spec")
			c.w.Map(1)
			c.w.BulkString("index")
			c.w.Int(int64(ks.Index))
		}
		c.w.BulkString("find_keys")
		c.w.Map(2)
		c.w.BulkString("type")
		if ks.KeyNum {
			c.w.BulkString("keynum")
			c.w.BulkString("spec")
			c.w.Map(3)
			c.w.BulkString("keynumidx")
			c.w.Int(0)
			c.w.BulkString("firstkey")
			c.w.Int(int64(ks.FirstKey))
			c.w.BulkString("keystep")
			c.w.Int(int64(ks.KeyStep))
			continue
		}
		c.w.BulkString("range")
		c.w.BulkString("spec")
		c.w.Map(3)
		c.w.BulkString("lastkey")
		c.w.Int(int64(ks.LastKey))
		c.w.BulkString("keystep")
		c.w.Int(int64(ks.KeyStep))
		c.w.BulkString("limit")
		c.w.Int(0)
	}
	subs := sortedSubcommands(cmd)
	c.w.Array(len(subs))
	for _, sub := range subs {
		c.writeCommandInfo(sub)
	}
}

func sortedSubcommands(cmd *Command) []*Command {
	var subs []*Command
	for _, s := range cmd.Subcommands {
		subs = append(subs, s)
	}
	slices.SortFunc(subs, func(a, b *Command) int { return strings.Compare(a.Name, b.Name) })
	return subs
}

func commandCmd(c *Conn, args [][]byte) {
	cmds := c.srv.mux.Commands()
	c.w.Array(len(cmds))
	for _, cmd := range cmds {
		c.writeCommandInfo(cmd)
	}
}

func commandCountCmd(c *Conn, args [][]byte) { c.w.Int(int64(len(c.srv.mux.Commands()))) }

func commandListCmd(c *Conn, args [][]byte) {
	cmds := c.srv.mux.Commands()
	c.w.Array(len(cmds))
	for _, cmd := range cmds {
		c.w.BulkString(cmd.Name)
	}
}

func commandInfoCmd(c *Conn, args [][]byte) {
	if len(args) == 2 {
		commandCmd(c, args)
		return
	}
	c.w.Array(len(args) - 2)
	for _, a := range args[2:] {
		if cmd := c.srv.mux.Lookup(a); cmd != nil {
			c.writeCommandInfo(cmd)
		} else {
			c.w.NullArray()
		}
	}
}

// commandDocsCmd answers COMMAND DOCS [name ...] with each command's summary, since and group:
// what redis-cli reads to build its help and hints.
func commandDocsCmd(c *Conn, args [][]byte) {
	var cmds []*Command
	if len(args) == 2 {
		cmds = c.srv.mux.Commands()
	} else {
		for _, a := range args[2:] {
			if cmd := c.srv.mux.Lookup(a); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.w.Map(len(cmds))
	for _, cmd := range cmds {
		c.w.BulkString(cmd.Name)
		c.writeDocs(cmd)
	}
}

func (c *Conn) writeDocs(cmd *Command) {
	subs := sortedSubcommands(cmd)
	n := 3
	if len(subs) > 0 {
		n++
	}
	c.w.Map(n)
	c.w.BulkString("summary")
	c.w.BulkString(cmd.Summary)
	c.w.BulkString("since")
	c.w.BulkString(cmd.Since)
	c.w.BulkString("group")
	c.w.BulkString(cmd.Group)
	if len(subs) > 0 {
		c.w.BulkString("subcommands")
		c.w.Map(len(subs))
		for _, sub := range subs {
			c.w.BulkString(sub.Name)
			c.writeDocs(sub)
		}
	}
}
