package redisfilter

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/server"
	"github.com/bloomd/bloom/internal/servertest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// standalone returns a client of the package's shared password-protected redis-server.
func standalone(tb testing.TB) *redis.Client {
	tb.Helper()
	s := redistest.Shared(tb)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: s.Password})
	tb.Cleanup(func() { c.Close() })
	return c
}

// cluster returns a client of the package's shared 3-master cluster.
func cluster(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	cl := redistest.SharedCluster(tb)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
	tb.Cleanup(func() { c.Close() })
	return c
}

// bloomdPassword is the requirepass of the tests' bloomd, which has one as the shared
// redis-server has.
const bloomdPassword = "bloomd-secret"

// bloomdClient returns a client of a bloomd (internal/server) started in this process for the
// test, on a free loopback port, and stopped when the test ends.
func bloomdClient(tb testing.TB) *redis.Client {
	tb.Helper()
	_, addr := servertest.Start(tb, &servertest.Options{Config: func(c *server.Config) { c.Requirepass = bloomdPassword }})
	c := redis.NewClient(&redis.Options{Addr: addr, Password: bloomdPassword})
	tb.Cleanup(func() { c.Close() })
	return c
}

// The suite runs against every server a service may keep its filters in: Redis (the shared
// redis-server, and the shared Redis Cluster where the layout spreads keys over nodes) and
// bloomd. What runs against Redis alone says why: the Redis Cluster tests (bloomd is tested as a
// single server), TestModuleAbsent (plain Redis has no BF.*) and TestTimeoutAndCancel (it stalls
// the server with CLIENT PAUSE, which bloomd does not have).

// servers runs f against the standalone redis-server and against bloomd.
func servers(t *testing.T, f func(t *testing.T, c *redis.Client)) {
	t.Run("redis", func(t *testing.T) { f(t, standalone(t)) })
	t.Run("bloomd", func(t *testing.T) { f(t, bloomdClient(t)) })
}

// topologies runs f against the standalone redis-server, the cluster and bloomd.
func topologies(t *testing.T, f func(t *testing.T, c redis.UniversalClient)) {
	t.Run("standalone", func(t *testing.T) { f(t, standalone(t)) })
	t.Run("cluster", func(t *testing.T) { f(t, cluster(t)) })
	t.Run("bloomd", func(t *testing.T) { f(t, bloomdClient(t)) })
}

var nameSeq atomic.Int64

// uniqueName returns a filter name no other test (or earlier -count run) uses.
func uniqueName(t testing.TB) string {
	r := strings.NewReplacer("/", ".", "{", "", "}", "", " ", "_")
	return fmt.Sprintf("t.%s.%d.%d", r.Replace(t.Name()), time.Now().UnixNano()%1e9, nameSeq.Add(1))
}

// keys returns n distinct keys with the given prefix.
func keys(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s-%d", prefix, i)
	}
	return out
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// counter is a go-redis hook that counts what a client sends: single commands (each one round
// trip), pipelines (each one round trip per node) and the commands inside them. The handshake of
// a new connection (HELLO, AUTH, CLIENT SETINFO) also passes through the hooks; it is not part of
// any operation, so it is not counted.
type counter struct {
	mu        sync.Mutex
	single    int
	pipelines int
	piped     int
	names     []string
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake[cmd.Name()] {
			c.mu.Lock()
			c.single++
			c.names = append(c.names, cmd.Name())
			c.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var names []string
		for _, cmd := range cmds {
			if !handshake[cmd.Name()] {
				names = append(names, cmd.Name())
			}
		}
		if len(names) > 0 {
			c.mu.Lock()
			c.pipelines++
			c.piped += len(names)
			c.names = append(c.names, names...)
			c.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

var handshake = map[string]bool{"hello": true, "auth": true, "client": true, "select": true}

func (c *counter) reset() {
	c.mu.Lock()
	c.single, c.pipelines, c.piped, c.names = 0, 0, 0, nil
	c.mu.Unlock()
}

func (c *counter) get() (single, pipelines, piped int, names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.single, c.pipelines, c.piped, append([]string(nil), c.names...)
}

// seqOf yields keys through one reused buffer, as a scanner over a file would.
func seqOf(keys [][]byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		var buf []byte
		for _, k := range keys {
			buf = append(buf[:0], k...)
			if !yield(buf) {
				return
			}
		}
	}
}
