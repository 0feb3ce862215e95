package persist_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/childproc"
	"github.com/redis/go-redis/v9"
)

// The crash tests run the real bloomd binary, stream adds at it over several connections, kill
// it with SIGKILL at random moments (log rewrites included), restart it on the same directory
// and check that every acknowledged item is there. BLOOM_CRASH_SECONDS sets each test's budget
// (default 20 for always, 10 for everysec); rounds are also bounded in number.

var (
	buildOnce sync.Once
	bloomdBin string
	buildErr  error
)

func bloomd(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bloomd-crash-bin")
		if err != nil {
			buildErr = err
			return
		}
		bloomdBin = filepath.Join(dir, "bloomd")
		out, err := exec.Command("go", "build", "-o", bloomdBin, "../../cmd/bloomd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	if out, _ := exec.Command(bloomdBin, "--help").CombinedOutput(); !bytes.Contains(out, []byte("appendfsync")) {
		t.Skip("this bloomd has no append-only log yet")
	}
	return bloomdBin
}

func crashBudget(def time.Duration) time.Duration {
	if s, err := strconv.Atoi(os.Getenv("BLOOM_CRASH_SECONDS")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return def
}

// A proc is one bloomd process on dir.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *bytes.Buffer
	exited chan struct{}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startBloomd starts bloomd on dir and waits until it answers PING (after loading).
func startBloomd(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	port := freePort(t)
	all := append([]string{"--port", strconv.Itoa(port), "--dir", dir, "--save", ""}, args...)
	cmd := exec.Command(bloomd(t), all...)
	p := &proc{cmd: cmd, addr: fmt.Sprintf("127.0.0.1:%d", port), stderr: new(bytes.Buffer), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := childproc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(p.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-p.exited:
			t.Fatalf("bloomd exited while starting: %v\n%s", cmd.ProcessState, p.stderr)
		default:
		}
		c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1, DialTimeout: time.Second})
		err := c.Ping(context.Background()).Err()
		c.Close()
		if err == nil {
			return p
		}
		if time.Now().After(deadline) {
			p.kill()
			t.Fatalf("bloomd did not answer within 30 s: %v\n%s", err, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// acked is what the clients were told: items acknowledged as added, per key, with the time of
// the acknowledgement, and per single-writer key the number the server counted as new.
type acked struct {
	mu      sync.Mutex
	items   map[string][]ackedItem
	newOnes map[string]int // single-writer keys only
	pending map[string]int // items in flight when the connection broke (may or may not count)
}

type ackedItem struct {
	item string
	at   time.Time
}

func (a *acked) add(key string, items []string, replies []bool, private bool) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, it := range items {
		a.items[key] = append(a.items[key], ackedItem{it, now})
		if private && replies[i] {
			a.newOnes[key]++
		}
	}
}

// stream adds items to its own key and to a shared one until the connection breaks, recording
// what was acknowledged.
func stream(ctx context.Context, addr string, id, round int, a *acked, rng *rand.Rand) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 5 * time.Second})
	defer c.Close()
	own := fmt.Sprintf("own:%d", id)
	for n := 0; ctx.Err() == nil; n++ {
		key, private := "shared", false
		if n%3 != 0 {
			key, private = own, true
		}
		k := 1 + rng.IntN(8)
		items := make([]string, k)
		for i := range items {
			items[i] = fmt.Sprintf("r%d-c%d-%d-%d", round, id, n, i)
		}
		var replies []bool
		var err error
		if k == 1 && rng.IntN(2) == 0 {
			var ok bool
			ok, err = c.BFAdd(ctx, key, items[0]).Result()
			replies = []bool{ok}
		} else {
			args := make([]any, k)
			for i, it := range items {
				args[i] = it
			}
			replies, err = c.BFMAdd(ctx, key, args...).Result()
		}
		if err != nil {
			if private {
				a.mu.Lock()
				a.pending[key] += k
				a.mu.Unlock()
			}
			return
		}
		a.add(key, items, replies, private)
	}
}

// verify checks that every item acknowledged before cutoff is in the restarted server, and
// that each single-writer key counts its acknowledged new items (plus at most those in flight).
func verify(t *testing.T, addr string, a *acked, cutoff time.Time) (checked, late int) {
	t.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, items := range a.items {
		for i := 0; i < len(items); i += 500 {
			batch := items[i:min(i+500, len(items))]
			args := make([]any, len(batch))
			for j, it := range batch {
				args[j] = it.item
			}
			res, err := c.BFMExists(ctx, key, args...).Result()
			if err != nil {
				t.Fatalf("BF.MEXISTS %s: %v", key, err)
			}
			for j, ok := range res {
				switch {
				case ok:
					checked++
				case batch[j].at.After(cutoff):
					late++ // acknowledged within the loss window of everysec: gone for good
					batch[j].item = ""
				default:
					t.Fatalf("key %s: item %q acknowledged at %s is missing after the restart", key, batch[j].item, batch[j].at.Format(time.StampMicro))
				}
			}
		}
	}
	for key, items := range a.items {
		a.items[key] = slices.DeleteFunc(items, func(it ackedItem) bool { return it.item == "" })
	}
	if late == 0 {
		for key, n := range a.newOnes {
			card, err := c.BFCard(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if card < int64(n) || card > int64(n+a.pending[key]) {
				t.Fatalf("key %s counts %d items; %d were acknowledged as new, %d were in flight", key, card, n, a.pending[key])
			}
			// What was in flight is now settled: count it as the server does.
			a.newOnes[key], a.pending[key] = int(card), 0
		}
	}
	return checked, late
}

func crashRounds(t *testing.T, fsync string, budget time.Duration, lossWindow time.Duration) {
	dir := t.TempDir()
	args := []string{"--appendonly", "yes", "--appendfsync", fsync, "--auto-aof-rewrite-min-size", "200kb", "--auto-aof-rewrite-percentage", "50"}
	a := &acked{items: map[string][]ackedItem{}, newOnes: map[string]int{}, pending: map[string]int{}}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	t.Logf("seed time %d", time.Now().UnixNano())
	start := time.Now()
	var rounds, checked, lost, torn, snapshots int
	var killed time.Time
	for rounds = 0; rounds < 60 && time.Since(start) < budget; rounds++ {
		p := startBloomd(t, dir, args...)
		if rounds > 0 {
			// Every round checks everything acknowledged so far; the last check's count is reported.
			_, late := verify(t, p.addr, a, killed.Add(-lossWindow))
			lost += late
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for id := range 4 {
			wg.Add(1)
			r := rand.New(rand.NewPCG(rng.Uint64(), uint64(id)))
			go func() { defer wg.Done(); stream(ctx, p.addr, id, rounds, a, r) }()
		}
		if rng.IntN(3) == 0 {
			delay := time.Duration(rng.IntN(200)) * time.Millisecond
			go func() {
				time.Sleep(delay)
				c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
				c.Do(ctx, "BGREWRITEAOF")
				c.Close()
			}()
		}
		time.Sleep(time.Duration(50+rng.IntN(600)) * time.Millisecond)
		killed = time.Now()
		p.kill()
		cancel()
		wg.Wait()
		torn += bytes.Count(p.stderr.Bytes(), []byte("dropping a torn record"))
		snapshots += bytes.Count(p.stderr.Bytes(), []byte("snapshot saved"))
		if t.Failed() {
			t.Logf("bloomd's log:\n%s", p.stderr)
			return
		}
	}
	p := startBloomd(t, dir, args...)
	n, late := verify(t, p.addr, a, killed.Add(-lossWindow))
	checked, lost = n, lost+late
	p.kill()
	torn += bytes.Count(p.stderr.Bytes(), []byte("dropping a torn record"))
	t.Logf("%d rounds in %s: %d acknowledged items all present (%d within the loss window missing); %d snapshots completed, %d torn records dropped at start-up",
		rounds, time.Since(start).Round(time.Millisecond), checked, lost, snapshots, torn)
	if rounds < 3 {
		t.Fatalf("only %d rounds ran", rounds)
	}
}

// TestCrashAlways: with appendfsync always, nothing acknowledged is ever lost.
func TestCrashAlways(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	crashRounds(t, "always", crashBudget(20*time.Second), 0)
}

// TestCrashEverysec: with appendfsync everysec, at most about the last two seconds are lost (a
// SIGKILL loses nothing in practice: the records were written to the operating system before
// the replies; only a crash of the machine can lose what was not yet synced).
func TestCrashEverysec(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	crashRounds(t, "everysec", crashBudget(10*time.Second), 2*time.Second)
}
