package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/server"
	"github.com/chromedp/chromedp"
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

// startBloomd makes a bloomd with filters and serves its metrics port on a free loopback port.
func startBloomd(t *testing.T) (*server.Server, string) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.EventLoops = -1
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ServeMetrics(ln)
	return s, "http://" + ln.Addr().String() + "/"
}

func exec1(t *testing.T, s *server.Server, args ...string) string {
	t.Helper()
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	out := string(s.Exec(bs...))
	if strings.HasPrefix(out, "-") {
		t.Fatalf("%v: %s", args, out)
	}
	return out
}

// TestPage loads the page in headless Chromium: no console errors, the filter table with search
// and paging, a filter's plot, the throughput chart and the calculator's numbers against the
// functions `bloom calc` uses. It writes a screenshot of each view to BLOOM_SCREENSHOT_DIR (a
// temporary directory if unset).
func TestPage(t *testing.T) {
	chromium := needChromium(t)
	s, url := startBloomd(t)
	for i := range 45 {
		exec1(t, s, "BF.RESERVE", fmt.Sprintf("user:%02d", i), "0.01", strconv.Itoa(1000*(i+1)))
	}
	exec1(t, s, "BF.RESERVE", "orders", "0.001", "1000", "EXPANSION", "2")
	args := []string{"BF.MADD", "orders"}
	for i := range 2500 { // past the first sub-filter's capacity: the filter has grown twice
		args = append(args, strconv.Itoa(i))
	}
	exec1(t, s, args...)

	shots := os.Getenv("BLOOM_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1200, 1600), chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	// Start the browser (the first action must not run under a timeout), then listen.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	// Collect what the page writes to the console (console.error and .warn, uncaught
	// exceptions, the browser's log of failed loads) from here on.
	cctx, stopConsole := context.WithCancel(ctx)
	messages := chromedp.Console(cctx)
	var mu sync.Mutex
	var consoleErrors []string
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				mu.Lock()
				consoleErrors = append(consoleErrors, m.String())
				mu.Unlock()
			}
		}
	}()
	tctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			buf, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return chromedp.Void{}, err
			}
			return chromedp.Void{}, os.WriteFile(filepath.Join(shots, name), buf, 0o644)
		}
	}
	rowNames := func() []string {
		t.Helper()
		names, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#filter-table tbody tr')).map(r => r.dataset.name)`))
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Text(sel))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(tctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	do := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tctx, actions...); err != nil {
			t.Fatal(err)
		}
	}

	do(chromedp.Navigate(url),
		chromedp.WaitVisible(`#filter-table tbody tr`),
		chromedp.WaitVisible(`#calc-plot svg`),
		shot("page.png"))
	if names, info := rowNames(), text(`#page-info`); len(names) != 20 || names[0] != "orders" || names[1] != "user:00" || info != "1–20 of 46" {
		t.Errorf("first page: %v, %q", names, info)
	}

	// Paging and search.
	do(chromedp.Click(`#next`), chromedp.WaitVisible(`#filter-table tbody tr[data-name="user:19"]`))
	if names, info := rowNames(), text(`#page-info`); len(names) != 20 || names[0] != "user:19" || info != "21–40 of 46" {
		t.Errorf("second page: %v, %q", names, info)
	}
	do(chromedp.SetValue(`#q`, "user:4*"), chromedp.Click(`#search button`),
		chromedp.WaitVisible(`#filter-table tbody tr[data-name="user:44"]`), shot("search.png"))
	if names, info := rowNames(), text(`#page-info`); len(names) != 5 || names[0] != "user:40" || info != "1–5 of 5" {
		t.Errorf("search user:4*: %v, %q", names, info)
	}

	// A filter's plot: the curve, where it stands now, and where its sub-filters start.
	do(chromedp.SetValue(`#q`, "orders"), chromedp.Click(`#search button`),
		chromedp.WaitVisible(`#filter-table tbody tr[data-name="orders"]`),
		chromedp.Click(`#filter-table tbody tr[data-name="orders"]`),
		chromedp.WaitVisible(`#filter-plot svg polyline.curve`), shot("filter.png"))
	if n := len(strings.Fields(eval(`document.querySelector('#filter-plot svg polyline.curve').getAttribute('points')`))); n != 201 {
		t.Errorf("the curve has %d points, want 201", n)
	}
	// 1000 + 2000 items in the first two sub-filters; the third (4000) receives the rest.
	if starts := eval(`String(document.querySelectorAll('#filter-plot svg line.start').length)`); starts != "2" && starts != "3" {
		t.Errorf("%s sub-filter starts drawn", starts)
	}
	if n, _ := strconv.Atoi(eval(`document.querySelector('#filter-plot svg circle.now').dataset.items`)); n < 2400 || n > 2500 {
		t.Errorf("now at %d items, want about 2500", n)
	}

	// The calculator gives what bloom calc gives.
	cell := func(rule string, col int) string {
		return eval(fmt.Sprintf(`document.querySelector('#calc-table tr[data-rule=%q]').cells[%d].textContent`, rule, col))
	}
	m, k, _ := bloom.GuavaSize(250000, 0.001)
	m2, k2, _, _ := bloom.RedisBloomSize(250000, 0.001)
	m3, _, _, _ := bloom.BlockedSize(250000, 0.001)
	do(chromedp.SetValue(`#calc-n`, "250000"), chromedp.SetValue(`#calc-p`, "0.001"), chromedp.Click(`#calc button`))
	if _, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](fmt.Sprintf(
		`document.querySelector('#calc-table tr[data-rule="guava"]')?.cells[1].textContent === "%d"`, m))); err != nil {
		t.Fatalf("the calculator never showed guava's %d bits: %v (it shows %s)", m, err, cell("guava", 1))
	}
	do(chromedp.WaitVisible(`#calc-plot svg polyline.curve`), shot("calculator.png"))
	if gK, rBits, rK, bBits := cell("guava", 3), cell("redisbloom", 1), cell("redisbloom", 3), cell("blocked", 1); gK != strconv.Itoa(k) ||
		rBits != strconv.FormatUint(m2, 10) || rK != strconv.Itoa(k2) || bBits != strconv.FormatUint(m3, 10) {
		t.Errorf("calculator: guava k=%s, redisbloom %s bits k=%s, blocked %s bits; bloom calc: k=%d, %d k=%d, %d",
			gK, rBits, rK, bBits, k, m2, k2, m3)
	}
	if n := eval(`String(document.querySelectorAll('#calc-plot svg polyline.curve').length)`); n != "3" {
		t.Errorf("the calculator drew %s curves, want 3 (guava, redisbloom, blocked)", n)
	}

	// The throughput chart draws once samples exist (one a second).
	exec1(t, s, "BF.ADD", "orders", "x")
	time.Sleep(2200 * time.Millisecond)
	do(chromedp.Navigate(url), chromedp.WaitVisible(`#throughput svg polyline.ops`), shot("throughput.png"))

	stopConsole()
	<-consoleDone
	mu.Lock()
	defer mu.Unlock()
	if len(consoleErrors) > 0 {
		t.Errorf("console errors: %q", consoleErrors)
	}
	t.Logf("screenshots in %s", shots)
}
