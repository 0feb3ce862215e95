package web

import (
	"embed"
	"encoding/json"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

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
	// Filters returns one page of the filters matching query (a substring, or a glob if it
	// has *, ? or [), sorted by name, and how many match.
	Filters(query string, offset, limit int) ([]metrics.Filter, int)
	// Filter returns the named filter.
	Filter(name string) (metrics.Filter, bool)
	// Authorize reports whether a request with these basic-auth credentials (given is false
	// for a request without any) may read the metrics and the page.
	Authorize(user, pass string, given bool) bool
}

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
	if user, pass, ok := r.BasicAuth(); !h.src.Authorize(user, pass, ok) {
		w.Header().Set("WWW-Authenticate", `Basic realm="bloomd", charset="UTF-8"`)
		http.Error(w, "bloomd: give the user name and password of a user allowed to run INFO", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.mux.ServeHTTP(w, r)
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
	Name        string  `json:"name"`
	Calls       int64   `json:"calls"`
	UsecPerCall float64 `json:"usec_per_call"`
	P50         float64 `json:"p50_usec"`
	P99         float64 `json:"p99_usec"`
	Rejected    int64   `json:"rejected"`
	Failed      int64   `json:"failed"`
}

func (h *Handler) server(w http.ResponseWriter, r *http.Request) {
	info := h.src.Info()
	var cmds []commandJSON
	for _, cs := range h.src.Stats().Commands() {
		c := commandJSON{Name: cs.Name, Calls: cs.Calls, Rejected: cs.Rejected, Failed: cs.Failed,
			P50: float64(cs.Latency.Percentile(50)) / 1e3, P99: float64(cs.Latency.Percentile(99)) / 1e3}
		if cs.Calls > 0 {
			c.UsecPerCall = float64(cs.Ns) / 1e3 / float64(cs.Calls)
		}
		cmds = append(cmds, c)
	}
	writeJSON(w, map[string]any{"info": info, "commands": cmds, "errors": h.src.Stats().Errors()})
}

type filterJSON struct {
	Name       string  `json:"name"`
	Type       string  `json:"type"`
	Bytes      int64   `json:"bytes"`
	Bits       uint64  `json:"bits"`
	Items      uint64  `json:"items"`
	Capacity   uint64  `json:"capacity"`
	SubFilters int     `json:"subfilters"`
	Fill       float64 `json:"fill"`
	FPP        float64 `json:"fpp"`
	Target     float64 `json:"target"`
}

func toJSON(f *metrics.Filter) filterJSON {
	return filterJSON{Name: f.Name, Type: f.Type, Bytes: f.Bytes, Bits: f.Bits(), Items: f.Items(),
		Capacity: f.Capacity(), SubFilters: len(f.Links), Fill: finite(f.Fill()), FPP: finite(f.FPP()), Target: f.Target()}
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
	page, total := h.src.Filters(q.Get("q"), offset, limit)
	out := make([]filterJSON, len(page))
	for i := range page {
		out[i] = toJSON(&page[i])
	}
	writeJSON(w, map[string]any{"total": total, "offset": offset, "filters": out})
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
	c := &plot.Chart{Title: f.Name, MaxItems: maxItems, Target: f.Target(),
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
	f, ok := h.src.Filter(r.URL.Query().Get("name"))
	if !ok {
		http.Error(w, "bloomd: no such filter", http.StatusNotFound)
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
