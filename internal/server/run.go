package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"
)

// ErrUsage reports a command line that bloomd cannot run with; Run has printed why.
var ErrUsage = errors.New("server: bad command line")

const usage = `Usage: bloomd [/path/to/bloomd.conf] [--setting value ...]

bloomd is a Bloom filter server that speaks RESP2 and RESP3 and answers RedisBloom's
BF.* commands. Settings use redis.conf names, in the config file or as flags:

  --bind addr [addr ...]   addresses to listen on (default 127.0.0.1)
  --port n                 TCP port (default 6379; 0 disables)
  --requirepass pass       password for AUTH (default none)
  --maxclients n           most connections at once (default 10000)
  --maxmemory bytes        memory for filters, e.g. 2gb (default: the machine's memory)
  --timeout seconds        close clients idle this long (default 0: never)
  --dir path               working directory for data files (default .)
  --tls-port n             TLS port (default 0: off), with --tls-cert-file and --tls-key-file
  --loglevel level         debug, verbose, notice (default) or warning
  --logfile path           log file (default: standard error)
  --proto-max-bulk-len n   longest bulk string in a request (default 512mb)

Examples:
  bloomd
  bloomd --port 6380 --maxmemory 4gb
  bloomd /etc/bloomd.conf --loglevel debug
`

// Run runs bloomd with the given command-line arguments until ctx is done (SIGINT or SIGTERM in
// cmd/bloomd), then shuts down gracefully: no new connections, every received command answered,
// at most 10 seconds. Usage and version requests print to out and return nil.
func Run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 1 {
		switch args[0] {
		case "-h", "--help", "-help":
			fmt.Fprint(out, usage)
			return nil
		case "-v", "--version", "-version":
			fmt.Fprintf(out, "bloomd v=%s redis=%s bf=%d\n", bloomdVersion, redisVersion, bfModuleVer)
			return nil
		}
	}
	cfg, file, err := ParseArgs(args)
	if err != nil {
		fmt.Fprintf(out, "bloomd: %v\n\n%s", err, usage)
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	s, err := New(cfg)
	if err != nil {
		return err
	}
	if file != "" {
		s.log.Info("configuration loaded", "file", file)
	}
	if err := s.Listen(); err != nil {
		return err
	}
	if path := os.Getenv("BLOOMD_CPUPROFILE"); path != "" {
		// For profiling the hot path under redis-benchmark: a CPU profile of the whole run.
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("server: BLOOMD_CPUPROFILE: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("server: BLOOMD_CPUPROFILE: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	select {
	case err := <-served:
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(sctx)
		return err
	case <-ctx.Done():
	}
	s.log.Info("received shutdown signal; finishing the commands in flight")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = s.Shutdown(sctx)
	<-served
	if err != nil {
		s.log.Warn("closed connections that did not finish in time")
	}
	s.log.Info("bloomd is now ready to exit, bye bye")
	return nil
}
