package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/server"
	"github.com/bloomd/bloom/internal/servertest"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"
)

// needChromium returns Debian's chromium, or skips the test (fails it under
// BLOOM_REQUIRE_CHROMIUM=1).
func needChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("BLOOM_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("chromium is not installed, and BLOOM_REQUIRE_CHROMIUM=1 requires it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed; skipping (set BLOOM_REQUIRE_CHROMIUM=1 to make this a failure)")
	return ""
}

// A bloomd is a server run in the test's process, with its RESP address, its metrics port's
// base URL and a client.
type bloomd struct {
	s    *server.Server
	addr string
	url  string // ends in "/"
	rdb  *redis.Client
}

// startBloomd runs bloomd on free loopback ports, with its metrics port (the page) served.
func startBloomd(t *testing.T, config func(*server.Config), user, pass string) *bloomd {
	t.Helper()
	s, addr := servertest.Start(t, &servertest.Options{Config: func(c *server.Config) {
		c.EventLoops = 1
		if config != nil {
			config(c)
		}
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ServeMetrics(ln)
	rdb := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: pass, PoolSize: 8,
		Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	return &bloomd{s: s, addr: addr, url: "http://" + ln.Addr().String() + "/", rdb: rdb}
}

// do runs one command and fails the test on an error reply.
func (b *bloomd) do(t *testing.T, args ...any) any {
	t.Helper()
	v, err := b.rdb.Do(context.Background(), args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// getJSON reads one of the page's endpoints as user (none if ""), into v; it returns the
// HTTP status.
func getJSON(t *testing.T, url, user, pass string, v any) int {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == 200 && v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s: %v\n%s", url, err, body)
		}
	}
	return resp.StatusCode
}

// A browser is a headless Chromium with one tab, which collects the page's console errors.
type browser struct {
	t   *testing.T
	ctx context.Context // with the test's time limit

	mu      sync.Mutex
	errors  []string
	allowed []string // messages expected from here on
}

// allow makes console messages containing s expected from now on.
func (b *browser) allow(s string) {
	b.mu.Lock()
	b.allowed = append(b.allowed, s)
	b.mu.Unlock()
}

// newBrowser starts Chromium; user and pass, if set, go with every request as HTTP basic
// auth. When the test ends, the page must have written no error or warning to its console.
func newBrowser(t *testing.T, chromium, user, pass string) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "en-US"), chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1000, 1400), chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	// Start the browser (the first action must not run under a timeout), then listen.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		cancelC()
		cancelA()
		t.Fatal(err)
	}
	b := &browser{t: t}
	cctx, stopConsole := context.WithCancel(ctx)
	messages := chromedp.Console(cctx)
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				b.mu.Lock()
				if !slices.ContainsFunc(b.allowed, func(s string) bool { return strings.Contains(m.String(), s) }) {
					b.errors = append(b.errors, m.String())
				}
				b.mu.Unlock()
			}
		}
	}()
	tctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	b.ctx = tctx
	t.Cleanup(func() {
		stopConsole()
		<-consoleDone
		cancelT()
		cancelC()
		cancelA()
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.errors) > 0 {
			t.Errorf("console errors: %q", b.errors)
		}
	})
	if user != "" {
		auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
		b.do(func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
				return chromedp.Void{}, err
			}
			_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
				Headers: network.Headers{"Authorization": auth}})
			return chromedp.Void{}, err
		})
	}
	return b
}

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression in the page into a T.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// wait waits (at most 30 s) until the JavaScript expression is true.
func (b *browser) wait(expr string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		b.t.Fatalf("waiting for %s: %v", expr, err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Text(sel))
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

// rowKeys returns the data-key of the filter table's rows.
func (b *browser) rowKeys() []string {
	b.t.Helper()
	return eval[[]string](b, `Array.from(document.querySelectorAll('#filter-table tbody tr')).map(r => r.dataset.key)`)
}

// screenshot writes a PNG of the element sel to path.
func (b *browser) screenshot(sel, path string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.Screenshot(sel))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// quoteJS quotes s for a JavaScript string literal.
func quoteJS(s string) string {
	q, _ := json.Marshal(s)
	return strings.ReplaceAll(string(q), "'", `\u0027`)
}
