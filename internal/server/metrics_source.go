package server

import (
	"container/heap"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bloomd/bloom/internal/acl"
	"github.com/bloomd/bloom/internal/metrics"
	"github.com/bloomd/bloom/internal/web"
	"github.com/bloomd/bloom/redisbloom"
)

// The server as a source of metrics and of the page's data (internal/metrics, internal/web).

// Info returns the server-wide numbers of a scrape.
func (s *Server) Info() metrics.ServerInfo {
	cfg := s.config()
	keys, vol := s.ks.count()
	memLimit, _ := s.memoryLimit()
	info := metrics.ServerInfo{
		UptimeSeconds:       time.Since(s.started).Seconds(),
		ConnectedClients:    s.clients.Load(),
		MaxClients:          int64(cfg.MaxClients),
		ConnectionsReceived: s.stats.conns.Load(),
		ConnectionsDenied:   s.stats.rejected.Load(),
		CommandsProcessed:   s.totalCommands(),
		Keys:                int64(keys),
		Expiring:            int64(vol),
		ExpiredKeys:         s.stats.expired.Load(),
		OOMRejections:       s.stats.oom.Load(),
		ACLDenied: map[string]int64{
			"auth": s.acl.denied[acl.DeniedAuth].Load(), "cmd": s.acl.denied[acl.DeniedCommand].Load(),
			"key": s.acl.denied[acl.DeniedKey].Load(), "channel": s.acl.denied[acl.DeniedChannel].Load(),
		},
		NetInputBytes:  s.stats.netIn.Load(),
		NetOutputBytes: s.stats.netOut.Load(),
		UsedMemory:     s.ks.used.Load(),
		MemoryLimit:    memLimit,
		MaxMemory:      cfg.MaxMemory,
		Persistence:    map[string]float64{},
	}
	numeric := func(section string, into map[string]float64) []string {
		lines := strings.Split(string(s.appendInfo(nil, section, nil)), "\r\n")
		for _, line := range lines {
			name, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				into[name] = f
			}
		}
		return lines
	}
	numeric("persistence", info.Persistence)
	fs := s.stats.fsyncs.Snapshot()
	info.AOFFsync, info.AOFFsyncSeconds = &fs, float64(s.stats.fsyncNs.Load())/1e9
	info.Replication = map[string]float64{}
	for _, line := range numeric("replication", info.Replication) {
		// slave0:ip=127.0.0.1,port=7001,state=online,offset=123,lag=0
		name, v, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "slave") {
			continue
		}
		var r metrics.Replica
		var ip, port string
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(kv, "=")
			switch k {
			case "ip":
				ip = val
			case "port":
				port = val
			case "offset":
				r.Offset, _ = strconv.ParseInt(val, 10, 64)
			case "lag":
				r.LagSeconds, _ = strconv.ParseInt(val, 10, 64)
			}
		}
		r.Addr = net.JoinHostPort(ip, port)
		info.Replicas = append(info.Replicas, r)
	}
	return info
}

// filterOf describes a filter value for the metrics and the page. It reads counts only.
func filterOf(name string, bv *bloomValue) metrics.Filter {
	ch := bv.ch
	links := ch.Links()
	f := metrics.Filter{Name: name, Type: "bloom", Bytes: bv.mem.Load(), Scaling: !ch.NonScaling(),
		Expansion: ch.Expansion(), Links: make([]metrics.Link, len(links))}
	for i, l := range links {
		f.Links[i] = metrics.Link{Bits: l.Bytes * 8, Hashes: l.Hashes, Items: l.Items, Capacity: l.Capacity, Target: l.ErrorRate}
	}
	if len(links) > 0 {
		f.Rate = links[0].ErrorRate
		if f.Scaling {
			f.Rate /= redisbloom.TighteningRatio
		}
	}
	return f
}

// eachFilter calls fn for every live filter, shard by shard under the shard's read lock (which
// only creating and removing keys wait for).
func (s *Server) eachFilter(fn func(name string, bv *bloomValue)) {
	now := nowMs()
	for i := range s.ks.shards {
		sh := &s.ks.shards[i]
		sh.mu.RLock()
		for k, e := range sh.m {
			if bv, ok := e.val.(*bloomValue); ok && !s.ks.expired(e, now) {
				fn(k, bv)
			}
		}
		sh.mu.RUnlock()
	}
}

// bySize is a min-heap of filters by charged bytes, to keep the largest n.
type bySize []sized

type sized struct {
	name string
	bv   *bloomValue
	size int64
}

func (h bySize) Len() int           { return len(h) }
func (h bySize) Less(i, j int) bool { return h[i].size < h[j].size }
func (h bySize) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *bySize) Push(x any)        { *h = append(*h, x.(sized)) }
func (h *bySize) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// SelectedFilters returns the filters whose names match metrics-filter-pattern, the largest
// metrics-max-filters of them, and how many matched. With no pattern (the default) it reads
// nothing. Its cost is one pass over the keys' names and a heap of the kept ones: no bits.
func (s *Server) SelectedFilters() ([]metrics.Filter, int) {
	cfg := s.config()
	if cfg.MetricsFilterPattern == "" || cfg.MetricsMaxFilters <= 0 {
		return nil, 0
	}
	pat := []byte(cfg.MetricsFilterPattern)
	h := &bySize{}
	matched := 0
	s.eachFilter(func(name string, bv *bloomValue) {
		if !globMatch(pat, []byte(name)) {
			return
		}
		matched++
		size := bv.mem.Load()
		if h.Len() < cfg.MetricsMaxFilters {
			heap.Push(h, sized{name, bv, size})
		} else if size > (*h)[0].size {
			(*h)[0] = sized{name, bv, size}
			heap.Fix(h, 0)
		}
	})
	out := make([]metrics.Filter, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		x := heap.Pop(h).(sized)
		out[i] = filterOf(x.name, x.bv)
	}
	return out, matched
}

// cuckooOf describes a cuckoo filter for the page, with CF.INFO's numbers.
func cuckooOf(name string, cv *cuckooValue) metrics.Filter {
	i := cv.cf.Info()
	return metrics.Filter{Name: name, Type: "cuckoo", Bytes: cv.mem.Load(), Cuckoo: &metrics.Cuckoo{
		Size: 40 + 16*uint64(i.Filters) + i.Bytes, Buckets: i.Buckets, Filters: i.Filters, Inserted: i.Items,
		Deleted: i.Deletes, BucketSize: i.BucketSize, Expansion: i.Expansion, MaxIterations: i.MaxIterations,
		Slots: i.Bytes}}
}

// describeFilter describes a Bloom or cuckoo filter value, or reports that val is neither.
func describeFilter(name string, val any) (metrics.Filter, bool) {
	switch v := val.(type) {
	case *bloomValue:
		return filterOf(name, v), true
	case *cuckooValue:
		return cuckooOf(name, v), true
	}
	return metrics.Filter{}, false
}

// A pageFilter is a filter found for the page: its name and value, described once chosen.
type pageFilter struct {
	name string
	val  any
}

// Filters returns one page of the Bloom and cuckoo filters that v may read and whose names
// contain query (or match it, if it has glob characters), sorted by name, and how many of those
// there are. Filters v may not read are not counted: a count of hidden names matching a query
// would let a user spell them out one character at a time.
func (s *Server) Filters(v web.Viewer, query string, offset, limit int) ([]metrics.Filter, int) {
	glob, pat := strings.ContainsAny(query, "*?["), []byte(query)
	all := v.ReadsAll()
	var found []pageFilter
	now := nowMs()
	for i := range s.ks.shards {
		sh := &s.ks.shards[i]
		sh.mu.RLock()
		for k, e := range sh.m {
			switch e.val.(type) {
			case *bloomValue, *cuckooValue:
			default:
				continue
			}
			if s.ks.expired(e, now) {
				continue
			}
			if query != "" && (glob && !globMatch(pat, []byte(k)) || !glob && !strings.Contains(k, query)) {
				continue
			}
			if all || v.MayRead(k) {
				found = append(found, pageFilter{k, e.val})
			}
		}
		sh.mu.RUnlock()
	}
	sort.Slice(found, func(i, j int) bool { return found[i].name < found[j].name })
	total := len(found)
	offset = min(max(offset, 0), total)
	end := min(offset+max(limit, 0), total)
	out := make([]metrics.Filter, 0, end-offset)
	for _, x := range found[offset:end] {
		f, _ := describeFilter(x.name, x.val)
		out = append(out, f)
	}
	return out, total
}

// Filter returns the named Bloom or cuckoo filter, if there is one and v may read it.
func (s *Server) Filter(v web.Viewer, name string) (metrics.Filter, bool) {
	if !v.ReadsAll() && !v.MayRead(name) {
		return metrics.Filter{}, false
	}
	e := s.ks.get([]byte(name))
	if e == nil {
		return metrics.Filter{}, false
	}
	return describeFilter(name, e.val)
}

// httpViewer is the user an HTTP request to the metrics port reads as (web.Viewer). It reads
// the account's user at each call, so that ACL SETUSER applies to the next request, and a
// deleted user reads nothing.
type httpViewer struct{ a *acl.Account }

func (v httpViewer) Name() string { return v.a.Name() }

func (v httpViewer) MayRead(key string) bool {
	return !v.a.Removed() && v.a.User().CheckKey([]byte(key), acl.KeyRO|acl.KeyAccess)
}

func (v httpViewer) ReadsAll() bool { return !v.a.Removed() && v.a.User().KeyRules() == "~*" }

// Authorize lets an HTTP client read the metrics and the page as a user allowed to run INFO:
// the user its basic-auth user name and password authenticate, or without credentials the
// default user when it needs no password (as a connection is then authenticated at once).
// Wrong credentials are refused even then, as AUTH refuses them. The page lists only the keys
// that user may read (httpViewer).
func (s *Server) Authorize(user, pass string, given bool) (web.Viewer, bool) {
	var a *acl.Account
	switch {
	case given:
		if a = s.acl.users.Authenticate(user, []byte(pass)); a == nil {
			s.acl.denied[acl.DeniedAuth].Add(1)
			return nil, false
		}
	case s.defaultAuthed():
		a = s.acl.users.Default()
	default:
		return nil, false
	}
	info := s.mux.Lookup([]byte("info"))
	r, _ := a.User().Check(info.acl, [][]byte{[]byte("info")})
	if r != acl.Allowed {
		return nil, false
	}
	return httpViewer{a}, true
}

// ServeMetrics serves /metrics and the page on ln until the server shuts down.
func (s *Server) ServeMetrics(ln net.Listener) {
	h := web.NewHandler(s)
	srv := &http.Server{Handler: s.guardHTTP(h), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-s.done
		srv.Close()
		h.Close()
	}()
	go srv.Serve(ln)
}

// listenMetrics opens metrics-bind:metrics-port, if the port is set.
func (s *Server) listenMetrics() (net.Listener, error) {
	cfg := s.config()
	if cfg.MetricsPort == 0 {
		return nil, nil
	}
	return net.Listen("tcp", net.JoinHostPort(cfg.MetricsBind, strconv.Itoa(cfg.MetricsPort)))
}
