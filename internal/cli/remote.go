package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// A filter on a server is named by a URL: redis://[user:password@]host[:port]/KEY, or rediss://
// for TLS. The key is the URL's path without its leading slash, percent-decoded, so any key can
// be written (a space as %20, a slash as %2F or as itself). ?db=N selects a database.

// redisTarget is a parsed redis:// URL.
type redisTarget struct {
	addr     string // host:port
	host     string
	user     string
	password string
	hasPass  bool
	tls      bool
	db       int
	key      string
	display  string // the URL with the password hidden, for messages
}

const urlForm = "redis://[user:password@]host[:port]/KEY (rediss:// for TLS)"

// parseRedisURL parses a redis:// or rediss:// URL naming a key.
func parseRedisURL(s string) (redisTarget, error) {
	var t redisTarget
	bad := func(format string, args ...any) (redisTarget, error) {
		return redisTarget{}, fmt.Errorf("%s is not a filter URL: %s; write it as %s, e.g. redis://localhost:6379/users", quote(redact(s)), fmt.Sprintf(format, args...), urlForm)
	}
	if !strings.Contains(s, "://") {
		return bad("no redis:// or rediss:// scheme")
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return bad("%v", err)
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		t.tls = true
	case "":
		return bad("no scheme")
	default:
		return bad("scheme %q is not redis or rediss", u.Scheme)
	}
	if u.Opaque != "" {
		return bad("no // after %s:", u.Scheme)
	}
	t.host = u.Hostname()
	if t.host == "" {
		return bad("no host")
	}
	port := u.Port()
	if port == "" {
		port = "6379"
		if strings.HasSuffix(u.Host, ":") {
			return bad("empty port")
		}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return bad("port %q is not a number from 1 to 65535", port)
	}
	t.addr = net.JoinHostPort(t.host, port)
	if u.User != nil {
		t.user = u.User.Username()
		t.password, t.hasPass = u.User.Password()
	}
	t.key = strings.TrimPrefix(u.Path, "/")
	if t.key == "" {
		return bad("no key: the path names the key")
	}
	if u.Fragment != "" || strings.HasSuffix(s, "#") {
		return bad("a # fragment has no meaning here (write # in a key as %%23)")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("bad query: %v", err)
	}
	for name, vals := range q {
		if name != "db" || len(vals) != 1 {
			return bad("unknown parameter %q (only db=N is understood)", name)
		}
		db, err := strconv.Atoi(vals[0])
		if err != nil || db < 0 || db > 1<<20 {
			return bad("db=%q is not a database number", vals[0])
		}
		t.db = db
	}
	t.display = redact(s)
	return t, nil
}

// redact hides the password of a URL, whether or not the URL parses: in
// scheme://user:password@host... everything between the first colon after // and the last @
// before the path becomes xxxxx.
func redact(s string) string {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	start := len(s) - len(rest)
	auth := rest
	if i := strings.IndexAny(auth, "/?#"); i >= 0 {
		auth = auth[:i]
	}
	at := strings.LastIndex(auth, "@")
	if at < 0 {
		return s
	}
	colon := strings.Index(auth[:at], ":")
	if colon < 0 {
		return s
	}
	return s[:start+colon+1] + "xxxxx" + s[start+at:]
}

// remoteFlags are the connection flags of push and pull.
type remoteFlags struct {
	cacert   string
	insecure bool
	timeout  time.Duration
	progress progressFlags
}

func (rf *remoteFlags) register(cmd *cobra.Command) {
	rf.registerConn(cmd)
	rf.progress.register(cmd)
}

// registerConn registers the connection flags without the progress flags.
func (rf *remoteFlags) registerConn(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&rf.cacert, "cacert", "", "rediss://: PEM file of the certificate authorities to trust instead of the system's")
	f.BoolVar(&rf.insecure, "insecure", false, "rediss://: do not verify the server's certificate (testing only)")
	f.DurationVar(&rf.timeout, "timeout", 30*time.Second, "how long one command may take (a chunk is up to 16 MiB)")
}

// isRedisURL reports whether s names a server (redis:// or rediss://) rather than a file.
func isRedisURL(s string) bool {
	return strings.HasPrefix(s, "redis://") || strings.HasPrefix(s, "rediss://")
}

// connect returns a client for t and checks that the server answers. Without a password in
// the URL, the REDISCLI_AUTH environment variable gives one, as for redis-cli.
func (rf *remoteFlags) connect(ctx context.Context, t redisTarget) (*redis.Client, error) {
	if err := rf.progress.check(); err != nil {
		return nil, err
	}
	opts := &redis.Options{
		Addr:            t.addr,
		Username:        t.user,
		Password:        t.password,
		DB:              t.db,
		DialTimeout:     10 * time.Second,
		ReadTimeout:     rf.timeout,
		WriteTimeout:    rf.timeout,
		MaxRetries:      -1, // a failed command is reported, not repeated behind the user's back
		DialerRetries:   1,
		PoolSize:        1,
		DisableIdentity: true,
	}
	if !t.hasPass {
		opts.Password = os.Getenv("REDISCLI_AUTH")
	}
	if t.tls {
		cfg := &tls.Config{ServerName: t.host, MinVersion: tls.VersionTLS12, InsecureSkipVerify: rf.insecure}
		if rf.cacert != "" {
			pem, err := os.ReadFile(rf.cacert)
			if err != nil {
				return nil, fmt.Errorf("--cacert: %w", pathError(err))
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--cacert %s holds no PEM certificate", rf.cacert)
			}
		}
		opts.TLSConfig = cfg
	} else if rf.cacert != "" || rf.insecure {
		return nil, fmt.Errorf("--cacert and --insecure apply to TLS; use a rediss:// URL")
	}
	quietRedis.Do(func() { redis.SetLogger(discardLogger{}) })
	c := redis.NewClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, serverError(t, err)
	}
	return c, nil
}

// go-redis logs connection failures to the process's stderr; the commands report them instead.
var quietRedis sync.Once

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

// serverError explains a failure to talk to the server of t.
func serverError(t redisTarget, err error) error {
	msg := err.Error()
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case strings.Contains(msg, "NOAUTH") || strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "invalid password") || strings.Contains(msg, "AUTH"):
		return fmt.Errorf("%s refused us: %s; give the password in the URL (redis://:PASSWORD@host:port/KEY) or in REDISCLI_AUTH", t.addr, msg)
	case errors.As(err, &oe) && oe.Op == "dial":
		return fmt.Errorf("cannot connect to %s: %v; is the server running, and is the address right?", t.addr, oe.Err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%s did not answer in time (%v); raise --timeout for large filters or slow links", t.addr, err)
	case strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:"):
		return fmt.Errorf("TLS with %s failed: %s; for a private CA pass --cacert FILE", t.addr, msg)
	case strings.Contains(msg, "unknown command") && strings.Contains(strings.ToLower(msg), "bf."):
		return fmt.Errorf("%s does not know the BF.* commands: %s; it needs RedisBloom (or use bloomd)", t.addr, msg)
	}
	return fmt.Errorf("%s: %s", t.addr, msg)
}
