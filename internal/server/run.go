package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bloomd/bloom/internal/debugport"
	"github.com/bloomd/bloom/internal/persist"
	"github.com/bloomd/bloom/internal/protected"
	"github.com/bloomd/bloom/internal/version"
)

// ErrUsage reports a command line that bloomd cannot run with; Run has printed why.
var ErrUsage = errors.New("server: bad command line")

// ErrDamagedLog reports that "bloomd check-aof" found a damaged log and did not fix it; Run has
// printed where and how.
var ErrDamagedLog = persist.ErrDamaged

const usage = `Usage: bloomd [/path/to/bloomd.conf] [--setting value ...]
       bloomd check-aof [--fix] FILE
       bloomd --version | --help

bloomd is a Bloom filter server that speaks RESP2 and RESP3 and answers RedisBloom's
BF.* commands. Settings use redis.conf names, in the config file or as flags; a
redis.conf loads as it is (Redis settings that mean nothing here are ignored with a
warning, one line per reason; the few that would mislead are refused with the reason):

  --bind addr [addr ...]   addresses to listen on (default 127.0.0.1)
  --port n                 TCP port (default 6379; 0 disables)
  --requirepass pass       password for AUTH (default none): the default user's
  --user "name rules..."   a user with Redis's ACL rules, e.g. "checker on >pw ~urls:*
                           -@all +bf.exists" (repeatable; or user lines in the file)
  --aclfile path           users in a file instead, for ACL LOAD and ACL SAVE
  --protected-mode yes|no  without a password, refuse clients that are not on the
                           loopback interface (default yes)
  --maxclients n           most connections at once (default 10000)
  --maxmemory bytes        memory for filters, e.g. 2gb (default and most: what the
                           process's limits leave: ulimit -v, cgroup, GOMEMLIMIT, RAM)
  --timeout seconds        close clients idle this long (default 0: never)
  --dir path               directory of the data files, created if missing (default .)
  --tls-port n             TLS port (default 0: off), with --tls-cert-file and --tls-key-file;
                           --tls-ca-cert-file or --tls-ca-cert-dir make clients present a
                           certificate it signed (--tls-auth-clients yes|optional|no)
  --tcp-keepalive seconds  idle time before keepalive probes (default 300; 0: none)
  --loglevel level         debug, verbose, notice (default) or warning
  --logfile path           log file (default: standard error; the path is printed there)
  --supervised systemd     tell systemd (a unit of Type=notify) when bloomd is ready
  --pidfile path           write the pid there while running (default: none)
  --proto-max-bulk-len n   longest bulk string in a request (default 512mb)
  --client-output-buffer-limit "class hard soft secs ..."   unread output a client may leave
                           (default "normal 0 0 0 replica 256mb 64mb 60 pubsub 32mb 8mb 60")
  --notify-keyspace-events classes   keyspace notifications with Redis's classes, e.g.
                           KEA (default "": none)
  --io-threads n           event loops serving plain TCP clients on Linux (default 0: one
                           per core but one; -1: a goroutine per connection instead)
  --debug-port n           serve Go's profiles (net/http/pprof) on 127.0.0.1:n (default 0: off)
  --http-allowed-hosts "name ..."  Host names the metrics and debug ports answer besides
                           loopback ones and their own address (default none; "*": any)

Monitoring (see README.md):
  --metrics-port n         HTTP port of Prometheus's /metrics and a status page (default 0: off)
  --metrics-bind addr      its address (default 127.0.0.1)
  --metrics-filter-pattern glob   filters with series of their own (default none)
  --metrics-max-filters n  at most this many of them, the largest (default 1000)
  --slowlog-log-slower-than us, --slowlog-max-len n, --latency-monitor-threshold ms

Filters made on the fly (Redis 8's names; see README.md, "Defaults for new filters"):
  --bf-error-rate r, --bf-initial-size n, --bf-expansion-factor n (defaults 0.01, 100, 2)
  --cf-initial-size n, --cf-bucket-size n, --cf-max-iterations n, --cf-expansion-factor n,
  --cf-max-expansions n    (defaults 1024, 2, 20, 1, 32)
  --bf-max-filter-bytes bytes, --cf-max-filter-bytes bytes   the most one filter may hold
                           (default 0: no limit beyond maxmemory)

Durability (files in --dir; see README.md):
  --appendonly yes|no      log every write before acknowledging it (default yes)
  --appendfsync policy     always (fsync before each reply, group-committed), everysec
                           (default: a crash of the machine loses at most ~1 s) or no
  --save "secs changes.."  snapshot when at least changes writes in secs seconds
                           (default "3600 1 300 100 60 10000"; "" for none)
  --dbfilename name        the snapshot (default dump.bdb)
  --appendfilename name    the logs' base name (default appendonly.aof: .1, .2, ...)
  --auto-aof-rewrite-percentage n, --auto-aof-rewrite-min-size bytes
                           rewrite (snapshot and new log) when the log passes both
                           (default 100 and 64mb)
  --shutdown-on-sigterm flags, --shutdown-on-sigint flags
                           default (save if there are save rules), save or nosave

  bloomd check-aof [--fix] FILE   check a log or a snapshot; --fix truncates a log at its last
                           good record, or rewrites a snapshot with every intact key (what it
                           removes is kept beside the file)

Examples:
  bloomd
  bloomd --port 6380 --maxmemory 4gb
  bloomd /etc/bloomd.conf --loglevel debug
  bloomd --dir /var/lib/bloomd --appendfsync always
`

// Run runs bloomd with the given command-line arguments until ctx is done (SIGINT or SIGTERM in
// cmd/bloomd), then shuts down gracefully: no new connections, every received command answered,
// at most 10 seconds. Usage and version requests print to stdout and return nil; a command line
// bloomd cannot run with is reported in one line on stderr, and Run returns an error wrapping
// ErrUsage.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "check-aof" {
		return checkAOF(args[1:], stdout)
	}
	if len(args) == 1 {
		switch args[0] {
		case "-h", "--help", "-help", "help":
			fmt.Fprint(stdout, usage)
			return nil
		case "-v", "--version", "-version", "version":
			fmt.Fprintf(stdout, "bloomd v=%s redis=%s bf=%d\n", version.String(), redisVersion, bfModuleVer)
			return nil
		}
	}
	cfg, file, err := ParseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "bloomd: %s\n", strings.TrimPrefix(err.Error(), "server: "))
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	s, err := New(cfg)
	if err != nil {
		return err
	}
	s.configFile = file
	if cfg.LogFile != "" && cfg.Logger == nil {
		// The terminal would otherwise stay silent: say once where everything goes.
		where, err := filepath.Abs(cfg.LogFile)
		if err != nil {
			where = cfg.LogFile
		}
		fmt.Fprintf(stderr, "bloomd: logging to %s (pid %d)\n", where, os.Getpid())
	}
	s.logStart(file)
	s.logMemoryLimit()
	if err := s.checkRoom(); err != nil {
		s.Shutdown(context.Background())
		return err
	}
	s.limitRuntime()
	if err := s.openStore(); err != nil {
		return err
	}
	if cfg.DebugPort != 0 {
		dbg, err := debugport.Start(cfg.DebugPort, s.allowedHosts)
		if err != nil {
			return fmt.Errorf("server: debug-port: %w", err)
		}
		defer dbg.Close()
		s.log.Info("serving Go profiles (net/http/pprof) on the debug port", "addr", dbg.Addr().String()+"/debug/pprof/")
	}
	if err := s.Listen(); err != nil {
		return err
	}
	for _, a := range s.Addrs() {
		s.log.Info("listening; loading the data files", "addr", a.String())
	}
	if err := s.initCluster(); err != nil {
		s.Shutdown(context.Background())
		return err
	}
	mln, err := s.listenMetrics()
	if err != nil {
		s.Shutdown(context.Background())
		return fmt.Errorf("server: metrics-port: %w", err)
	}
	if mln != nil {
		s.ServeMetrics(mln)
		s.log.Info("serving /metrics and the page", "addr", "http://"+mln.Addr().String()+"/")
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	sd := s.newNotifier(cfg.Supervised)
	defer s.writePidFile(cfg.PidFile)()

	// Load the data files while clients are answered -LOADING.
	loaded := make(chan error, 1)
	go func() { loaded <- s.loadData() }()
	stop := func(save bool) error {
		s.notifySystemd(sd, "STOPPING=1")
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if s.Shutdown(sctx) != nil {
			s.log.Warn("closed connections that did not finish in time")
		}
		<-served
		if err := s.closeData(save); err != nil {
			s.log.Error("failed to save or sync the data files on exit", "err", err)
			s.saveReplState(false)
			return fmt.Errorf("server: on exit: %w", err)
		}
		s.saveReplState(save || s.config().AppendOnly)
		s.log.Info("bloomd is now ready to exit, bye bye")
		return nil
	}
	// abandon stops serving before the data is loaded: nothing was written yet but what the
	// load repairs, and the load is abandoned with the process.
	abandon := func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Shutdown(sctx)
		<-served
	}
	select {
	case err := <-loaded:
		if err != nil {
			s.log.Error("cannot load the data files; bloomd exits (the reason follows on standard error)")
			abandon()
			if errors.Is(err, persist.ErrNoMemory) {
				err = fmt.Errorf("%w\nThe data needs more memory than bloomd may use (%d bytes, set by %s); the data files are left as they were. Start bloomd with more memory or a higher limit", err, s.ceiling.bytes, s.ceiling.source())
			}
			return err
		}
		s.restoreReplState()
		s.StartReplication()
		s.startCluster()
		s.log.Info("bloomd ready to accept connections")
		s.notifySystemd(sd, "READY=1\nSTATUS=Ready to accept connections")
	case err := <-served:
		s.Shutdown(context.Background())
		return err
	case <-ctx.Done():
		s.log.Info("received shutdown signal while loading; exiting without saving")
		abandon()
		return nil
	}

	save := s.store.Rules() // as Redis: a signal saves when there are save rules
	select {
	case err := <-served:
		stop(false)
		return err
	case <-ctx.Done():
		cur := s.config()
		var sig string
		save, sig = signalSave(ctx, &cur, save) // unless shutdown-on-sigint/-sigterm say otherwise
		s.log.Info("received shutdown signal; finishing the commands in flight", "signal", sig, "save", save)
	case save = <-s.ShutdownRequested():
		s.log.Info("shutting down on request; finishing the commands in flight")
	}
	return stop(save)
}

// logStart logs what an operator needs to know of this run: the version and pid, the config
// file, each Redis setting it ignores, the absolute data directory, the persistence settings,
// the bind addresses and whether a password is set, and a warning when the server is reachable
// from beyond the loopback interface without a password.
func (s *Server) logStart(file string) {
	cfg := s.config()
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		dir = cfg.Dir
	}
	s.log.Info("bloomd starting", "version", version.String(), "pid", os.Getpid(), "config", file)
	for _, g := range cfg.ignoredByReason() {
		s.log.Warn("settings of Redis ignored", "settings", g[1], "why", g[0])
	}
	s.log.Info("settings", "dir", dir, "appendonly", yesNo(cfg.AppendOnly), "appendfsync", cfg.AppendFsync.String(),
		"save", persist.FormatSave(cfg.Save), "bind", strings.Join(cfg.Bind, " "), "port", cfg.Port, "tls-port", cfg.TLSPort,
		"password", yesNo(!s.defaultAuthed()), "users", len(s.acl.users.Names()), "protected-mode", yesNo(cfg.ProtectedMode))
	if exposed := protected.Exposed(cfg.Bind); len(exposed) > 0 && s.defaultAuthed() {
		if cfg.ProtectedMode {
			s.log.Warn("bound beyond the loopback interface without a password: protected mode refuses every client not on loopback; set requirepass to serve them",
				"bind", strings.Join(exposed, " "))
		} else {
			s.log.Warn("bound beyond the loopback interface without a password and with protected-mode no: anyone who can reach the port can read and change every filter; set requirepass",
				"bind", strings.Join(exposed, " "))
		}
	}
}

const checkAOFUsage = `Usage: bloomd check-aof [--fix] FILE

Checks a data file of bloomd: an append-only log record by record, or a snapshot (dump.bdb)
section by section, every checksum, size and filter header, as loading does. Stop bloomd first.

A log: a torn last record (a crash in the middle of a write) is reported; bloomd drops it by
itself when it starts. Damage anywhere else is reported with its byte offset and the number of
records after it; with --fix the log is truncated at the last good record, the records lost are
counted, and the bytes cut are kept beside it in FILE.removed-from-OFFSET.

A snapshot: each damaged section is reported with its key, and the intact keys are counted;
with --fix the snapshot is rewritten with every intact key (the logs after it still apply), and
the damaged file is kept beside it as FILE.damaged. No existing file is ever overwritten: a
name already taken gets .2, .3, ...

Examples:
  bloomd check-aof appendonly.aof.3
  bloomd check-aof --fix appendonly.aof.3
  bloomd check-aof --fix dump.bdb
`

// checkAOF is "bloomd check-aof [--fix] FILE".
func checkAOF(args []string, out io.Writer) error {
	fix := false
	var files []string
	for _, a := range args {
		switch a {
		case "--fix", "-fix":
			fix = true
		case "-h", "--help", "-help":
			fmt.Fprint(out, checkAOFUsage)
			return nil
		default:
			files = append(files, a)
		}
	}
	if len(files) != 1 {
		fmt.Fprintf(out, "bloomd check-aof: want one log or snapshot file\n\n%s", checkAOFUsage)
		return ErrUsage
	}
	return persist.CheckLog(files[0], fix, out) // ErrDamagedLog: the report is printed
}
