package repl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Full syncs share snapshots, as Redis's replicas share one BGSAVE. A snapshot is taken at one
// instant T (Host.Snapshot, inside the server's pause) and holds what must be copied at T (the
// cuckoo filters, charged to the memory ceiling); everything else is read while it is written.
// Every replica that needs a full sync while a snapshot is alive attaches to it: those that
// were waiting when it was taken collect the stream from T in their buffers, and one that
// arrives later copies the stream from T out of the backlog (when the backlog still holds it)
// and is sent the same snapshot, from its first byte, by its own writer. So however many
// replicas ask, there is at most one snapshot, and one copy, at a time. A replica that cannot
// attach (the backlog no longer holds T, or the history changed) waits for the next snapshot,
// which is taken when the current one is released, for every replica waiting then. A snapshot
// whose copies do not fit in memory is refused: the replicas waiting for it get an error
// reply and ask again later.

// syncState is a Repl's full syncs, under its mutex.
type syncState struct {
	job    *syncJob // the snapshot being taken or sent; nil if none
	taking bool     // a goroutine is taking a snapshot for the replicas waiting
	jobs   int64    // snapshots taken for replicas, for tests and the log
}

// A syncJob is one snapshot shared by the full syncs of the replicas attached to it.
type syncJob struct {
	exact  bool // the snapshot copies everything at its instant (Snapshot.Exact)
	replid string
	offset int64         // the stream offset at the snapshot's instant
	ready  chan struct{} // closed once snap or err is set
	snap   Snapshot
	err    error
	users  int // the replicas attached and the goroutine that took it, under r.mu
}

// keepAlive is how often a replica waiting for a snapshot is sent a newline, as Redis does, so
// that it does not take the wait for a dead primary.
const keepAlive = time.Second

// fullSync sends the replica +FULLRESYNC and a snapshot: the current one if it can attach to
// it, otherwise the next. The writes after the snapshot's instant collect in the link's buffer
// meanwhile.
func (r *Repl) fullSync(l *link, info ReplicaInfo) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errors.New("replication stopped")
	}
	l.assigned = make(chan *syncJob, 1)
	l.state = linkWaitBgsave
	r.links[l] = struct{}{}
	j := r.attachLocked(l)
	if j == nil {
		l.waiting = true
		r.startSnapshotLocked()
	}
	r.mu.Unlock()
	if j == nil {
		var err error
		if j, err = r.awaitJob(l); err != nil {
			return err
		}
	}
	defer r.detach(j)
	select {
	case <-j.ready:
	case <-l.done:
		return errors.New("the replica's link was closed")
	}
	if j.err != nil {
		l.nc.SetWriteDeadline(time.Now().Add(time.Second))
		l.nc.Write([]byte("-ERR BGSAVE failed, replication can't continue: " + oneLine(j.err.Error()) + "\r\n"))
		return fmt.Errorf("the snapshot for the full sync was refused: %w", j.err)
	}
	r.setState(l, linkSendBulk)
	rdb := info.Bloomd != "bloomd"
	r.log.Info("starting a full sync", "replica", info.Addr, "format", map[bool]string{true: "RDB", false: "bloomd"}[rdb],
		"exact", j.exact, "offset", j.offset)
	start := time.Now()
	cw := &countWriter{w: &deadlineWriter{nc: l.nc, timeout: r.timeout()}}
	bw := bufio.NewWriterSize(cw, 64<<10)
	var window func() int64
	if info.Bloomd != "" {
		// A bloomd replica applies the adds of the stream as new up to the offset it is
		// given, which the snapshot carries at its end; a Redis replica cannot, and gets an
		// exact snapshot instead.
		window = func() int64 { return r.windowFor(j) }
	}
	if rdb {
		// An RDB's length is known only once it is written: it goes behind Redis's diskless
		// "$EOF:<mark>" framing, which every Redis replica since 2.8.18 reads.
		mark := newID()
		fmt.Fprintf(bw, "+FULLRESYNC %s %d\r\n$EOF:%s\r\n", j.replid, j.offset, mark)
		if err := j.snap.Write(bw, true, window); err != nil {
			return err
		}
		bw.WriteString(mark)
		l.waitAck = true
	} else {
		fmt.Fprintf(bw, "+FULLRESYNC %s %d\r\n$%d\r\n", j.replid, j.offset, j.snap.Size)
		if err := j.snap.Write(bw, false, window); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	r.log.Info("snapshot sent to a replica", "replica", info.Addr, "bytes", cw.n, "seconds", time.Since(start).Seconds())
	r.setState(l, linkOnline)
	l.ackTime.Store(time.Now().UnixNano())
	return nil
}

// windowFor returns the offset up to which a bloomd replica given j applies the stream's adds as
// new: the current offset, for a snapshot whose bits were read while adds went on (Write calls
// it while no write is in flight, once the bits are read: the adds after that found their bits
// unread), and at least the window this server itself still applies, when it is a replica
// that passes on its primary's stream.
func (r *Repl) windowFor(j *syncJob) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var w int64
	if !j.exact {
		w = r.offset
	}
	if inherited := r.addsNewUntil.Load(); inherited > j.offset {
		w = max(w, inherited)
	}
	return w
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// needsExact reports whether a replica must be given an exact snapshot: a Redis replica, which
// applies its primary's adds as a client's (see Snapshot.Exact), and any replica of a server that
// is itself a replica, whose stream may be a Redis primary's, whose adds are its clients' as sent
// (RedisBloom replicates BF.ADD whether or not the item was new).
func (r *Repl) needsExactLocked(l *link) bool {
	return l.info.Bloomd == "" || r.master != nil
}

// maxAttachCopy bounds the copy of the backlog that a replica attaching to a snapshot already
// being sent takes as its buffer; a replica further behind waits for the next snapshot.
const maxAttachCopy = 256 << 20

// attachLocked attaches l to the current snapshot if it can and returns it, or nil: the
// snapshot's history must still be this server's, and the backlog must hold the stream from the
// snapshot's instant, which becomes l's buffer.
func (r *Repl) attachLocked(l *link) *syncJob {
	j := r.sync.job
	if j == nil || j.err != nil || !strings.EqualFold(j.replid, r.replid) || !j.exact && r.needsExactLocked(l) {
		return nil
	}
	data, ok := r.backlogFromLocked(j.offset + 1)
	if !ok || len(data) > maxAttachCopy {
		return nil
	}
	if lim := r.outputLimitLocked(); lim.Hard != 0 && uint64(len(data)) > lim.Hard {
		return nil // the replica would start over its output limit
	}
	l.buf = data
	l.job = j
	j.users++
	r.fullSyncs++
	r.log.Info("a replica attaches to the snapshot being sent to others", "replica", l.nc.RemoteAddr(), "offset", j.offset, "stream_since", len(data))
	return j
}

// awaitJob waits until the next snapshot takes l, sending it a newline every second meanwhile.
func (r *Repl) awaitJob(l *link) (*syncJob, error) {
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		var err error
		select {
		case j := <-l.assigned:
			return j, nil
		case <-l.done:
			err = errors.New("the replica's link was closed while it waited for a snapshot")
		case <-t.C:
			l.nc.SetWriteDeadline(time.Now().Add(r.timeout()))
			if _, err = l.nc.Write([]byte("\n")); err == nil {
				continue
			}
		}
		// Giving up: leave the queue, or the snapshot that took l meanwhile.
		r.mu.Lock()
		l.waiting = false
		j := l.job
		l.job = nil
		r.mu.Unlock()
		if j != nil {
			r.detach(j)
		}
		return nil, err
	}
}

// startSnapshotLocked starts taking a snapshot for the replicas waiting, unless one is being
// taken or sent.
func (r *Repl) startSnapshotLocked() {
	if r.sync.job != nil || r.sync.taking || r.closed {
		return
	}
	r.sync.taking = true
	r.wg.Add(1)
	go r.takeSnapshot()
}

// takeSnapshot takes a snapshot for every replica waiting at its instant, or tells them all
// that it was refused.
func (r *Repl) takeSnapshot() {
	defer r.wg.Done()
	j := &syncJob{ready: make(chan struct{}), users: 1}
	r.mu.Lock()
	for l := range r.links {
		if l.waiting && r.needsExactLocked(l) {
			j.exact = true
		}
	}
	r.mu.Unlock()
	var members []*link
	take := func(l *link) {
		l.waiting = false
		l.job = j
		j.users++
		members = append(members, l)
	}
	snap, err := r.host.Snapshot(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		j.replid, j.offset = r.replid, r.offset
		r.sync.job = j
		r.sync.jobs++
		// As Redis does when a replication snapshot starts, the next write selects its
		// database again: the replicas begin the stream in database 0.
		r.selected = false
		for l := range r.links {
			if l.waiting && (j.exact || !r.needsExactLocked(l)) {
				take(l)
				r.fullSyncs++
			}
		}
	}, j.exact)
	r.mu.Lock()
	r.sync.taking = false
	if err != nil {
		// Refused before its instant (the copies do not fit): the replicas waiting are told.
		r.sync.job = j
		for l := range r.links {
			if l.waiting {
				take(l)
			}
		}
		r.log.Warn("full sync refused: the snapshot does not fit in memory now; the replicas will ask again",
			"replicas", len(members), "err", err)
	} else {
		r.log.Info("snapshot taken for full syncs", "replicas", len(members), "bytes", snap.Size, "offset", j.offset)
	}
	j.snap, j.err = snap, err
	close(j.ready)
	for _, l := range members {
		l.assigned <- j
	}
	r.mu.Unlock()
	r.detach(j)
}

// detach ends one use of j; the last releases the snapshot and starts the next one if replicas
// wait for it.
func (r *Repl) detach(j *syncJob) {
	r.mu.Lock()
	j.users--
	if j.users > 0 {
		r.mu.Unlock()
		return
	}
	if r.sync.job == j {
		r.sync.job = nil
	}
	for l := range r.links {
		if l.waiting {
			r.startSnapshotLocked()
			break
		}
	}
	r.mu.Unlock()
	if j.snap.Release != nil {
		j.snap.Release()
	}
}

// oneLine makes text fit in an error reply's single line.
func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
