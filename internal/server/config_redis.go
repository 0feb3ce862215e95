package server

import "strings"

// redisOnly lists the settings of redis.conf that mean nothing to bloomd, with why. A config file
// may carry them (a real redis.conf loads): each is accepted with one warning in the start-up
// log. A setting bloomd implements is never here; a name in neither place is an error.
var redisOnly = map[string]string{
	// Process management: bloomd runs in the foreground under its supervisor.
	"daemonize":              "bloomd runs in the foreground; let systemd or another supervisor run it",
	"supervised":             "bloomd runs in the foreground; let systemd or another supervisor run it",
	"pidfile":                "bloomd writes no pid file; its pid is in the start-up log",
	"always-show-logo":       "bloomd has no logo",
	"set-proc-title":         "bloomd keeps its process title",
	"proc-title-template":    "bloomd keeps its process title",
	"syslog-enabled":         "bloomd logs to logfile or standard error",
	"syslog-ident":           "bloomd logs to logfile or standard error",
	"syslog-facility":        "bloomd logs to logfile or standard error",
	"crash-log-enabled":      "not applicable to bloomd",
	"crash-memcheck-enabled": "not applicable to bloomd",
	"oom-score-adj":          "bloomd does not change its OOM score",
	"oom-score-adj-values":   "bloomd does not change its OOM score",
	"disable-thp":            "bloomd's filters use huge pages where the kernel allows",
	"jemalloc-bg-thread":     "bloomd does not use jemalloc",
	"locale-collate":         "not applicable to bloomd",

	// Networking that bloomd does not offer or does its own way.
	"tcp-backlog":         "bloomd uses the kernel's default listen backlog",
	"tcp-keepalive":       "bloomd sends keepalives every 300 seconds",
	"unixsocket":          "bloomd listens on TCP only",
	"unixsocketperm":      "bloomd listens on TCP only",
	"socket-mark-id":      "not applicable to bloomd",
	"io-threads-do-reads": "bloomd's event loops always read (see io-threads)",

	// Data types and encodings bloomd does not have.
	"databases":                     "bloomd has one database, 0",
	"hash-max-listpack-entries":     "bloomd has no hashes",
	"hash-max-listpack-value":       "bloomd has no hashes",
	"hash-max-ziplist-entries":      "bloomd has no hashes",
	"hash-max-ziplist-value":        "bloomd has no hashes",
	"list-max-listpack-size":        "bloomd has no lists",
	"list-max-ziplist-size":         "bloomd has no lists",
	"list-compress-depth":           "bloomd has no lists",
	"set-max-intset-entries":        "bloomd has no sets",
	"set-max-listpack-entries":      "bloomd has no sets",
	"set-max-listpack-value":        "bloomd has no sets",
	"zset-max-listpack-entries":     "bloomd has no sorted sets",
	"zset-max-listpack-value":       "bloomd has no sorted sets",
	"zset-max-ziplist-entries":      "bloomd has no sorted sets",
	"zset-max-ziplist-value":        "bloomd has no sorted sets",
	"hll-sparse-max-bytes":          "bloomd has no HyperLogLogs",
	"stream-node-max-bytes":         "bloomd has no streams",
	"stream-node-max-entries":       "bloomd has no streams",
	"activerehashing":               "bloomd's keyspace does not rehash incrementally",
	"activedefrag":                  "bloomd does not defragment",
	"active-defrag-ignore-bytes":    "bloomd does not defragment",
	"active-defrag-threshold-lower": "bloomd does not defragment",
	"active-defrag-threshold-upper": "bloomd does not defragment",
	"active-defrag-cycle-min":       "bloomd does not defragment",
	"active-defrag-cycle-max":       "bloomd does not defragment",
	"active-defrag-max-scan-fields": "bloomd does not defragment",
	"lua-time-limit":                "bloomd has no scripting",
	"busy-reply-threshold":          "bloomd has no scripting",
	"notify-keyspace-events":        "bloomd sends no keyspace notifications",

	// Memory: bloomd never evicts (noeviction).
	"maxmemory-policy":            "bloomd never evicts a filter (noeviction)",
	"maxmemory-samples":           "bloomd never evicts a filter (noeviction)",
	"maxmemory-eviction-tenacity": "bloomd never evicts a filter (noeviction)",
	"maxmemory-clients":           "bloomd does not limit clients' memory",
	"lfu-log-factor":              "bloomd never evicts a filter (noeviction)",
	"lfu-decay-time":              "bloomd never evicts a filter (noeviction)",
	"lazyfree-lazy-eviction":      "bloomd frees memory through Go's garbage collector",
	"lazyfree-lazy-expire":        "bloomd frees memory through Go's garbage collector",
	"lazyfree-lazy-server-del":    "bloomd frees memory through Go's garbage collector",
	"lazyfree-lazy-user-del":      "bloomd frees memory through Go's garbage collector",
	"lazyfree-lazy-user-flush":    "bloomd frees memory through Go's garbage collector",
	"client-output-buffer-limit":  "bloomd does not limit output buffers",
	"client-query-buffer-limit":   "bloomd limits requests with proto-max-bulk-len",
	"tracking-table-max-keys":     "bloomd has no client-side caching",
	"hz":                          "bloomd's background tasks have their own schedule",
	"dynamic-hz":                  "bloomd's background tasks have their own schedule",

	// Persistence details of Redis's own formats.
	"stop-writes-on-bgsave-error":   "bloomd keeps answering; a failed log write is refused instead",
	"rdb-del-sync-files":            "not applicable to bloomd",
	"rdb-save-incremental-fsync":    "bloomd syncs its snapshot once, at its end",
	"aof-rewrite-incremental-fsync": "bloomd syncs its snapshot once, at its end",
	"aof-load-truncated":            "bloomd always drops a torn last record and refuses other damage",
	"aof-use-rdb-preamble":          "bloomd's rewrite is always a snapshot and a new log",
	"aof-timestamp-enabled":         "bloomd's logs carry no timestamps",
	"appenddirname":                 "bloomd keeps its logs in dir, named by appendfilename",
	"no-appendfsync-on-rewrite":     "bloomd keeps syncing during a rewrite",

	// Replication, cluster, diagnostics and access lists bloomd does not have.
	"replica-serve-stale-data":          "bloomd has no replication",
	"replica-read-only":                 "bloomd has no replication",
	"replica-lazy-flush":                "bloomd has no replication",
	"replica-priority":                  "bloomd has no replication",
	"replica-announced":                 "bloomd has no replication",
	"replica-ignore-maxmemory":          "bloomd has no replication",
	"repl-diskless-sync":                "bloomd has no replication",
	"repl-diskless-sync-delay":          "bloomd has no replication",
	"repl-diskless-sync-max-replicas":   "bloomd has no replication",
	"repl-diskless-load":                "bloomd has no replication",
	"repl-disable-tcp-nodelay":          "bloomd has no replication",
	"repl-backlog-size":                 "bloomd has no replication",
	"repl-backlog-ttl":                  "bloomd has no replication",
	"repl-timeout":                      "bloomd has no replication",
	"repl-ping-replica-period":          "bloomd has no replication",
	"min-replicas-to-write":             "bloomd has no replication",
	"min-replicas-max-lag":              "bloomd has no replication",
	"latency-monitor-threshold":         "bloomd has no latency monitor",
	"latency-tracking":                  "bloomd has no latency monitor",
	"latency-tracking-info-percentiles": "bloomd has no latency monitor",
	"slowlog-log-slower-than":           "bloomd has no slow log",
	"slowlog-max-len":                   "bloomd has no slow log",
	"enable-protected-configs":          "bloomd has no protected configs",
	"enable-debug-command":              "bloomd has no DEBUG command",
	"enable-module-command":             "bloomd has no MODULE command",
	"loadmodule":                        "bloomd answers BF.* itself; no module is loaded",
}

// isRedisOnly returns why the redis.conf setting name means nothing to bloomd, if it does not.
func isRedisOnly(name string) (string, bool) {
	why, ok := redisOnly[strings.ToLower(name)]
	return why, ok
}
