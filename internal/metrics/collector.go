package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// ServerInfo is the server-wide part of a scrape.
type ServerInfo struct {
	UptimeSeconds                          float64
	ConnectedClients, MaxClients           int64
	ConnectionsReceived, ConnectionsDenied int64
	CommandsProcessed                      int64
	Keys, Expiring                         int64
	ExpiredKeys, OOMRejections             int64
	// ACLDenied counts ACL denials by reason: "auth", "cmd", "key", "channel" (INFO's
	// acl_access_denied_*).
	ACLDenied                          map[string]int64
	NetInputBytes, NetOutputBytes      int64 // bytes read from and written to clients
	UsedMemory, MemoryLimit, MaxMemory int64
	// Persistence holds INFO persistence's numeric fields by their Redis names
	// (rdb_last_save_time, aof_current_size, aof_rewrites, ...).
	Persistence map[string]float64
	// AOFFsync holds the duration of each fsync of the append-only log, and AOFFsyncSeconds
	// their exact total; nil if the source does not time them.
	AOFFsync        *HistogramSnapshot
	AOFFsyncSeconds float64
	// Replication holds INFO replication's numeric fields (master_repl_offset,
	// connected_slaves, ...), and Replicas a primary's replicas.
	Replication map[string]float64
	Replicas    []Replica
}

// A Replica is one replica of a primary, as INFO replication's slaveN line gives it.
type Replica struct {
	Addr       string // ip:port
	Offset     int64  // the stream offset it acknowledged
	LagSeconds int64  // seconds since its last acknowledgement
}

// A Source is what a Collector reads on each scrape: bloomd's server implements it.
type Source interface {
	// Info returns the server-wide numbers.
	Info() ServerInfo
	// Stats returns the per-command and error statistics.
	Stats() *Stats
	// SelectedFilters returns the filters that get series of their own (metrics-filter-pattern,
	// at most metrics-max-filters, the largest first) and how many matched the pattern.
	SelectedFilters() (filters []Filter, matched int)
}

// persistenceMetrics maps INFO persistence fields to metric names and help.
var persistenceMetrics = []struct {
	field, name, help string
	counter           bool
}{
	{"rdb_last_save_time", "bloomd_last_save_timestamp_seconds", "Unix time of the last successful snapshot.", false},
	{"rdb_changes_since_last_save", "bloomd_changes_since_last_save", "Writes since the last snapshot.", false},
	{"rdb_saves", "bloomd_snapshots_total", "Snapshots written since start.", true},
	{"aof_current_size", "bloomd_aof_size_bytes", "Size of the snapshot and append-only log together.", false},
	{"aof_rewrites", "bloomd_aof_rewrites_total", "Log rewrites (snapshot plus new log) since start.", true},
	{"aof_fsyncs", "bloomd_aof_fsyncs_total", "fsync calls on the append-only log since start.", true},
	{"aof_enabled", "bloomd_aof_enabled", "1 if the append-only log is on.", false},
	{"loading", "bloomd_loading", "1 while the data files load.", false},
}

// A Collector exports a Source as Prometheus metrics. Every value is read when scraped, from
// counters the server keeps anyway: a scrape takes no lock that commands wait for, beyond the
// keyspace's shard read locks while the per-filter series are selected.
type Collector struct {
	src Source

	descs map[string]*prometheus.Desc
}

// NewCollector returns a collector over src.
func NewCollector(src Source) *Collector {
	c := &Collector{src: src, descs: map[string]*prometheus.Desc{}}
	d := func(name, help string, labels ...string) {
		c.descs[name] = prometheus.NewDesc(name, help, labels, nil)
	}
	d("bloomd_uptime_seconds", "Seconds since bloomd started.")
	d("bloomd_connected_clients", "Client connections open.")
	d("bloomd_max_clients", "The maxclients setting.")
	d("bloomd_connections_received_total", "Connections accepted since start.")
	d("bloomd_connections_rejected_total", "Connections refused over maxclients since start.")
	d("bloomd_acl_access_denied_total", "ACL denials since start, by reason: auth (failed AUTH or HELLO), cmd, key, channel.", "reason")
	d("bloomd_commands_processed_total", "Commands run since start, every command together.")
	d("bloomd_commands_total", "Calls of a command that ran, by command.", "cmd")
	d("bloomd_commands_rejected_total", "Calls refused before they ran (arity, authentication, memory), by command.", "cmd")
	d("bloomd_commands_failed_total", "Calls that ran and answered an error, by command.", "cmd")
	d("bloomd_command_duration_seconds", "Time commands took to run, by command (one call in 16 of a run of one command on a connection is timed and stands for the others).", "cmd")
	d("bloomd_errors_total", "Error replies, by error code (ERR, WRONGTYPE, OOM, ...).", "code")
	d("bloomd_net_input_bytes_total", "Bytes read from clients since start (total_net_input_bytes).")
	d("bloomd_net_output_bytes_total", "Bytes written to clients since start (total_net_output_bytes).")
	d("bloomd_keys", "Keys in the keyspace.")
	d("bloomd_keys_expiring", "Keys with an expiry time.")
	d("bloomd_expired_keys_total", "Keys removed on expiry since start.")
	d("bloomd_oom_rejections_total", "Commands refused by the memory limit since start.")
	d("bloomd_memory_used_bytes", "Bytes of keys and filters charged against the memory limit.")
	d("bloomd_memory_limit_bytes", "The memory limit in force: maxmemory, or the machine's memory.")
	d("bloomd_maxmemory_bytes", "The maxmemory setting; 0 if none.")
	d("bloomd_slowlog_length", "Entries in the slow log.")
	for _, p := range persistenceMetrics {
		d(p.name, p.help)
	}
	d("bloomd_aof_fsync_duration_seconds", "Time each fsync of the append-only log took.")
	d("bloomd_repl_offset", "Bytes of the replication stream so far (master_repl_offset).")
	d("bloomd_connected_replicas", "Replicas connected to this primary.")
	d("bloomd_replica_offset", "Stream offset a replica acknowledged.", "replica")
	d("bloomd_replica_lag_seconds", "Seconds since a replica's last acknowledgement.", "replica")
	d("bloomd_filters_selected", "Filters with series of their own (matching metrics-filter-pattern, at most metrics-max-filters).")
	d("bloomd_filters_matched", "Filters matching metrics-filter-pattern.")
	labels := []string{"filter"}
	d("bloomd_filter_bits", "Bits of a filter, all sub-filters together.", labels...)
	d("bloomd_filter_bytes", "Memory charged for a filter.", labels...)
	d("bloomd_filter_items", "Items added to a filter.", labels...)
	d("bloomd_filter_capacity", "Items a filter takes before it grows (or fills, if it does not scale).", labels...)
	d("bloomd_filter_subfilters", "Sub-filters of a scalable filter.", labels...)
	d("bloomd_filter_fill_ratio", "Expected fraction of a filter's bits set, from its item counts.", labels...)
	d("bloomd_filter_fpp", "Estimated false-positive probability of a filter now.", labels...)
	d("bloomd_filter_target_fpp", "The false-positive rate a filter was made for.", labels...)
	return c
}

// Describe sends every descriptor the collector may send.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads the source and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, labels...)
	}
	counter := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.CounterValue, v, labels...)
	}
	info := c.src.Info()
	gauge("bloomd_uptime_seconds", info.UptimeSeconds)
	gauge("bloomd_connected_clients", float64(info.ConnectedClients))
	gauge("bloomd_max_clients", float64(info.MaxClients))
	counter("bloomd_connections_received_total", float64(info.ConnectionsReceived))
	counter("bloomd_connections_rejected_total", float64(info.ConnectionsDenied))
	for _, r := range []string{"auth", "cmd", "key", "channel"} {
		counter("bloomd_acl_access_denied_total", float64(info.ACLDenied[r]), r)
	}
	counter("bloomd_commands_processed_total", float64(info.CommandsProcessed))
	counter("bloomd_net_input_bytes_total", float64(info.NetInputBytes))
	counter("bloomd_net_output_bytes_total", float64(info.NetOutputBytes))
	gauge("bloomd_keys", float64(info.Keys))
	gauge("bloomd_keys_expiring", float64(info.Expiring))
	counter("bloomd_expired_keys_total", float64(info.ExpiredKeys))
	counter("bloomd_oom_rejections_total", float64(info.OOMRejections))
	gauge("bloomd_memory_used_bytes", float64(info.UsedMemory))
	gauge("bloomd_memory_limit_bytes", float64(info.MemoryLimit))
	gauge("bloomd_maxmemory_bytes", float64(info.MaxMemory))
	for _, p := range persistenceMetrics {
		if v, ok := info.Persistence[p.field]; ok {
			if p.counter {
				counter(p.name, v)
			} else {
				gauge(p.name, v)
			}
		}
	}
	if h := info.AOFFsync; h != nil {
		buckets := map[float64]uint64{}
		h.Buckets(func(le float64, n uint64) { buckets[le] = n })
		ch <- prometheus.MustNewConstHistogram(c.descs["bloomd_aof_fsync_duration_seconds"],
			uint64(h.Count), info.AOFFsyncSeconds, buckets)
	}

	if v, ok := info.Replication["master_repl_offset"]; ok {
		gauge("bloomd_repl_offset", v)
	}
	if v, ok := info.Replication["connected_slaves"]; ok {
		gauge("bloomd_connected_replicas", v)
	}
	for _, r := range info.Replicas {
		gauge("bloomd_replica_offset", float64(r.Offset), r.Addr)
		gauge("bloomd_replica_lag_seconds", float64(r.LagSeconds), r.Addr)
	}

	st := c.src.Stats()
	gauge("bloomd_slowlog_length", float64(st.SlowLog.Len()))
	for _, cs := range st.Commands() {
		counter("bloomd_commands_total", float64(cs.Calls), cs.Name)
		counter("bloomd_commands_rejected_total", float64(cs.Rejected), cs.Name)
		counter("bloomd_commands_failed_total", float64(cs.Failed), cs.Name)
		if cs.Latency.Count > 0 {
			buckets := map[float64]uint64{}
			cs.Latency.Buckets(func(le float64, n uint64) { buckets[le] = n })
			ch <- prometheus.MustNewConstHistogram(c.descs["bloomd_command_duration_seconds"],
				uint64(cs.Latency.Count), float64(cs.Ns)/1e9, buckets, cs.Name)
		}
	}
	for _, e := range st.Errors() {
		counter("bloomd_errors_total", float64(e.Count), e.Code)
	}

	filters, matched := c.src.SelectedFilters()
	gauge("bloomd_filters_selected", float64(len(filters)))
	gauge("bloomd_filters_matched", float64(matched))
	for i := range filters {
		f := &filters[i]
		gauge("bloomd_filter_bits", float64(f.Bits()), f.Name)
		gauge("bloomd_filter_bytes", float64(f.Bytes), f.Name)
		gauge("bloomd_filter_items", float64(f.Items()), f.Name)
		gauge("bloomd_filter_capacity", float64(f.Capacity()), f.Name)
		gauge("bloomd_filter_subfilters", float64(len(f.Links)), f.Name)
		gauge("bloomd_filter_fill_ratio", f.Fill(), f.Name)
		gauge("bloomd_filter_fpp", f.FPP(), f.Name)
		gauge("bloomd_filter_target_fpp", f.Target(), f.Name)
	}
}
