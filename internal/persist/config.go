package persist

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Config holds the store's settings, named as in redis.conf.
type Config struct {
	Dir            string // where the files live
	DBFilename     string // the snapshot (dbfilename); default "dump.bdb"
	AppendFilename string // the logs' base name (appendfilename): logs are <name>.1, <name>.2, ...
	AppendOnly     bool   // keep a log of every write (appendonly)
	AppendFsync    Fsync  // when log records reach the disk (appendfsync)
	Save           []SaveRule

	// A log rewrite (a snapshot and a new log) starts by itself when the logs since the last
	// snapshot are at least AutoRewriteMinSize bytes and at least AutoRewritePercentage percent
	// of that snapshot's size (auto-aof-rewrite-min-size, auto-aof-rewrite-percentage; a
	// percentage of 0 turns it off).
	AutoRewritePercentage int
	AutoRewriteMinSize    int64

	// RDB holds the settings of snapshots in Redis's RDB format, which a DBFilename ending in
	// .rdb asks for (see IsRDBName), and of RDB files loaded in any case.
	RDB RDBOptions

	// FS is the file system; nil means the operating system's.
	FS FS
	// Logger receives the store's log lines; nil discards them.
	Logger *slog.Logger
	// FsyncObserver, if not nil, is called with the duration of each successful fsync of the
	// append-only log (the syncs that aof_fsyncs counts), from the goroutine that synced, while
	// writers may wait for that sync: it must be fast and safe for concurrent use.
	FsyncObserver func(time.Duration)
}

// Defaults of the settings the store adds to bloomd's, as Redis has them except for the file
// names (the formats are bloomd's own, so the names say so).
const (
	DefaultDBFilename     = "dump.bdb"
	DefaultAppendFilename = "appendonly.aof"
	DefaultSave           = "3600 1 300 100 60 10000"
)

// DefaultConfig returns the default settings for dir.
func DefaultConfig(dir string) Config {
	save, _ := ParseSave(DefaultSave)
	return Config{
		Dir:                   dir,
		DBFilename:            DefaultDBFilename,
		AppendFilename:        DefaultAppendFilename,
		AppendOnly:            true,
		AppendFsync:           FsyncEverysec,
		Save:                  save,
		AutoRewritePercentage: 100,
		AutoRewriteMinSize:    64 << 20,
	}
}

// Validate reports settings the store cannot work with.
func (c *Config) Validate() error {
	for _, n := range []struct{ setting, v string }{{"dbfilename", c.DBFilename}, {"appendfilename", c.AppendFilename}} {
		if n.v == "" || strings.ContainsAny(n.v, "/\\") || n.v == "." || n.v == ".." {
			return fmt.Errorf("persist: %s %q must be a plain file name (the directory is set by dir)", n.setting, n.v)
		}
	}
	if c.DBFilename == c.AppendFilename {
		return fmt.Errorf("persist: dbfilename and appendfilename are both %q", c.DBFilename)
	}
	if c.AutoRewritePercentage < 0 || c.AutoRewriteMinSize < 0 {
		return fmt.Errorf("persist: auto-aof-rewrite settings must not be negative")
	}
	return nil
}

// A SaveRule asks for a snapshot when at least Changes writes were made in the last Seconds
// seconds since the last snapshot (one "seconds changes" pair of redis.conf's save setting).
type SaveRule struct {
	Seconds int64
	Changes int64
}

// ParseSave parses a save setting: pairs of "seconds changes", or "" for no snapshots.
func ParseSave(s string) ([]SaveRule, error) {
	f := strings.Fields(s)
	if len(f) == 1 && f[0] == `""` {
		f = nil
	}
	if len(f)%2 != 0 {
		return nil, fmt.Errorf("persist: save takes pairs of seconds and changes, not %q", s)
	}
	rules := make([]SaveRule, 0, len(f)/2)
	for i := 0; i < len(f); i += 2 {
		sec, err1 := strconv.ParseInt(f[i], 10, 64)
		ch, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 != nil || err2 != nil || sec < 1 || ch < 0 {
			return nil, fmt.Errorf("persist: save rule %q %q: want positive seconds and a count of changes", f[i], f[i+1])
		}
		rules = append(rules, SaveRule{sec, ch})
	}
	return rules, nil
}

// FormatSave formats rules as redis.conf's save setting.
func FormatSave(rules []SaveRule) string {
	var b strings.Builder
	for i, r := range rules {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d %d", r.Seconds, r.Changes)
	}
	return b.String()
}
