package server

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomd/bloom/internal/metrics"
	"github.com/bloomd/bloom/internal/procmem"
	"github.com/bloomd/bloom/internal/redact"
	"github.com/bloomd/bloom/internal/resp"
)

// The monitoring commands that Redis's tools use (SLOWLOG, LATENCY, MONITOR, MEMORY STATS,
// CLIENT NO-EVICT/NO-TOUCH) and the INFO sections over internal/metrics's counters.

// Client flags, as CLIENT LIST and CLIENT INFO print them.
const (
	clientMonitor uint32 = 1 << iota
	clientNoEvict
	clientNoTouch
)

func (c *Conn) flagString() string {
	f := c.cflags.Load()
	var b []byte
	if f&clientMonitor != 0 {
		b = append(b, 'O')
	}
	if f&clientNoEvict != 0 {
		b = append(b, 'e')
	}
	if f&clientNoTouch != 0 {
		b = append(b, 'T')
	}
	if len(b) == 0 {
		return "N"
	}
	return string(b)
}

// attachStats gives every command and subcommand its statistics, and its redaction rule
// (internal/redact), both found by its name.
func (s *Server) attachStats() {
	var walk func(cmd *Command)
	walk = func(cmd *Command) {
		cmd.stats = s.mstats.Command(cmd.Name)
		cmd.mask = redact.For(cmd.Name)
		for _, sub := range cmd.Subcommands {
			walk(sub)
		}
	}
	for _, cmd := range s.mux.Commands() {
		walk(cmd)
	}
}

// Stats returns the server's statistics, which INFO and the metrics endpoint read.
func (s *Server) Stats() *metrics.Stats { return s.mstats }

func registerStatsCommands(mx *Mux) {
	const (
		a  = FlagAdmin
		ls = FlagLoading | FlagStale
		f  = FlagFast
	)
	container := func(name, since, group, summary string) *Command {
		c := &Command{Name: name, Arity: -2, Flags: 0, Since: since, Group: group, Summary: summary,
			Subcommands: map[string]*Command{}}
		mx.Handle(c)
		return c
	}
	sub := func(parent *Command, name string, arity int, flags Flags, summary string, h Handler) {
		parent.Subcommands[name] = &Command{Name: parent.Name + "|" + name, Arity: arity, Flags: flags,
			Since: parent.Since, Group: parent.Group, Summary: summary, Handler: h}
	}
	slowlog := container("slowlog", "2.2.12", "server", "A container for slow log commands.")
	sub(slowlog, "get", -2, a|ls, "Returns the slow log's entries.", slowlogGetCmd)
	sub(slowlog, "len", 2, a|ls, "Returns the number of entries in the slow log.", slowlogLenCmd)
	sub(slowlog, "reset", 2, a|ls, "Clears all entries from the slow log.", slowlogResetCmd)
	sub(slowlog, "help", 2, ls, "Show helpful text about the different subcommands", helpCmd(
		"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:", "    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name", "LEN", "    Return the length of the slowlog.",
		"RESET", "    Reset the slowlog.", "HELP", "    Print this help."))
	latency := container("latency", "2.8.13", "server", "A container for latency diagnostics commands.")
	sub(latency, "latest", 2, a|ls, "Returns the latest latency samples for all events.", latencyLatestCmd)
	sub(latency, "history", 3, a|ls, "Returns timestamp-latency samples for an event.", latencyHistoryCmd)
	sub(latency, "reset", -2, a|ls, "Resets the latency data for one or more events.", latencyResetCmd)
	sub(latency, "help", 2, ls, "Returns helpful text about the different subcommands.", helpCmd(
		"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"LATEST", "    Return the latest latency samples for all events.",
		"HISTORY <event>", "    Return time-latency samples for the specified event.",
		"RESET [<event> ...]", "    Reset latency data of one or more <event> classes.",
		"    (default: reset all data for all event classes)",
		"HELP", "    Print this help."))
	mx.Handle(&Command{Name: "monitor", Arity: 1, Flags: a | FlagNoMulti | ls, Since: "1.0.0", Group: "server",
		Summary: "Listens for all requests received by the server in real-time.", Handler: monitorCmd})
	memory := mx.m["memory"]
	sub(memory, "stats", 2, 0, "Returns details about memory usage.", memoryStatsCmd)
	sub(memory, "doctor", 2, 0, "Outputs a memory problems report.", func(c *Conn, _ [][]byte) {
		c.w.Verbatim("Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.")
	})
	mx.Handle(&Command{Name: "strlen", Arity: 2, Flags: FlagReadonly | f, FirstKey: 1, LastKey: 1, Step: 1, Since: "2.2.0",
		Group: "string", Summary: "Returns the length of a string value.", Handler: strlenCmd})
	client := mx.m["client"]
	sub(client, "no-evict", 3, a|ls|f, "Sets the client eviction mode of the connection.", clientFlagCmd(clientNoEvict))
	sub(client, "no-touch", 3, ls|f, "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", clientFlagCmd(clientNoTouch))
}

// clientFlagCmd answers CLIENT NO-EVICT and NO-TOUCH ON|OFF: bloomd evicts no client and keeps
// no LRU, so the flag is only recorded, for CLIENT INFO.
func clientFlagCmd(flag uint32) Handler {
	return func(c *Conn, args [][]byte) {
		switch {
		case equalFold(args[2], "on"):
			c.cflags.Or(flag)
		case equalFold(args[2], "off"):
			c.cflags.And(^flag)
		default:
			c.w.Error(errSyntax)
			return
		}
		c.w.OK()
	}
}

func slowlogGetCmd(c *Conn, args [][]byte) {
	n := int64(10)
	if len(args) > 3 {
		c.w.Error(arityError("slowlog|get"))
		return
	}
	if len(args) == 3 {
		v, ok := resp.ParseInt(args[2])
		if !ok || v < -1 {
			c.w.Error("ERR count should be greater than or equal to -1")
			return
		}
		n = v
	}
	if n > 1<<30 {
		n = -1
	}
	entries := c.srv.mstats.SlowLog.Get(int(n))
	c.w.Array(len(entries))
	for _, e := range entries {
		c.w.Array(6)
		c.w.Int(e.ID)
		c.w.Int(e.Time)
		c.w.Int(e.Micros)
		c.w.Array(len(e.Args))
		for _, a := range e.Args {
			c.w.BulkString(a)
		}
		c.w.BulkString(e.Addr)
		c.w.BulkString(e.Name)
	}
}

func slowlogLenCmd(c *Conn, _ [][]byte) { c.w.Int(int64(c.srv.mstats.SlowLog.Len())) }

func slowlogResetCmd(c *Conn, _ [][]byte) {
	c.srv.mstats.SlowLog.Reset()
	c.w.OK()
}

func latencyLatestCmd(c *Conn, _ [][]byte) {
	events := c.srv.mstats.Latency.Latest()
	c.w.Array(len(events))
	for _, e := range events {
		c.w.Array(4)
		c.w.BulkString(e.Name)
		c.w.Int(e.Latest.Time)
		c.w.Int(e.Latest.Millis)
		c.w.Int(e.Max)
	}
}

func latencyHistoryCmd(c *Conn, args [][]byte) {
	samples := c.srv.mstats.Latency.History(string(args[2]))
	c.w.Array(len(samples))
	for _, s := range samples {
		c.w.Array(2)
		c.w.Int(s.Time)
		c.w.Int(s.Millis)
	}
}

func latencyResetCmd(c *Conn, args [][]byte) {
	events := make([]string, 0, len(args)-2)
	for _, a := range args[2:] {
		events = append(events, string(a))
	}
	c.w.Int(int64(c.srv.mstats.Latency.Reset(events...)))
}

// memoryStatsCmd answers MEMORY STATS with the fields of Redis's that bloomd can give; the
// allocator's own fields are the Go runtime's figures.
func memoryStatsCmd(c *Conn, _ [][]byte) {
	s := c.srv
	used := s.ks.used.Load()
	keys, _ := s.ks.count()
	rss, err := procmem.RSS()
	if err != nil {
		rss = 0 // not Linux: unknown
	}
	perKey := int64(0)
	if keys > 0 {
		perKey = used / int64(keys)
	}
	frag := 0.0
	if used > 0 {
		frag = float64(rss) / float64(used)
	}
	c.w.Map(12)
	c.w.BulkString("peak.allocated")
	c.w.Int(max(s.peakMem.Load(), used))
	c.w.BulkString("total.allocated")
	c.w.Int(used)
	c.w.BulkString("startup.allocated")
	c.w.Int(0)
	c.w.BulkString("replication.backlog")
	c.w.Int(s.repl.BacklogMemory())
	c.w.BulkString("clients.normal")
	c.w.Int(0)
	c.w.BulkString("aof.buffer")
	c.w.Int(0)
	c.w.BulkString("db.0")
	c.w.Map(2)
	c.w.BulkString("overhead.hashtable.main")
	c.w.Int(int64(keys) * keyOverhead)
	c.w.BulkString("overhead.hashtable.expires")
	c.w.Int(0)
	c.w.BulkString("keys.count")
	c.w.Int(int64(keys))
	c.w.BulkString("keys.bytes-per-key")
	c.w.Int(perKey)
	c.w.BulkString("dataset.bytes")
	c.w.Int(used)
	c.w.BulkString("rss-bytes")
	c.w.Int(rss)
	c.w.BulkString("fragmentation")
	c.w.Double(frag)
}

// A monitor is a connection in MONITOR mode: every command that any connection runs is
// formatted once and appended to buf, which the monitor's connection writes (its event loop,
// woken for it, or a writer goroutine).
type monitor struct {
	c    *Conn
	mu   sync.Mutex
	buf  []byte        // its length is also c.monLen
	wake chan struct{} // goroutine-served connections: tells the writer there is output
}

// maxMonitorBuf is the most output a MONITOR client may leave unwritten before it is closed,
// whatever client-output-buffer-limit says (see Conn.outputOver). Redis counts MONITOR clients
// in the normal class, unlimited by default, so that one that does not read can take all
// the memory there is.
const maxMonitorBuf = 64 << 20

func monitorCmd(c *Conn, _ [][]byte) {
	s := c.srv
	s.monMu.Lock()
	defer s.monMu.Unlock()
	if c.monitor != nil {
		return // already monitoring: Redis answers nothing
	}
	m := &monitor{c: c}
	if c.lp == nil && c.nc != nil {
		m.wake = make(chan struct{}, 1)
		go m.writeLoop()
	}
	c.monitor = m
	c.cflags.Or(clientMonitor)
	s.monList = append(s.monList, m)
	s.monitors.Add(1)
	c.w.OK()
}

// stopMonitor ends c's MONITOR mode, if it is in it (RESET, or the connection closed).
func (s *Server) stopMonitor(c *Conn) {
	if s.monitors.Load() == 0 {
		return
	}
	s.monMu.Lock()
	defer s.monMu.Unlock()
	m := c.monitor
	if m == nil {
		return
	}
	c.monitor = nil
	c.cflags.And(^clientMonitor)
	for i, o := range s.monList {
		if o == m {
			s.monList = append(s.monList[:i], s.monList[i+1:]...)
			break
		}
	}
	s.monitors.Add(-1)
	if m.wake != nil {
		close(m.wake)
	}
}

// writeLoop writes a goroutine-served monitor's feed. net.Conn allows writes concurrent with the
// connection's own replies; each write is whole lines.
func (m *monitor) writeLoop() {
	for range m.wake {
		if !m.writeFeed() {
			return
		}
	}
	m.writeFeed() // what was fed before the monitor stopped (RESET)
}

// writeFeed writes the feed not yet written, and reports whether the connection took it.
func (m *monitor) writeFeed() bool {
	b := m.take()
	if len(b) == 0 {
		return true
	}
	m.c.outLen.Add(int64(len(b))) // unwritten until the socket takes it
	n, err := m.c.nc.Write(b)
	m.c.outLen.Add(-int64(len(b)))
	m.c.srv.stats.netOut.Add(int64(n))
	return err == nil
}

// take returns the feed not yet written.
func (m *monitor) take() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.buf
	m.buf = nil
	m.c.monLen.Store(0)
	return b
}

// feedMonitors sends a command about to run to every monitor, as Redis's MONITOR prints it:
// +<unix time with µs> [<db> <client address>] "arg" "arg" ...
func (s *Server) feedMonitors(c *Conn, args [][]byte) {
	if c.monitor != nil || c == s.internal {
		return
	}
	now := time.Now()
	line := make([]byte, 0, 64)
	line = append(line, '+')
	line = strconv.AppendInt(line, now.Unix(), 10)
	who := c.addr
	if c.scriptClient {
		who = "lua" // as Redis shows the commands a script runs
	}
	line = fmt.Appendf(line, ".%06d [0 %s]", now.Nanosecond()/1000, who)
	for _, a := range args {
		line = append(line, ' ')
		line = appendRepr(line, a)
	}
	line = append(line, "\r\n"...)
	s.monMu.Lock()
	defer s.monMu.Unlock()
	for _, m := range s.monList {
		if m.c.obufClosed.Load() {
			continue
		}
		m.mu.Lock()
		first := len(m.buf) == 0
		if m.c.outputOver(m.c.omem() + int64(len(line))) {
			m.buf = nil
			m.c.monLen.Store(0)
			m.mu.Unlock()
			if m.c.outputLimitReached(false) {
				go m.c.kill()
			}
			continue
		}
		m.buf = append(m.buf, line...)
		m.c.monLen.Store(int64(len(m.buf)))
		m.mu.Unlock()
		if !first {
			continue // already signalled
		}
		if m.wake != nil {
			select {
			case m.wake <- struct{}{}:
			default:
			}
		} else if m.c.lp != nil {
			m.c.lp.notifyMonitor(m)
		}
	}
}

// appendRepr quotes b as Redis's sdscatrepr does: printable bytes as they are, the usual
// escapes, others as \xHH.
func appendRepr(dst, b []byte) []byte {
	dst = append(dst, '"')
	for _, ch := range b {
		switch ch {
		case '\\', '"':
			dst = append(dst, '\\', ch)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\a':
			dst = append(dst, '\\', 'a')
		case '\b':
			dst = append(dst, '\\', 'b')
		default:
			if ch >= 0x20 && ch < 0x7f {
				dst = append(dst, ch)
			} else {
				dst = fmt.Appendf(dst, "\\x%02x", ch)
			}
		}
	}
	return append(dst, '"')
}

// opsSampler computes instantaneous_ops_per_sec as Redis does: the rate over the last 16
// samples taken every 100 ms by the cron.
type opsSampler struct {
	mu      sync.Mutex
	samples [16]float64
	idx     int
	lastT   time.Time
	lastN   int64
	rate    atomic.Uint64 // math.Float64bits of the mean
}

func (o *opsSampler) sample(now time.Time, total int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.lastT.IsZero() {
		if dt := now.Sub(o.lastT).Seconds(); dt > 0 {
			o.samples[o.idx%len(o.samples)] = float64(max(total-o.lastN, 0)) / dt
			o.idx++
		}
	}
	o.lastT, o.lastN = now, total
	var sum float64
	for _, v := range o.samples {
		sum += v
	}
	o.rate.Store(uint64(sum / float64(len(o.samples))))
}

// opsPerSec returns the latest instantaneous_ops_per_sec.
func (o *opsSampler) opsPerSec() int64 { return int64(o.rate.Load()) }

// totalCommands returns the number of commands processed (as published by the connections and
// the replica's applier of its primary's stream).
func (s *Server) totalCommands() int64 {
	n := s.stats.commands.Load()
	if s.applier != nil {
		n += s.applier.ncmds.Load()
	}
	for _, o := range s.clientList() {
		n += o.ncmds.Load()
	}
	return n
}

// statsTick runs from the cron every 100 ms: the ops rate and the memory peak.
func (s *Server) statsTick(now time.Time) {
	s.opsRing.sample(now, s.totalCommands())
	used := s.ks.used.Load()
	if used > s.peakMem.Load() {
		s.peakMem.Store(used)
	}
}

// appendStatsInfo appends the INFO sections kept by internal/metrics: commandstats, errorstats,
// latencystats and cpu.
func (s *Server) appendStatsInfo(b []byte, sec string) []byte {
	switch sec {
	case "commandstats":
		b = append(b, "# Commandstats\r\n"...)
		for _, cs := range s.mstats.Commands() {
			if cs.Calls == 0 && cs.Rejected == 0 && cs.Failed == 0 {
				continue
			}
			us := cs.Ns / 1000
			per := 0.0
			if cs.Calls > 0 {
				per = float64(cs.Ns) / 1000 / float64(cs.Calls)
			}
			b = fmt.Appendf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
				cs.Name, cs.Calls, us, per, cs.Rejected, cs.Failed)
		}
	case "errorstats":
		b = append(b, "# Errorstats\r\n"...)
		for _, e := range s.mstats.Errors() {
			b = fmt.Appendf(b, "errorstat_%s:count=%d\r\n", e.Code, e.Count)
		}
	case "latencystats":
		b = append(b, "# Latencystats\r\n"...)
		for _, cs := range s.mstats.Commands() {
			h := &cs.Latency
			if h.Count == 0 {
				continue
			}
			b = fmt.Appendf(b, "latency_percentiles_usec_%s:p50=%.3f,p99=%.3f,p99.9=%.3f\r\n", cs.Name,
				float64(h.Percentile(50))/1000, float64(h.Percentile(99))/1000, float64(h.Percentile(99.9))/1000)
		}
	case "cpu":
		sys, user := cpuTimes()
		b = append(b, "# CPU\r\n"...)
		b = fmt.Appendf(b, "used_cpu_sys:%.6f\r\nused_cpu_user:%.6f\r\n", sys, user)
		b = fmt.Appendf(b, "used_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n")
		b = fmt.Appendf(b, "used_cpu_sys_main_thread:%.6f\r\nused_cpu_user_main_thread:%.6f\r\n", sys, user)
	}
	return b
}

// avgTTL estimates the mean remaining time to live, in milliseconds, of the keys with an expiry,
// from a sample of up to 20 of them per shard, as Redis's avg_ttl is an estimate too.
func (ks *keyspace) avgTTL() int64 {
	now := nowMs()
	var sum, n int64
	for i := range ks.shards {
		sh := &ks.shards[i]
		sh.mu.RLock()
		k := 0
		for e := range sh.vol {
			if k == 20 {
				break
			}
			if t := e.expire.Load(); t > now {
				sum += t - now
				n++
			}
			k++
		}
		sh.mu.RUnlock()
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// infoNotDefault are the sections that INFO gives for ALL and EVERYTHING, or by name, only.
var infoNotDefault = map[string]bool{"commandstats": true, "latencystats": true}
