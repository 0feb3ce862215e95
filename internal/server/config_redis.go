package server

import (
	"errors"
	"maps"
	"slices"
	"strings"
)

// How bloomd takes each setting of Redis 7.0 that it does not implement as Redis does. Every
// name that Redis 7.0.15's CONFIG GET * lists, and every directive of its redis.conf, is either
// a setting of bloomd (params), an alias of one (redisAliases), listed in redisOnly, or refused
// with its reason (redisRefused and the params that take only a safe value);
// TestRedis70SettingsKnown walks the list recorded from the real server.

// redisOnly lists the settings of redis.conf that mean nothing to bloomd, with why. A config file
// may carry them (a real redis.conf loads): they are accepted with one warning per reason in the
// start-up log. A setting bloomd implements is never here, unless it takes only one value
// (redisFixed, and databases or maxmemory-policy): another value is then accepted with the
// warning, and refused by CONFIG SET. A name in neither place is an error.
var redisOnly = map[string]string{
	// Process management: bloomd runs in the foreground under its supervisor.
	"daemonize":              "bloomd runs in the foreground; let systemd or another supervisor run it",
	"always-show-logo":       "bloomd has no logo",
	"set-proc-title":         "bloomd keeps its process title",
	"proc-title-template":    "bloomd keeps its process title",
	"syslog-enabled":         "bloomd logs to logfile or standard error",
	"syslog-ident":           "bloomd logs to logfile or standard error",
	"syslog-facility":        "bloomd logs to logfile or standard error",
	"crash-log-enabled":      "bloomd writes no crash report; Go prints a crash's stack trace to standard error",
	"crash-memcheck-enabled": "bloomd writes no crash report; Go prints a crash's stack trace to standard error",
	"oom-score-adj":          "bloomd does not change its OOM score",
	"oom-score-adj-values":   "bloomd does not change its OOM score",
	"disable-thp":            "bloomd never forks, so huge pages cost it no copy-on-write; its filters use them",
	"jemalloc-bg-thread":     "bloomd does not use jemalloc",
	"locale-collate":         "bloomd sorts nothing by locale",

	// Networking that bloomd does not offer or does its own way.
	"tcp-backlog":         "bloomd's listen backlog is the kernel's limit, net.core.somaxconn",
	"unixsocket":          "bloomd listens on TCP only",
	"unixsocketperm":      "bloomd listens on TCP only",
	"socket-mark-id":      "bloomd does not mark its sockets",
	"io-threads-do-reads": "bloomd's event loops always read (see io-threads)",

	// Data types and encodings bloomd does not have.
	"databases":                     "bloomd has one database, 0",
	"hash-max-listpack-entries":     "bloomd has one form of hash; HSCAN returns hashes within Redis 7.0's default limits (512 fields, 64 bytes) whole",
	"hash-max-listpack-value":       "bloomd has one form of hash; HSCAN returns hashes within Redis 7.0's default limits (512 fields, 64 bytes) whole",
	"hash-max-ziplist-entries":      "bloomd has one form of hash; HSCAN returns hashes within Redis 7.0's default limits (512 fields, 64 bytes) whole",
	"hash-max-ziplist-value":        "bloomd has one form of hash; HSCAN returns hashes within Redis 7.0's default limits (512 fields, 64 bytes) whole",
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
	"activerehashing":               "bloomd's keyspace has no background rehashing",
	"activedefrag":                  "bloomd does not defragment",
	"active-defrag-ignore-bytes":    "bloomd does not defragment",
	"active-defrag-threshold-lower": "bloomd does not defragment",
	"active-defrag-threshold-upper": "bloomd does not defragment",
	"active-defrag-cycle-min":       "bloomd does not defragment",
	"active-defrag-cycle-max":       "bloomd does not defragment",
	"active-defrag-max-scan-fields": "bloomd does not defragment",

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
	"client-query-buffer-limit":   "bloomd limits requests with proto-max-bulk-len",
	"tracking-table-max-keys":     "bloomd has no client-side caching",
	"hz":                          "bloomd's background tasks run ten times a second",
	"dynamic-hz":                  "bloomd's background tasks run ten times a second",

	// Persistence details of Redis's own formats.
	"stop-writes-on-bgsave-error":   "bloomd keeps accepting writes after a failed snapshot (it logs the failure); a write its log cannot record is never acknowledged",
	"rdb-del-sync-files":            "bloomd keeps no file from a full sync: a primary sends its snapshot without one, a replica removes its copy once loaded",
	"rdb-save-incremental-fsync":    "bloomd writes its snapshot with direct I/O where the file system allows, and syncs it at its end",
	"aof-rewrite-incremental-fsync": "bloomd writes its snapshot with direct I/O where the file system allows, and syncs it at its end",
	"aof-load-truncated":            "bloomd always drops a torn last record and refuses other damage",
	"aof-use-rdb-preamble":          "bloomd's rewrite is always a snapshot and a new log",
	"aof-timestamp-enabled":         "bloomd's logs carry no timestamps",
	"aof-disable-auto-gc":           "bloomd removes the logs that a new snapshot supersedes",
	"appenddirname":                 "bloomd keeps its logs in dir itself, named by appendfilename",
	"no-appendfsync-on-rewrite":     "bloomd keeps syncing its log while it rewrites",

	// Replication: bloomd replicates (internal/repl), its own way in these details.
	"replica-lazy-flush":               "bloomd frees memory through Go's garbage collector",
	"replica-announced":                "bloomd's replicas are always announced to Sentinel",
	"replica-ignore-maxmemory":         "a bloomd replica applies every write of its primary whatever its own maxmemory",
	"replica-ignore-disk-write-errors": "a bloomd replica goes on applying its primary's writes when its own log fails",
	"repl-diskless-sync":               "a bloomd primary always sends a full sync's snapshot straight to the replica's connection, without a file",
	"repl-diskless-sync-delay":         "a bloomd primary starts a full sync as soon as a replica asks, without waiting for others",
	"repl-diskless-sync-max-replicas":  "a bloomd primary starts a full sync as soon as a replica asks, without waiting for others",
	"repl-disable-tcp-nodelay":         "bloomd's replication link always sends at once (TCP_NODELAY)",
	"repl-backlog-ttl":                 "a bloomd primary keeps its backlog for as long as it runs",
	"repl-ping-replica-period":         "a bloomd primary pings its replicas every 10 seconds",
	"propagation-error-behavior":       "bloomd refuses to load a log with a record that fails, and logs (at debug level) a failed command of its primary's stream and goes on",
	"shutdown-timeout":                 "bloomd does not wait for replicas to catch up before it exits",

	// Diagnostics, access lists and modules.
	"latency-tracking":                  "bloomd always tracks each command's latency (INFO latencystats)",
	"latency-tracking-info-percentiles": "bloomd's INFO latencystats gives the 50th, 99th and 99.9th percentiles",
	"enable-protected-configs":          "bloomd never changes dir or dbfilename at run time",
	"enable-debug-command":              "bloomd has no DEBUG command",
	"enable-module-command":             "bloomd's MODULE command only lists; it loads no module",
	"loadmodule":                        "bloomd answers BF.* itself; no module is loaded",
	"sanitize-dump-payload":             "bloomd checks every RESTORE payload and LOADCHUNK chunk in full, whatever this says",
	"acl-pubsub-default":                "bloomd gives new users no channels (resetchannels); grant &* to the users that need them",
	"active-expire-effort":              "bloomd's active expiry works as Redis's does at its default effort, 1",
	"ignore-warnings":                   "bloomd checks for none of the kernel problems that Redis warns about",
	"server_cpulist":                    "bloomd does not pin its threads to CPUs; use taskset or systemd's CPUAffinity",
	"bio_cpulist":                       "bloomd does not pin its threads to CPUs; use taskset or systemd's CPUAffinity",
	"aof_rewrite_cpulist":               "bloomd does not pin its threads to CPUs; use taskset or systemd's CPUAffinity",
	"bgsave_cpulist":                    "bloomd does not pin its threads to CPUs; use taskset or systemd's CPUAffinity",

	// TLS details that Go's crypto/tls decides itself, and outgoing TLS that bloomd never makes.
	"tls-ciphers":               "bloomd offers Go's default TLS 1.2 cipher suites, all with ECDHE key exchange",
	"tls-ciphersuites":          "Go's TLS 1.3 suites cannot be chosen; all of them are strong",
	"tls-prefer-server-ciphers": "Go's TLS chooses the cipher suite itself",
	"tls-dh-params-file":        "bloomd's TLS has no finite-field Diffie-Hellman; its key exchange is elliptic-curve",
	"tls-session-caching":       "bloomd's TLS resumes sessions with Go's session tickets, and keeps no session cache",
	"tls-session-cache-size":    "bloomd's TLS resumes sessions with Go's session tickets, and keeps no session cache",
	"tls-session-cache-timeout": "bloomd's TLS resumes sessions with Go's session tickets, and keeps no session cache",
	"tls-client-cert-file":      "bloomd makes no TLS connection of its own (tls-replication is no)",
	"tls-client-key-file":       "bloomd makes no TLS connection of its own (tls-replication is no)",
	"tls-cluster":               "bloomd's cluster bus is plain TCP",
}

// redisFixed gives, for settings of redisOnly, the value that says what bloomd does: a config
// file with that value loads without a warning, CONFIG GET answers it, and CONFIG SET takes it
// and refuses any other with the reason.
var redisFixed = map[string]string{
	"daemonize":                        "no",
	"always-show-logo":                 "no",
	"set-proc-title":                   "no",
	"syslog-enabled":                   "no",
	"crash-log-enabled":                "no",
	"crash-memcheck-enabled":           "no",
	"oom-score-adj":                    "no",
	"disable-thp":                      "no",
	"socket-mark-id":                   "0",
	"io-threads-do-reads":              "yes",
	"hz":                               "10",
	"dynamic-hz":                       "no",
	"stop-writes-on-bgsave-error":      "no",
	"aof-load-truncated":               "yes",
	"aof-use-rdb-preamble":             "yes",
	"aof-timestamp-enabled":            "no",
	"aof-disable-auto-gc":              "no",
	"no-appendfsync-on-rewrite":        "no",
	"replica-announced":                "yes",
	"replica-ignore-maxmemory":         "yes",
	"replica-ignore-disk-write-errors": "yes",
	"repl-diskless-sync":               "yes",
	"repl-diskless-sync-delay":         "0",
	"repl-diskless-sync-max-replicas":  "0",
	"repl-disable-tcp-nodelay":         "no",
	"repl-backlog-ttl":                 "0",
	"repl-ping-replica-period":         "10",
	"shutdown-timeout":                 "0",
	"enable-debug-command":             "no",
	"enable-module-command":            "no",
	"acl-pubsub-default":               "resetchannels",
	"active-expire-effort":             "1",
}

// redisAliases maps Redis's older names of settings that bloomd implements to their names.
var redisAliases = map[string]string{
	"slaveof":                       "replicaof",
	"slave-serve-stale-data":        "replica-serve-stale-data",
	"slave-read-only":               "replica-read-only",
	"slave-priority":                "replica-priority",
	"slave-announce-ip":             "replica-announce-ip",
	"slave-announce-port":           "replica-announce-port",
	"min-slaves-to-write":           "min-replicas-to-write",
	"min-slaves-max-lag":            "min-replicas-max-lag",
	"slave-lazy-flush":              "replica-lazy-flush",
	"slave-ignore-maxmemory":        "replica-ignore-maxmemory",
	"repl-ping-slave-period":        "repl-ping-replica-period",
	"cluster-slave-validity-factor": "cluster-replica-validity-factor",
	"cluster-slave-no-failover":     "cluster-replica-no-failover",
}

// redisRefused lists the redis.conf directives that bloomd refuses, with why: rename-command,
// because going on without it would leave a server less protected than its operator believes,
// and sentinel, because the file is Sentinel's.
var redisRefused = map[string]string{
	"sentinel":       "bloomd is not Redis Sentinel: run redis-sentinel with this file (Sentinel watches bloomd as it watches Redis)",
	"rename-command": "bloomd cannot rename or hide commands; deny them to users with ACL rules instead (user lines, e.g. \"user default on nopass ~* &* +@all -flushall -config\")",
}

// The settings that bloomd takes only with a value that keeps its meaning: another is refused,
// because accepting it would make a server look like something it is not.
func init() {
	for _, name := range slices.Sorted(maps.Keys(redisFixed)) {
		params = append(params, onlyParam(name, redisFixed[name], redisOnly[name]))
	}
	params = append(params,
		onlyParam("tls-replication", "no", "bloomd's replica connects to its primary without TLS; point replicaof at a plain port"),
		onlyParam("tls-key-file-pass", "", "bloomd cannot read an encrypted private key; decrypt it (openssl pkey -in key.pem -out plain.pem) and keep the file private"),
		onlyParam("tls-client-key-file-pass", "", "bloomd cannot read an encrypted private key, and makes no TLS connection of its own"),
	)
}

// onlyParam is a setting that takes one value: CONFIG GET answers it and anything else is
// refused with why.
func onlyParam(name, value, why string) param {
	return param{name, true, func(*Config) string { return value }, func(_ *Config, v string) error {
		if !strings.EqualFold(v, value) {
			return errors.New(why)
		}
		return nil
	}}
}

// canonical returns the setting name for name: lowercased, an alias replaced by its setting.
func canonical(name string) string {
	name = strings.ToLower(name)
	if a, ok := redisAliases[name]; ok {
		return a
	}
	return name
}

// appendAliases appends to a CONFIG GET reply the aliases that pattern matches and their
// settings' values, as Redis 7.0 lists them.
func appendAliases(out []string, seen map[string]bool, pattern string, c *Config) []string {
	for _, alias := range slices.Sorted(maps.Keys(redisAliases)) {
		if p := findParam(alias); p != nil && !seen[alias] && globMatch([]byte(pattern), []byte(alias)) {
			seen[alias] = true
			out = append(out, alias, p.get(c))
		}
	}
	return out
}

// isRedisOnly returns why the redis.conf setting name means nothing to bloomd, if it does not.
func isRedisOnly(name string) (string, bool) {
	why, ok := redisOnly[canonical(name)]
	return why, ok
}

// isRefused returns why bloomd refuses the redis.conf directive name, if it does.
func isRefused(name string) (string, bool) {
	why, ok := redisRefused[strings.ToLower(name)]
	return why, ok
}
