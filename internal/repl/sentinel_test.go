package repl_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/skipped"
	"github.com/redis/go-redis/v9"
)

// requireSentinel is the environment variable that makes a missing redis-sentinel a failure.
const requireSentinel = "BLOOM_REQUIRE_SENTINEL"

func needSentinel(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-sentinel"); err != nil {
		if os.Getenv(requireSentinel) == "1" {
			t.Fatalf("redis-sentinel is not installed, and %s=1 requires it (apt-get install redis-sentinel)", requireSentinel)
		}
		skipped.Missing(t, "redis-sentinel", fmt.Sprintf("redis-sentinel is not installed; skipping (set %s=1 to make this a failure)", requireSentinel))
	}
}

var buildOnce struct {
	sync.Once
	bin string
	err error
}

// bloomdBinary builds cmd/bloomd once per test binary.
func bloomdBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bloomd-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		redistest.AtExit(func() { os.RemoveAll(dir) })
		buildOnce.bin = filepath.Join(dir, "bloomd")
		out, err := exec.Command("go", "build", "-o", buildOnce.bin, "../../cmd/bloomd").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.bin
}

func TestMain(m *testing.M) { redistest.Main(m) }

// startBloomd runs bloomd on a free port from a config file in its directory (so that CONFIG
// REWRITE has a file to rewrite), with extra config lines.
func startBloomd(t *testing.T, extra ...string) *redistest.Server {
	t.Helper()
	return startBloomdAuth(t, "", extra...)
}

func startBloomdTB(t testing.TB, extra ...string) *redistest.Server {
	t.Helper()
	return startBloomdAuth(t, "", extra...)
}

// startBloomdAuth is startBloomd for a server with requirepass password.
func startBloomdAuth(t testing.TB, password string, extra ...string) *redistest.Server {
	t.Helper()
	return startBloomdAt(t, "127.0.0.1", password, extra...)
}

// startBloomdAt is startBloomdAuth for a server that listens on host only (a loopback address
// such as 127.0.0.2).
func startBloomdAt(t testing.TB, host, password string, extra ...string) *redistest.Server {
	t.Helper()
	bin := bloomdBinary(t)
	if password != "" {
		extra = append(extra, "requirepass "+password)
	}
	s, err := redistest.StartProgramAt(host, bin, password, func(port int, dir string) []string {
		conf := filepath.Join(dir, "bloomd.conf")
		lines := append([]string{
			"# bloomd under Sentinel (written by the test; CONFIG REWRITE keeps this comment)",
			"port " + strconv.Itoa(port),
			"bind " + host,
			"dir " + dir,
			"appendonly yes",
			"appendfsync everysec",
			`save ""`,
			"logfile " + filepath.Join(dir, "bloomd.log"),
			"io-threads 1",
		}, extra...)
		os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		return []string{conf}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(s.Dir, "bloomd.log"))
			t.Logf("log of bloomd %s:\n%s", s.Addr, tail(string(log), 40))
		}
		s.Close()
	})
	return s
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func startSentinel(t *testing.T, primary string, quorum int, extra ...string) *redistest.Server {
	t.Helper()
	host, port, _ := net.SplitHostPort(primary)
	s, err := redistest.StartProgram("redis-sentinel", "", func(p int, dir string) []string {
		conf := filepath.Join(dir, "sentinel.conf")
		lines := []string{
			"port " + strconv.Itoa(p),
			"bind 127.0.0.1",
			"dir " + dir,
			"logfile " + filepath.Join(dir, "sentinel.log"),
			fmt.Sprintf("sentinel monitor mymaster %s %s %d", host, port, quorum),
			// Long enough that a loaded machine (tests run in parallel) does not look like a
			// dead primary.
			"sentinel down-after-milliseconds mymaster 3000",
			"sentinel failover-timeout mymaster 10000",
			"sentinel parallel-syncs mymaster 2",
		}
		lines = append(lines, extra...)
		os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		return []string{conf}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(s.Dir, "sentinel.log"))
			t.Logf("log of sentinel %s:\n%s", s.Addr, tail(string(log), 30))
		}
		s.Close()
	})
	return s
}

// info returns one field of a server's INFO.
func info(s *redistest.Server, name string) string {
	out, err := s.Do("INFO")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(out, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == name {
			return v
		}
	}
	return ""
}

// sentinelField returns a field of SENTINEL MASTER mymaster.
func sentinelField(s *redistest.Server, name string) string {
	out, err := s.Do("SENTINEL", "MASTER", "mymaster")
	if err != nil {
		return ""
	}
	f := strings.Split(out, "\n")
	for i := 0; i+1 < len(f); i += 2 {
		if f[i] == name {
			return f[i+1]
		}
	}
	return ""
}

func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSentinelFailover runs a bloomd primary, two bloomd replicas and three real
// redis-sentinel processes on loopback. A go-redis failover client adds items, each followed by
// WAIT 1 on the same connection; the primary is killed with SIGKILL; Sentinel promotes a
// replica; the client carries on; every add acknowledged with WAIT 1 must be on the new
// primary; redis-py's Sentinel sees the new primary; the old primary, restarted, is turned into
// a replica by Sentinel and catches up.
func TestSentinelFailover(t *testing.T) {
	needSentinel(t)
	redistest.Require(t)
	primary := startBloomd(t)
	r1 := startBloomd(t, "replicaof "+strings.Replace(primary.Addr, ":", " ", 1))
	r2 := startBloomd(t, "replicaof "+strings.Replace(primary.Addr, ":", " ", 1))
	eventually(t, 15*time.Second, "replicas online", func() bool { return info(primary, "connected_slaves") == "2" })
	var sentinels []*redistest.Server
	var addrs []string
	for range 3 {
		s := startSentinel(t, primary.Addr, 2)
		sentinels = append(sentinels, s)
		addrs = append(addrs, s.Addr)
	}
	for _, s := range sentinels {
		eventually(t, 30*time.Second, "sentinels see the replicas and each other", func() bool {
			return sentinelField(s, "num-slaves") == "2" && sentinelField(s, "num-other-sentinels") == "2"
		})
	}

	ctx := context.Background()
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "mymaster", SentinelAddrs: addrs,
		DialTimeout: time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: time.Second, MaxRetries: -1,
	})
	defer client.Close()

	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		deadline := time.Now().Add(90 * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			select {
			case <-stop:
				return
			default:
			}
			item := fmt.Sprintf("item-%d", i)
			cmds, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Do(ctx, "BF.MADD", "users", item, item+"-b")
				p.Do(ctx, "WAIT", 1, 1000)
				return nil
			})
			if err == nil {
				if n, _ := cmds[1].(*redis.Cmd).Int(); n >= 1 {
					mu.Lock()
					acked = append(acked, item, item+"-b")
					mu.Unlock()
				}
			} else {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	countAcked := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	eventually(t, 20*time.Second, "acknowledged adds before the failure", func() bool { return countAcked() >= 200 })

	old := primary.Addr
	primary.Kill()
	killedAt := time.Now()
	// agreed returns the primary every Sentinel names, or "" while they differ.
	agreed := func() string {
		addr := ""
		for _, s := range sentinels {
			out, err := s.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
			if err != nil {
				return ""
			}
			a := strings.Replace(out, "\n", ":", 1)
			if addr != "" && a != addr {
				return ""
			}
			addr = a
		}
		return addr
	}
	eventually(t, 60*time.Second, "Sentinel promotes a replica", func() bool { a := agreed(); return a != "" && a != old })
	t.Logf("failover took %v", time.Since(killedAt))
	before := countAcked()
	eventually(t, 30*time.Second, "the client writes to the new primary", func() bool { return countAcked() >= before+200 })
	close(stop)
	<-writerDone
	newAddr := agreed()
	var promoted, other *redistest.Server
	for _, r := range []*redistest.Server{r1, r2} {
		if r.Addr == newAddr {
			promoted = r
		} else {
			other = r
		}
	}
	if promoted == nil {
		t.Fatalf("Sentinels name %q as the primary, which is none of the replicas", newAddr)
	}
	t.Logf("new primary %s", newAddr)

	// Every acknowledged add is on the new primary.
	mu.Lock()
	items := append([]string(nil), acked...)
	mu.Unlock()
	direct := redis.NewClient(&redis.Options{Addr: newAddr})
	defer direct.Close()
	for start := 0; start < len(items); start += 500 {
		batch := items[start:min(start+500, len(items))]
		args := []any{"BF.MEXISTS", "users"}
		for _, it := range batch {
			args = append(args, it)
		}
		res, err := direct.Do(ctx, args...).Slice() // booleans in RESP3, integers in RESP2
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if v := fmt.Sprint(r); v != "1" && v != "true" {
				t.Errorf("acknowledged add %q is missing on the new primary", batch[i])
			}
		}
	}
	t.Logf("%d acknowledged adds checked on the new primary", len(items))
	if got := info(promoted, "role"); got != "master" {
		t.Errorf("promoted replica's role: %s", got)
	}
	conf, _ := os.ReadFile(filepath.Join(promoted.Dir, "bloomd.conf"))
	if !strings.Contains(string(conf), "# bloomd under Sentinel") || strings.Contains(string(conf), "replicaof") {
		t.Errorf("CONFIG REWRITE on the promoted replica left:\n%s", conf)
	}
	eventually(t, 30*time.Second, "the other replica follows the new primary", func() bool {
		return info(other, "master_port") == newAddr[strings.LastIndex(newAddr, ":")+1:] && info(other, "master_link_status") == "up"
	})
	if got := info(promoted, "sync_full"); got != "0" {
		t.Errorf("the other replica needed a full sync from the promoted one (sync_full %s)", got)
	}
	if got := info(other, "slave_repl_offset"); got == "" {
		t.Error("the other replica reports no offset")
	}

	// redis-py's Sentinel client finds the new primary and reads from it.
	py := "/usr/bin/python3"
	if _, err := exec.LookPath(py); err == nil && exec.Command(py, "-c", "import redis").Run() == nil {
		var sent []string
		for _, a := range addrs {
			h, p, _ := net.SplitHostPort(a)
			sent = append(sent, fmt.Sprintf("('%s', %s)", h, p))
		}
		script := fmt.Sprintf(`
from redis.sentinel import Sentinel
s = Sentinel([%s], socket_timeout=2)
host, port = s.discover_master('mymaster')
m = s.master_for('mymaster', socket_timeout=2)
print("%%s:%%d %%d" %% (host, port, m.execute_command('BF.EXISTS', 'users', '%s')))
`, strings.Join(sent, ", "), items[len(items)-1])
		out, err := exec.Command(py, "-c", script).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != newAddr+" 1" {
			t.Errorf("redis-py Sentinel: %q %v, want %q", out, err, newAddr+" 1")
		}
	} else if os.Getenv(redistest.RequireEnv) == "1" {
		t.Error("python3 with redis-py is missing")
	}

	// The old primary, restarted, is made a replica by Sentinel and catches up.
	if err := primary.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 40*time.Second, "the old primary rejoins as a replica", func() bool {
		return info(primary, "role") == "slave" && info(primary, "master_link_status") == "up" &&
			info(primary, "slave_repl_offset") == info(promoted, "master_repl_offset")
	})
	a, _ := direct.Do(ctx, "BF.SCANDUMP", "users", 1).Slice()
	oldc := redis.NewClient(&redis.Options{Addr: primary.Addr})
	defer oldc.Close()
	b, _ := oldc.Do(ctx, "BF.SCANDUMP", "users", 1).Slice()
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("the old primary's filter differs from the new primary's after it rejoined")
	}
	t.Logf("old primary rejoined: promoted replica's sync_full=%s sync_partial_ok=%s", info(promoted, "sync_full"), info(promoted, "sync_partial_ok"))
}

// TestReplicaRestartContinues stops a replica cleanly, writes to the primary meanwhile, and
// starts the replica again from its own files: it continues with a partial sync. A primary
// restarted cleanly keeps its history too, so its replica continues from it.
func TestReplicaRestartContinues(t *testing.T) {
	redistest.Require(t)
	primary := startBloomd(t)
	replica := startBloomd(t, "replicaof "+strings.Replace(primary.Addr, ":", " ", 1))
	ctx := context.Background()
	pc := redis.NewClient(&redis.Options{Addr: primary.Addr})
	defer pc.Close()
	add := func(from, to int) {
		for i := from; i < to; i++ {
			if err := pc.Do(ctx, "BF.ADD", "f", i).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	synced := func() bool {
		return info(replica, "master_link_status") == "up" && info(replica, "slave_repl_offset") == info(primary, "master_repl_offset")
	}
	add(0, 100)
	eventually(t, 15*time.Second, "replica in sync", synced)
	replica.Stop()
	add(100, 200)
	if err := replica.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "restarted replica in sync", synced)
	if full, partial := info(primary, "sync_full"), info(primary, "sync_partial_ok"); full != "1" || partial != "1" {
		t.Errorf("after a clean restart of the replica: sync_full %s, sync_partial_ok %s; want 1 and 1", full, partial)
	}
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer rc.Close()
	if n, err := rc.Do(ctx, "BF.EXISTS", "f", 199).Bool(); err != nil || !n {
		t.Errorf("restarted replica lacks an add made while it was down: %v %v", n, err)
	}

	// The primary restarted cleanly: the replica continues from it.
	primary.Stop()
	if err := primary.Restart(); err != nil {
		t.Fatal(err)
	}
	add(200, 210)
	eventually(t, 15*time.Second, "replica in sync with the restarted primary", synced)
	if full, partial := info(primary, "sync_full"), info(primary, "sync_partial_ok"); full != "0" || partial != "1" {
		t.Errorf("after a clean restart of the primary: sync_full %s, sync_partial_ok %s; want 0 and 1", full, partial)
	}
	if a, b := info(primary, "master_replid"), info(replica, "master_replid"); a != b {
		t.Errorf("replication IDs differ: primary %s, replica %s", a, b)
	}
}

// TestSentinelAuth has Sentinel watch a primary and a replica that require a password
// (Sentinel's auth-pass, the replica's masterauth): Sentinel authenticates, finds the replica
// through the primary's INFO, and sees both up.
func TestSentinelAuth(t *testing.T) {
	needSentinel(t)
	redistest.Require(t)
	const pw = "s3cret"
	primary := startBloomdAuth(t, pw)
	replica := startBloomdAuth(t, pw, "replicaof "+strings.Replace(primary.Addr, ":", " ", 1), "masterauth "+pw)
	eventually(t, 15*time.Second, "replica online", func() bool { return info(replica, "master_link_status") == "up" })
	s := startSentinel(t, primary.Addr, 1, "sentinel auth-pass mymaster "+pw)
	eventually(t, 30*time.Second, "Sentinel sees the replica", func() bool { return sentinelField(s, "num-slaves") == "1" })
	if flags := sentinelField(s, "flags"); flags != "master" {
		t.Errorf("Sentinel's flags for the primary: %q", flags)
	}
	eventually(t, 30*time.Second, "Sentinel connects to the replica and reads its INFO", func() bool {
		out, err := s.Do("SENTINEL", "REPLICAS", "mymaster")
		return err == nil && strings.Contains(out, "\nflags\nslave\n") && strings.Contains(out, "\nmaster-link-status\nok\n")
	})
	// Without the password a client is refused, as Sentinel's connections would be.
	nc, err := net.Dial("tcp", primary.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte("INFO\r\n"))
	buf := make([]byte, 64)
	n, _ := nc.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "-NOAUTH") {
		t.Errorf("INFO without AUTH: %q", buf[:n])
	}
}
