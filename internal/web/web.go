package web

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/metrics"
	"github.com/bloomd/bloom/internal/plot"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

//go:embed static
var static embed.FS

// A Source is what the page reads: the metrics' source, plus filters by name and the password.
type Source interface {
	metrics.Source
	// Filters returns one page of the filters (Bloom and cuckoo) that v may read and whose
	// names match query (a substring, or a glob if it has *, ? or [), sorted by name, and how
	// many of those there are: filters v may not read count nowhere.
	Filters(v Viewer, query string, offset, limit int) ([]metrics.Filter, int)
	// Filter returns the named filter, if there is one and v may read it.
	Filter(v Viewer, name string) (metrics.Filter, bool)
	// Authorize returns the user that a request with these basic-auth credentials (given is
	// false for a request without any) reads the metrics and the page as, or false if it may
	// not read them.
	Authorize(user, pass string, given bool) (Viewer, bool)
}

// A Viewer is the user an HTTP request reads the page as. The page lists only the keys it may
// read, as its ACL key patterns (~pattern, %R~pattern) allow.
type Viewer interface {
	// Name returns the user's name.
	Name() string
	// MayRead reports whether the user may read key.
	MayRead(key string) bool
	// ReadsAll reports whether the user may read every key.
	ReadsAll() bool
}

type viewerKey struct{}

// viewer returns the user r was authorized as.
func viewer(r *http.Request) Viewer { return r.Context().Value(viewerKey{}).(Viewer) }

// A Handler serves the metrics port. Close stops its sampler.
type Handler struct {
	src  Source
	mux  *http.ServeMux
	hist *history
	stop chan struct{}
	once sync.Once
}

// NewHandler returns the handler for src, and starts sampling its throughput once a second.
func NewHandler(src Source) *Handler {
	h := &Handler{src: src, mux: http.NewServeMux(), hist: newHistory(600), stop: make(chan struct{})}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(src), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	sub, _ := fs.Sub(static, "static")
	h.mux.Handle("GET /", http.FileServerFS(sub))
	h.mux.HandleFunc("GET /api/server", h.server)
	h.mux.HandleFunc("GET /api/history", h.history)
	h.mux.HandleFunc("GET /api/filters", h.filters)
	h.mux.HandleFunc("GET /api/filter", h.filter)
	h.mux.HandleFunc("GET /api/filter.svg", h.filterPlot)
	h.mux.HandleFunc("GET /api/calc", h.calc)
	h.mux.HandleFunc("GET /api/calc.svg", h.calcPlot)
	go h.sample()
	return h
}

// Close stops the sampler. The handler still serves.
func (h *Handler) Close() { h.once.Do(func() { close(h.stop) }) }

// ServeHTTP checks basic auth (Source.Authorize), then serves.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	v, allowed := h.src.Authorize(user, pass, ok)
	if !allowed {
		w.Header().Set("WWW-Authenticate", `Basic realm="bloomd", charset="UTF-8"`)
		http.Error(w, "bloomd: give the user name and password of a user allowed to run INFO", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, v)))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// finite replaces NaN and infinities, which JSON cannot carry, by 0.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

type commandJSON struct {
	Name        string   `json:"name"`
	Calls       int64    `json:"calls"`
	UsecPerCall float64  `json:"usec_per_call"`
	P50         *float64 `json:"p50_usec"` // null for a command with no calls (only rejected ones)
	P99         *float64 `json:"p99_usec"`
	Rejected    int64    `json:"rejected"`
	Failed      int64    `json:"failed"`
}

func (h *Handler) server(w http.ResponseWriter, r *http.Request) {
	info := h.src.Info()
	var cmds []commandJSON
	for _, cs := range h.src.Stats().Commands() {
		c := commandJSON{Name: cs.Name, Calls: cs.Calls, Rejected: cs.Rejected, Failed: cs.Failed}
		if cs.Calls > 0 {
			c.UsecPerCall = float64(cs.Ns) / 1e3 / float64(cs.Calls)
			if cs.Latency.Count > 0 {
				p50, p99 := float64(cs.Latency.Percentile(50))/1e3, float64(cs.Latency.Percentile(99))/1e3
				c.P50, c.P99 = &p50, &p99
			}
		}
		cmds = append(cmds, c)
	}
	writeJSON(w, map[string]any{"info": info, "commands": cmds, "errors": h.src.Stats().Errors()})
}

// A fact is one field of BF.INFO's or CF.INFO's answer about a filter.
type fact struct {
	Label string `json:"label"`
	Value any    `json:"value"` // a number, or null (BF.INFO's expansion of a non-scaling filter)
}

type filterJSON struct {
	Key        string   `json:"key"`  // the name's bytes, percent-encoded (see escapeKey): for URLs
	Name       string   `json:"name"` // the name to show (see displayName)
	Type       string   `json:"type"` // "bloom" or "cuckoo"
	Bytes      int64    `json:"bytes"`
	Bits       uint64   `json:"bits,omitempty"`
	Items      uint64   `json:"items"`
	Capacity   uint64   `json:"capacity"`
	SubFilters int      `json:"subfilters"`
	Fill       float64  `json:"fill"`
	FPP        *float64 `json:"fpp"`    // null for a cuckoo filter
	Target     *float64 `json:"target"` // null for a cuckoo filter
	Facts      []fact   `json:"facts"`
}

func toJSON(f *metrics.Filter) filterJSON {
	out := filterJSON{Key: escapeKey(f.Name), Name: displayName(f.Name), Type: f.Type, Bytes: f.Bytes}
	if c := f.Cuckoo; c != nil {
		// A cuckoo filter holds one fingerprint per slot: its capacity is its slots, its fill
		// their share in use. Its false-positive rate depends on how the items spread over its
		// sub-filters, which CF.INFO does not tell: the page leaves it out.
		out.Items, out.Capacity, out.SubFilters = c.Inserted, c.Slots, c.Filters
		if c.Slots > 0 {
			out.Fill = float64(c.Inserted) / float64(c.Slots)
		}
		out.Facts = []fact{{"Size", c.Size}, {"Number of buckets", c.Buckets}, {"Number of filters", c.Filters},
			{"Number of items inserted", c.Inserted}, {"Number of items deleted", c.Deleted},
			{"Bucket size", c.BucketSize}, {"Expansion rate", c.Expansion}, {"Max iterations", c.MaxIterations}}
		return out
	}
	fpp, target := finite(f.FPP()), f.Target()
	out.Bits, out.Items, out.Capacity, out.SubFilters = f.Bits(), f.Items(), f.Capacity(), len(f.Links)
	out.Fill, out.FPP, out.Target = finite(f.Fill()), &fpp, &target
	var expansion any
	if f.Scaling {
		expansion = f.Expansion
	}
	out.Facts = []fact{{"Capacity", out.Capacity}, {"Memory", f.Bytes}, {"Number of filters", len(f.Links)},
		{"Number of items inserted", out.Items}, {"Expansion rate", expansion}}
	return out
}

// keepInKey are the bytes escapeKey leaves as they are: RFC 3986's unreserved characters and a
// few more that mean nothing special in a query value or a fragment.
const keepInKey = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:@*,!()$/"

// escapeKey percent-encodes every byte of a key name but those of keepInKey. A key is any
// bytes, not always UTF-8: the result names it exactly in a query (?key=, which Go's URL
// parsing decodes back to the same bytes) and in the page's address (#/filter/...), and holds
// nothing that HTML, JSON or a URL would read as syntax.
func escapeKey(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if strings.IndexByte(keepInKey, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		const hex = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// displayName returns a key name to show: as it is when it is printable UTF-8, else quoted as
// Go quotes strings ("\xff", "\n"), so that no byte is lost or drawn as something else.
func displayName(name string) string {
	if utf8.ValidString(name) && strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return name
	}
	return strconv.Quote(name)
}

// maxPage is the most filters one request lists.
const maxPage = 500

func (h *Handler) filters(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 || limit > maxPage {
		limit = 50
	}
	v := viewer(r)
	page, total := h.src.Filters(v, q.Get("q"), offset, limit)
	out := make([]filterJSON, len(page))
	for i := range page {
		out[i] = toJSON(&page[i])
	}
	writeJSON(w, map[string]any{"total": total, "offset": offset, "filters": out,
		"user": v.Name(), "all_keys": v.ReadsAll()})
}

// lookup returns the filter the request names (key=, or name= as earlier pages sent), if the
// request's user may read it; else it answers 404, the same for a filter that does not exist
// and one the user may not read.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request) (metrics.Filter, bool) {
	q := r.URL.Query()
	name := q.Get("key")
	if !q.Has("key") {
		name = q.Get("name")
	}
	f, ok := h.src.Filter(viewer(r), name)
	if !ok {
		http.Error(w, "bloomd: no such filter", http.StatusNotFound)
	}
	return f, ok
}

func (h *Handler) filter(w http.ResponseWriter, r *http.Request) {
	if f, ok := h.lookup(w, r); ok {
		writeJSON(w, toJSON(&f))
	}
}

// rbSize sizes a projected sub-filter as RedisBloom does.
func rbSize(capacity uint64, p float64) (uint64, int, bool) {
	m, k, _, err := bloom.RedisBloomSize(capacity, p)
	return m, k, err == nil
}

// filterChart is the chart of one filter: its curve as items grow (with the sub-filters a
// scalable filter would add), where it stands, and where it crosses its target.
func filterChart(f *metrics.Filter) *plot.Chart {
	items := float64(f.Items())
	maxItems := max(2*float64(f.Capacity()), 1.5*items, 10)
	links := f.Projected(maxItems, rbSize)
	curve := func(n float64) float64 { return metrics.FPPAt(links, n) }
	c := &plot.Chart{Title: displayName(f.Name), MaxItems: maxItems, Target: f.Target(),
		Curves: []plot.Curve{{Name: "false-positive rate", FPP: curve}}, Starts: metrics.Starts(links)}
	c.Points = append(c.Points, plot.Point{Label: "now: " + plot.Count(items) + " items, " + plot.Rate(f.FPP()), Class: "now", Items: items, FPP: f.FPP()})
	if f.Target() > 0 && !f.Scaling {
		if x := plot.Crossing(curve, f.Target(), maxItems); x >= 0 {
			c.Points = append(c.Points, plot.Point{Label: "reaches target at " + plot.Count(x), Class: "crossing", Items: x, FPP: curve(x)})
		}
	}
	return c
}

func (h *Handler) filterPlot(w http.ResponseWriter, r *http.Request) {
	f, ok := h.lookup(w, r)
	if !ok {
		return
	}
	if f.Cuckoo != nil {
		http.Error(w, "bloomd: a cuckoo filter has no false-positive curve; its facts are at /api/filter", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	filterChart(&f).WriteSVG(w)
}

// A calcRow is one sizing rule's answer, as `bloom calc -n -p` prints it.
type calcRow struct {
	Rule        string             `json:"rule"`
	Bits        uint64             `json:"bits"`
	Bytes       uint64             `json:"bytes"`
	K           int                `json:"k"`
	BitsPerItem float64            `json:"bits_per_item"`
	FPP         map[string]float64 `json:"fpp"` // at ¼n, ½n, n, 2n, 4n
	Error       string             `json:"error,omitempty"`
}

// calcRows sizes n items at rate p under each rule, with the functions `bloom calc` calls.
func calcRows(n uint64, p float64) []calcRow {
	var rows []calcRow
	for _, s := range plot.Sizings(n, p) {
		if s.Err != nil {
			rows = append(rows, calcRow{Rule: s.Rule, Error: s.Err.Error()})
			continue
		}
		r := calcRow{Rule: s.Rule, Bits: s.Bits, Bytes: (s.Bits + 7) / 8, K: s.K, BitsPerItem: float64(s.Bits) / float64(n),
			FPP: map[string]float64{}}
		for _, fp := range []struct {
			label    string
			num, den uint64
		}{{"¼n", 1, 4}, {"½n", 1, 2}, {"n", 1, 1}, {"2n", 2, 1}, {"4n", 4, 1}} {
			r.FPP[fp.label] = s.FPP(n * fp.num / fp.den)
		}
		rows = append(rows, r)
	}
	return rows
}

// parseCalc reads n and p; the error is for the user.
func parseCalc(r *http.Request) (uint64, float64, string) {
	q := r.URL.Query()
	nf, err := strconv.ParseFloat(q.Get("n"), 64)
	if err != nil || nf < 1 || nf > 1e15 || nf != math.Trunc(nf) {
		return 0, 0, "n must be a whole number of items from 1 to 1e15"
	}
	p, err := strconv.ParseFloat(q.Get("p"), 64)
	if err != nil || !(p > 0 && p < 1) {
		return 0, 0, "p must be a rate between 0 and 1, such as 0.01"
	}
	return uint64(nf), p, ""
}

func (h *Handler) calc(w http.ResponseWriter, r *http.Request) {
	n, p, msg := parseCalc(r)
	if msg != "" {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": msg})
		return
	}
	writeJSON(w, map[string]any{"n": n, "p": p, "rows": calcRows(n, p)})
}

func (h *Handler) calcPlot(w http.ResponseWriter, r *http.Request) {
	n, p, msg := parseCalc(r)
	if msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	plot.SizingChart(n, p).WriteSVG(w)
}

// history keeps one sample a second of throughput and mean latency.
type history struct {
	mu      sync.Mutex
	samples []sample
	max     int
}

type sample struct {
	Time       int64   `json:"t"` // unix seconds
	OpsPerSec  float64 `json:"ops"`
	MeanMicros float64 `json:"usec"`
}

func newHistory(n int) *history { return &history{max: n} }

func (h *Handler) sample() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastCalls, lastNs int64
	var lastT time.Time
	for {
		var calls, ns int64
		for _, cs := range h.src.Stats().Commands() {
			calls += cs.Calls
			ns += cs.Ns
		}
		now := time.Now()
		if !lastT.IsZero() && calls >= lastCalls {
			s := sample{Time: now.Unix(), OpsPerSec: float64(calls-lastCalls) / now.Sub(lastT).Seconds()}
			if calls > lastCalls {
				s.MeanMicros = float64(ns-lastNs) / 1e3 / float64(calls-lastCalls)
			}
			h.hist.add(s)
		}
		lastCalls, lastNs, lastT = calls, ns, now
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
	}
}

func (hs *history) add(s sample) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if len(hs.samples) == hs.max {
		hs.samples = append(hs.samples[:0], hs.samples[1:]...)
	}
	hs.samples = append(hs.samples, s)
}

func (h *Handler) history(w http.ResponseWriter, r *http.Request) {
	h.hist.mu.Lock()
	out := append([]sample{}, h.hist.samples...)
	h.hist.mu.Unlock()
	writeJSON(w, out)
}
