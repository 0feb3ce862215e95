package web_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom"
	"github.com/chromedp/chromedp"
)

// TestPage loads the page in headless Chromium: the filter table (Bloom and cuckoo filters)
// with search and paging, a filter opened by its address (#/filter/KEY) with its facts and its
// plot, names that are not plain text shown as text, and the calculator's numbers against the
// functions `bloom calc` uses. It writes a screenshot of each view to BLOOM_SCREENSHOT_DIR (a
// temporary directory if unset).
func TestPage(t *testing.T) {
	chromium := needChromium(t)
	d := startBloomd(t, nil, "", "")
	for i := range 45 {
		d.do(t, "BF.RESERVE", fmt.Sprintf("user:%02d", i), "0.01", 1000*(i+1))
	}
	d.do(t, "BF.RESERVE", "orders", "0.001", "1000", "EXPANSION", "2")
	args := []any{"BF.MADD", "orders"}
	for i := range 2500 { // past the first sub-filter's capacity: the filter has grown twice
		args = append(args, i)
	}
	d.do(t, args...)
	d.do(t, "CF.RESERVE", "sessions", "1000", "BUCKETSIZE", "4")
	for i := range 300 {
		d.do(t, "CF.ADD", "sessions", i)
	}
	d.do(t, "CF.DEL", "sessions", "7")
	// A name with bytes that are not UTF-8, and HTML.
	odd := "odd\xff<b>bold</b>&\"x"
	d.do(t, "BF.ADD", odd, "a")
	typed := "a+b&c=d é" // characters that mean something in a URL, typed as they are
	d.do(t, "BF.ADD", typed, "a")

	shots := os.Getenv("BLOOM_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	b := newBrowser(t, chromium, "", "")
	b.do(chromedp.Navigate(d.url))
	b.wait(`document.querySelectorAll('#filter-table tbody tr').length > 0`)
	b.wait(`document.querySelector('#calc-plot svg') !== null`)
	b.screenshot("body", filepath.Join(shots, "page.png"))

	// 45 + orders + sessions + the odd one + the typed one, sorted by their bytes.
	if keys, info := b.rowKeys(), b.text(`#page-info`); len(keys) != 20 || keys[0] != "a%2Bb%26c%3Dd%20%C3%A9" ||
		keys[1] != "odd%FF%3Cb%3Ebold%3C/b%3E%26%22x" || keys[2] != "orders" || keys[3] != "sessions" || keys[4] != "user:00" ||
		info != "1–20 of 49" {
		t.Errorf("first page: %v, %q", keys, info)
	}
	// Names are text: the odd one is shown quoted, and no <b> element came of it.
	if name := b.text(`#filter-table tbody tr:nth-child(2) td:first-child a`); name != strconv.Quote(odd) {
		t.Errorf("the odd name is shown as %q, want %q", name, strconv.Quote(odd))
	}
	if n := eval[int](b, `document.querySelectorAll('#filter-table b').length`); n != 0 {
		t.Errorf("a name became %d HTML elements", n)
	}
	// The cuckoo filter is in the table, with its type, items and slots.
	if row := eval[[]string](b, `Array.from(document.querySelector('#filter-table tr[data-key="sessions"]').cells).map(c => c.textContent)`); len(row) != 9 ||
		row[1] != "cuckoo" || row[3] != "299" || row[4] != "1,024" || row[5] != "1" || row[6] != "29.2%" || row[7] != "—" {
		t.Errorf("the cuckoo filter's row: %q", row)
	}

	// Paging and search.
	b.do(chromedp.Click(`#next`))
	b.wait(`document.querySelector('#filter-table tbody tr[data-key="user:16"]') !== null`)
	if keys, info := b.rowKeys(), b.text(`#page-info`); len(keys) != 20 || keys[0] != "user:16" || info != "21–40 of 49" {
		t.Errorf("second page: %v, %q", keys, info)
	}
	b.do(chromedp.SetValue(`#q`, "user:4*"), chromedp.Click(`#search button`))
	b.wait(`document.querySelector('#filter-table tbody tr[data-key="user:44"]') !== null`)
	b.screenshot("body", filepath.Join(shots, "search.png"))
	if keys, info := b.rowKeys(), b.text(`#page-info`); len(keys) != 5 || keys[0] != "user:40" || info != "1–5 of 5" {
		t.Errorf("search user:4*: %v, %q", keys, info)
	}

	// A filter's link opens it; its address opens it too, from a fresh load.
	b.do(chromedp.SetValue(`#q`, "orders"), chromedp.Click(`#search button`))
	b.wait(`document.querySelector('#filter-table tbody tr[data-key="orders"] a') !== null`)
	if href := eval[string](b, `document.querySelector('#filter-table tr[data-key="orders"] a').getAttribute('href')`); href != "#/filter/orders" {
		t.Errorf("the orders row links to %q", href)
	}
	b.do(chromedp.Click(`#filter-table tbody tr[data-key="orders"] a`))
	b.wait(`document.querySelector('#filter-plot svg polyline.curve') !== null`)
	b.screenshot("body", filepath.Join(shots, "filter.png"))
	if n := len(strings.Fields(eval[string](b, `document.querySelector('#filter-plot svg polyline.curve').getAttribute('points')`))); n != 201 {
		t.Errorf("the curve has %d points, want 201", n)
	}
	// 1000 + 2000 items in the first two sub-filters; the third (4000) receives the rest.
	if starts := eval[int](b, `document.querySelectorAll('#filter-plot svg line.start').length`); starts != 2 && starts != 3 {
		t.Errorf("%d sub-filter starts drawn", starts)
	}
	if n, _ := strconv.Atoi(eval[string](b, `document.querySelector('#filter-plot svg circle.now').dataset.items`)); n < 2400 || n > 2500 {
		t.Errorf("now at %d items, want about 2500", n)
	}
	if facts := b.text(`#filter-facts`); !strings.Contains(facts, "Number of filters") || !strings.Contains(facts, "Capacity") {
		t.Errorf("orders' facts: %q", facts)
	}

	b.do(chromedp.Navigate(d.url + "#/filter/sessions"))
	b.wait(`document.querySelector('#filter-name').textContent === "sessions"`)
	facts := eval[[]string](b, `Array.from(document.querySelectorAll('#filter-facts dt, #filter-facts dd')).map(e => e.textContent)`)
	want := []string{"Size", "1,080", "Number of buckets", "256", "Number of filters", "1", "Number of items inserted", "299",
		"Number of items deleted", "1", "Bucket size", "4", "Expansion rate", "1", "Max iterations", "20"}
	if strings.Join(facts, "|") != strings.Join(want, "|") {
		t.Errorf("the cuckoo filter's facts:\n%q\nwant (CF.INFO's)\n%q", facts, want)
	}
	if n := eval[int](b, `document.querySelectorAll('#filter-plot svg').length`); n != 0 {
		t.Errorf("a cuckoo filter has %d false-positive plots", n)
	}
	cfInfo := d.do(t, "CF.INFO", "sessions").([]any)
	if fmt.Sprint(cfInfo[1]) != "1080" || fmt.Sprint(cfInfo[3]) != "256" {
		t.Errorf("CF.INFO sessions = %v; the page's facts are not CF.INFO's", cfInfo)
	}

	// The odd name, by its address: the server decodes the bytes exactly.
	b.do(chromedp.Navigate(d.url + "#/filter/odd%FF%3Cb%3Ebold%3C/b%3E%26%22x"))
	b.wait(`document.querySelector('#filter-plot svg polyline.curve') !== null`)
	if name := b.text(`#filter-name`); name != strconv.Quote(odd) {
		t.Errorf("the odd filter's heading: %q", name)
	}
	if n := eval[int](b, `document.querySelectorAll('#filter b, #filter-plot b').length`); n != 0 {
		t.Errorf("the odd name became %d HTML elements in its view", n)
	}

	// The calculator gives what bloom calc gives.
	cell := func(rule string, col int) string {
		return eval[string](b, fmt.Sprintf(`document.querySelector('#calc-table tr[data-rule=%q]').cells[%d].textContent`, rule, col))
	}
	m, k, _ := bloom.GuavaSize(250000, 0.001)
	m2, k2, _, _ := bloom.RedisBloomSize(250000, 0.001)
	m3, _, _, _ := bloom.BlockedSize(250000, 0.001)
	b.do(chromedp.SetValue(`#calc-n`, "250000"), chromedp.SetValue(`#calc-p`, "0.001"), chromedp.Click(`#calc button`))
	b.wait(fmt.Sprintf(`document.querySelector('#calc-table tr[data-rule="guava"]')?.cells[1].textContent === "%d"`, m))
	b.wait(`document.querySelectorAll('#calc-plot svg polyline.curve').length === 3`)
	b.screenshot("body", filepath.Join(shots, "calculator.png"))
	if gK, rBits, rK, bBits := cell("guava", 3), cell("redisbloom", 1), cell("redisbloom", 3), cell("blocked", 1); gK != strconv.Itoa(k) ||
		rBits != strconv.FormatUint(m2, 10) || rK != strconv.Itoa(k2) || bBits != strconv.FormatUint(m3, 10) {
		t.Errorf("calculator: guava k=%s, redisbloom %s bits k=%s, blocked %s bits; bloom calc: k=%d, %d k=%d, %d",
			gK, rBits, rK, bBits, k, m2, k2, m3)
	}

	// A name typed into the address as it is.
	b.do(chromedp.Navigate(d.url + "#/filter/" + typed))
	b.wait(`document.querySelector('#filter-name').textContent === ` + quoteJS(typed) +
		` && document.querySelector('#filter-plot svg text').textContent === ` + quoteJS(typed))

	// A name that is no filter says so (the browser logs the API's 404).
	b.allow("404 (Not Found)")
	b.do(chromedp.Navigate(d.url + "#/filter/nosuch"))
	b.wait(`document.querySelector('#filter-error').textContent !== ""`)
	t.Logf("screenshots in %s", shots)
}

// TestPageNumbers puts a real load on bloomd (go-redis clients over TCP, bounded in count: Bloom
// and cuckoo adds and checks, failed and refused calls), then checks in headless Chromium that
// the page's numbers agree with each other: the commands count is the sum of the commands'
// calls, only commands with calls have percentiles, and every label of the throughput chart is
// whole inside it, with round ticks and a time axis that ends at "now". With BLOOM_SCREENSHOT
// set to a file name, it runs a longer load and writes the README's screenshot there
// (docs/screenshot.sh).
func TestPageNumbers(t *testing.T) {
	chromium := needChromium(t)
	shot := os.Getenv("BLOOM_SCREENSHOT")
	rounds, size := 4, 50
	if shot != "" {
		rounds, size = 40, 200
	}
	d := startBloomd(t, nil, "", "")
	history := func() int {
		var h []map[string]float64
		getJSON(t, d.url+"api/history", "", "", &h)
		return len(h)
	}
	load(t, d, rounds, size, func() {
		// One round a second: wait for the sampler's next sample (at most 10 s).
		n := history()
		for deadline := time.Now().Add(10 * time.Second); history() == n && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
	})
	// The clients stay connected and fall quiet, as a service's pool does between requests.

	b := newBrowser(t, chromium, "", "")
	// The page's numbers, as displayed: the commands count, and each command's cells.
	type numbers struct {
		Commands string
		Rows     [][]string
	}
	read := func() numbers {
		b.do(chromedp.Navigate(d.url + "#/filter/orders"))
		b.wait(`document.querySelectorAll('#commands tbody tr').length > 0 && document.querySelector('#numbers dd[data-name="commands"]') !== null`)
		return eval[numbers](b, `({Commands: document.querySelector('#numbers dd[data-name="commands"]').textContent,
			Rows: Array.from(document.querySelectorAll('#commands tbody tr')).map(r => Array.from(r.cells).map(c => c.textContent))})`)
	}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
		if err != nil {
			t.Fatalf("%q is not a count", s)
		}
		return n
	}
	// Counts are published by the connections a little after they run (about 100 ms): read
	// the page until it agrees with itself, for 10 s at most.
	var got numbers
	var commands, sum int64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got = read()
		commands, sum = num(got.Commands), 0
		for _, r := range got.Rows {
			sum += num(r[1])
		}
		if commands == sum || time.Now().After(deadline) {
			break
		}
	}
	if commands != sum || commands == 0 {
		t.Errorf("the page shows %d commands, and calls adding up to %d: %q", commands, sum, got.Rows)
	}
	seen := map[string]bool{}
	for _, r := range got.Rows {
		seen[r[0]] = true
		calls := num(r[1])
		switch p50, p99 := r[3], r[4]; {
		case calls == 0 && (p50 != "—" || p99 != "—"):
			t.Errorf("%s: no calls, but p50 %s µs and p99 %s µs", r[0], p50, p99)
		case calls > 0 && (p50 == "—" || p99 == "—"):
			t.Errorf("%s: %d calls, but no percentiles", r[0], calls)
		}
	}
	for _, name := range []string{"bf.madd", "bf.exists", "cf.add", "cf.exists", "bf.info", "cf.info"} {
		if !seen[name] {
			t.Errorf("the commands table lacks %s: %q", name, got.Rows)
		}
	}

	// The throughput chart: every text inside the drawing, round ticks, a span ending now.
	b.wait(`document.querySelector('#throughput svg polyline.ops') !== null`)
	type box struct {
		Text, Class string
		X, Y, W, H  float64
	}
	chart := eval[struct {
		W, H   float64
		Peak   float64
		Labels []box
	}](b, `(() => {
		const svg = document.querySelector('#throughput svg'), vb = svg.viewBox.baseVal;
		return {W: vb.width, H: vb.height, Peak: Number(svg.dataset.peakOps),
			Labels: Array.from(svg.querySelectorAll('text')).map(t => { const r = t.getBBox();
				return {Text: t.textContent, Class: t.getAttribute('class'), X: r.x, Y: r.y, W: r.width, H: r.height}; })};
	})()`)
	var opsTicks, times []string
	legend := false
	for _, l := range chart.Labels {
		if l.X < 0 || l.Y < 0 || l.X+l.W > chart.W || l.Y+l.H > chart.H || l.W == 0 {
			t.Errorf("label %q is cut: %.1f,%.1f %.1f×%.1f in a %.0f×%.0f drawing", l.Text, l.X, l.Y, l.W, l.H, chart.W, chart.H)
		}
		switch l.Class {
		case "tick ops":
			opsTicks = append(opsTicks, l.Text)
		case "tick time":
			times = append(times, l.Text)
		case "legend ops":
			legend = true
			if want := fmt.Sprintf("peak %s)", grouped(int64(chart.Peak))); !strings.Contains(l.Text, want) {
				t.Errorf("ops legend %q, want it to end with %q", l.Text, want)
			}
		}
	}
	if !legend {
		t.Errorf("the chart names no peak in full: %+v", chart.Labels)
	}
	if !roundTicks(opsTicks, chart.Peak) {
		t.Errorf("ops/s ticks %q for a peak of %.0f: want 0 and equal steps of 1, 2 or 5 times a power of ten up to at least the peak", opsTicks, chart.Peak)
	}
	if len(times) < 3 || times[len(times)-1] != "now" || !strings.HasPrefix(times[0], "−") {
		t.Errorf("time axis %q: want a span such as −30 s … now", times)
	}
	if chart.Peak <= 0 {
		t.Errorf("the chart's peak is %v ops/s after the load", chart.Peak)
	}

	if shot != "" {
		b.do(chromedp.Navigate(d.url + "#/filter/orders"))
		b.wait(`document.querySelector('#filter-plot svg polyline.curve') !== null && document.querySelector('#throughput svg polyline.ops') !== null`)
		png, err := chromedp.Run(b.ctx, chromedp.Screenshot("#overview"))
		if err != nil {
			t.Fatal(err)
		}
		if png, err = fewerColors(png); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot in %s (%d bytes)", shot, len(png))
	}
}

// grouped writes n with thousands separators, as the page does.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// roundTicks reports whether ticks (as drawn: 0, 50k, 100k, ...) start at 0, step evenly by
// 1, 2 or 5 times a power of ten, and reach peak.
func roundTicks(ticks []string, peak float64) bool {
	var v []float64
	for _, s := range ticks {
		mult := 1.0
		switch {
		case strings.HasSuffix(s, "k"):
			mult, s = 1e3, strings.TrimSuffix(s, "k")
		case strings.HasSuffix(s, "M"):
			mult, s = 1e6, strings.TrimSuffix(s, "M")
		case strings.HasSuffix(s, "G"):
			mult, s = 1e9, strings.TrimSuffix(s, "G")
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return false
		}
		v = append(v, f*mult)
	}
	if len(v) < 3 || v[0] != 0 || v[len(v)-1] < peak {
		return false
	}
	step := v[1]
	mant := step / math.Pow(10, math.Floor(math.Log10(step)))
	if math.Abs(mant-1) > 1e-9 && math.Abs(mant-2) > 1e-9 && math.Abs(mant-5) > 1e-9 {
		return false
	}
	for i := range v {
		if math.Abs(v[i]-float64(i)*step) > 1e-9*step*float64(len(v)) {
			return false
		}
	}
	return true
}

// load makes a few filters of each kind and runs rounds of commands on them from four
// clients: adds and checks in pipelines of 20, some failed calls (WRONGTYPE) and refused ones
// (CF.INFO without its key: only refused, it has no calls). A round sends from size to 5×size
// pipelines, rising and falling over the rounds; between rounds it calls pause.
func load(t *testing.T, d *bloomd, rounds, size int, pause func()) {
	t.Helper()
	ctx := context.Background()
	for i := range 6 {
		d.do(t, "BF.RESERVE", fmt.Sprintf("users:%d", i), "0.01", 20000*(i+1))
	}
	d.do(t, "BF.RESERVE", "orders", "0.001", "2000", "EXPANSION", "2")
	for i := range 3 {
		d.do(t, "CF.RESERVE", fmt.Sprintf("sessions:%d", i), 4096)
	}
	d.do(t, "BF.ADD", "café menu", "soup")
	for r := range rounds {
		pipelines := size + 4*size*((r*7)%rounds)/max(rounds-1, 1)
		errc := make(chan error, 4)
		for w := range 4 {
			go func() {
				for p := w; p < pipelines; p += 4 {
					pipe := d.rdb.Pipeline()
					for i := range 20 {
						item := fmt.Sprintf("%d-%d-%d", r, p, i)
						switch i % 5 {
						case 0:
							pipe.Do(ctx, "BF.MADD", fmt.Sprintf("users:%d", p%6), item, item+"a", item+"b")
						case 1:
							pipe.Do(ctx, "BF.EXISTS", fmt.Sprintf("users:%d", p%6), item)
						case 2:
							pipe.Do(ctx, "CF.ADD", fmt.Sprintf("sessions:%d", p%3), item)
						case 3:
							pipe.Do(ctx, "CF.EXISTS", fmt.Sprintf("sessions:%d", p%3), item)
						default:
							pipe.Do(ctx, "BF.ADD", "orders", item)
						}
					}
					if p%50 == 0 {
						pipe.Do(ctx, "BF.ADD", "sessions:0", "x") // WRONGTYPE: a failed call
						pipe.Do(ctx, "CF.INFO")                   // wrong number of arguments: refused
					}
					cmds, _ := pipe.Exec(ctx)
					for _, c := range cmds {
						if err := c.Err(); err != nil && !strings.HasPrefix(err.Error(), "WRONGTYPE") && !strings.Contains(err.Error(), "wrong number") {
							errc <- fmt.Errorf("%v: %w", c.Args(), err)
							return
						}
					}
				}
				errc <- nil
			}()
		}
		for range 4 {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
		if r < rounds-1 {
			pause()
		}
	}
	d.do(t, "BF.INFO", "orders")
}

// fewerColors re-encodes a screenshot with its 256 most frequent colors (each pixel the
// nearest of them) at the best compression: the page is flat colors and anti-aliased text, so
// it looks the same at about a third of the bytes. Hand-written because neither the standard
// library nor golang.org/x/image has a colour quantizer, and this one is a dozen lines.
func fewerColors(data []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	counts := map[color.RGBA]int{}
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	byCount := slices.Collect(maps.Keys(counts))
	slices.SortFunc(byCount, func(a, b color.RGBA) int {
		if n := counts[b] - counts[a]; n != 0 {
			return n
		}
		return int(a.R)<<16 | int(a.G)<<8 | int(a.B) - (int(b.R)<<16 | int(b.G)<<8 | int(b.B))
	})
	pal := make(color.Palette, 0, 256)
	for _, c := range byCount[:min(256, len(byCount))] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(r, pal)
	draw.Draw(out, r, img, r.Min, draw.Src)
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
