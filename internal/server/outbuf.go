package server

import (
	"errors"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/bloomd/bloom/internal/outbuf"
)

// This file applies client-output-buffer-limit (internal/outbuf) to connections. A connection's
// unwritten output is what waits for its socket outside the batch of replies being made: an
// event loop's out (what the socket did not take), the bytes a connection with its own
// goroutine is writing, messages other goroutines queued (pushed: PUBLISH, the end of a WAIT),
// and a MONITOR feed not yet taken. Each part has an atomic length on the connection, kept by
// whoever changes it, so that the limit can be checked, and CLIENT LIST's omem read, from any
// goroutine. The limit is checked where output is added from elsewhere (Conn.deliver,
// Server.feedMonitors), where an event loop keeps what the socket refused, where a batch of
// replies passes flushAt, and once a second for every connection (the soft limit's clock), as
// Redis checks when it queues output and in its clients cron. A connection's own replies
// therefore count once they pass flushAt or wait for the socket; Redis counts them past its
// 16 KB static buffer.

func init() {
	params = append(params,
		param{"client-output-buffer-limit", true, func(c *Config) string { return c.ClientOutputBufferLimit.String() }, func(c *Config, v string) error {
			return c.ClientOutputBufferLimit.Set(v)
		}},
	)
}

// obufParam is the setting's name, which CONFIG REWRITE writes one line per class for.
const obufParam = "client-output-buffer-limit"

// errOutputLimit ends a connection closed for its output.
var errOutputLimit = errors.New("client output buffer limit reached")

// outputClass returns c's class for client-output-buffer-limit, as Redis's getClientType:
// pubsub while subscribed to something, normal otherwise, MONITOR clients included. Replicas
// are served by internal/repl, which applies the replica class itself.
func (c *Conn) outputClass() outbuf.Class {
	if c.subs.Load() > 0 {
		return outbuf.PubSub
	}
	return outbuf.Normal
}

// omem returns the bytes of c's unwritten output outside the batch being answered.
func (c *Conn) omem() int64 { return c.outLen.Load() + c.pushLen.Load() + c.monLen.Load() }

// outputOver reports whether c, with used bytes of unwritten output, is to be closed: over its
// class's limit, or, for a MONITOR client, over maxMonitorBuf (Redis counts MONITOR clients
// as normal ones, whose default is no limit; bloomd bounds them whatever the setting).
func (c *Conn) outputOver(used int64) bool {
	if used >= maxMonitorBuf && c.cflags.Load()&clientMonitor != 0 {
		return true
	}
	l := &c.srv.obufLimits.Load()[c.outputClass()]
	if l.Off() {
		return false
	}
	return l.Over(used, unixSeconds, &c.softSince)
}

func unixSeconds() int64 { return time.Now().Unix() }

// outputLimitReached records that c is closed for its output, once, logging the client as
// Redis does ("closed" when the caller closes it at once, "scheduled to be closed ASAP" when
// it asks another goroutine to), and drops the output other goroutines queued for it. It
// reports whether this call was the first; the caller then closes c.
func (c *Conn) outputLimitReached(atOnce bool) bool {
	if !c.obufClosed.CompareAndSwap(false, true) {
		return false
	}
	c.srv.stats.obufDisconnects.Add(1)
	line := strings.TrimSuffix(c.info(time.Now(), false), "\n")
	how := "scheduled to be closed ASAP"
	if atOnce {
		how = "closed"
	}
	msg := "Client " + line + " " + how + " for overcoming of output buffer limits."
	if c.cflags.Load()&clientMonitor != 0 && c.srv.obufLimits.Load()[outbuf.Normal].Off() {
		msg += " (bloomd closes a MONITOR client with 64mb waiting, whatever the normal class's limits.)"
	}
	c.srv.log.Warn(msg)
	return true
}

// dropPushedLocked forgets the bytes other goroutines queued for c; pushMu must be held.
func (c *Conn) dropPushedLocked() {
	c.pushed, c.unblockPending = nil, false
	c.pushLen.Store(0)
}

// closeForOutput closes c, from any goroutine, for its output.
func (c *Conn) closeForOutput() {
	if !c.outputLimitReached(false) {
		return
	}
	c.pushMu.Lock()
	c.dropPushedLocked()
	c.pushMu.Unlock()
	c.kill()
}

// checkOutputLimits is the cron's check of every connection, once a second: the soft limit's
// clock runs out without any new output (as in Redis's clientsCron), and the largest output
// is recorded for INFO's client_recent_max_output_buffer.
func (s *Server) checkOutputLimits(now time.Time) {
	var peak int64
	var over []*Conn
	s.connsMu.Lock() // a walk of the map allocates nothing, unlike a copy of it
	for c := range s.conns {
		used := c.omem()
		peak = max(peak, used)
		if used == 0 && c.softSince.Load() == 0 || c.obufClosed.Load() {
			continue
		}
		if c.outputOver(used) {
			over = append(over, c)
		}
	}
	s.connsMu.Unlock()
	for _, c := range over {
		c.closeForOutput()
	}
	s.obufPeak.record(now.Unix(), peak)
}

// A peakRing keeps the largest value of each of the last eight seconds, as Redis keeps
// client_recent_max_output_buffer.
// The cron records, INFO reads.
type peakRing struct {
	sec  [8]atomic.Int64
	peak [8]atomic.Int64
}

func (p *peakRing) record(sec, v int64) {
	i := sec % int64(len(p.sec))
	if p.sec[i].Load() != sec {
		p.peak[i].Store(0)
		p.sec[i].Store(sec)
	}
	p.peak[i].Store(max(p.peak[i].Load(), v))
}

// max returns the largest value recorded within the eight seconds up to now.
func (p *peakRing) max(now int64) int64 {
	var m int64
	for i := range p.sec {
		if now-p.sec[i].Load() < int64(len(p.sec)) {
			m = max(m, p.peak[i].Load())
		}
	}
	return m
}

// connOverhead is what a connection costs apart from its buffers, for CLIENT LIST's tot-mem.
const connOverhead = int64(unsafe.Sizeof(Conn{}))

// outputInfo returns CLIENT LIST's output fields for c. self is set for the connection that
// asks (CLIENT INFO, or its own line of CLIENT LIST): its batch of replies is not yet written,
// and counts as obl; another connection's batch is its own goroutine's, and is written before
// that goroutine reads again.
func (c *Conn) outputInfo(self bool) (obl, oll, omem, totMem int64) {
	if self {
		obl = int64(c.w.Buffered())
	}
	for _, n := range []int64{c.outLen.Load(), c.pushLen.Load(), c.monLen.Load()} {
		if n > 0 {
			oll++
			omem += n
		}
	}
	return obl, oll, omem, omem + c.bufMem.Load() + connOverhead
}

// dropOutput forgets the output other goroutines queued for c and ends a WAIT it is blocked
// in, when it closes.
func (c *Conn) dropOutput() {
	c.pushMu.Lock()
	c.closed = true
	c.dropPushedLocked()
	c.pushMu.Unlock()
	if c.gone != nil {
		close(c.gone)
		c.gone = nil
	}
}
