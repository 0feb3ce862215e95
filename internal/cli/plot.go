package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/metrics"
	"github.com/bloomd/bloom/internal/plot"
)

// plotHelp is the --plot flag's help, shared by calc and info.
const plotHelp = "also draw the false-positive rate as items grow to this file, as SVG (.svg) or PNG (.png)"

// writePlot writes chart to path as SVG or PNG, as its extension says, and says on w what it
// wrote.
func writePlot(w io.Writer, path string, chart *plot.Chart) error {
	write, kind := chart.WriteSVG, "SVG"
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg":
	case ".png":
		write, kind = chart.WritePNG, "PNG"
	default:
		return fmt.Errorf("--plot %s: bloom draws SVG or PNG; give a file name ending in .svg or .png", quote(path))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("--plot: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	width, height := plot.Size()
	said := fmt.Sprintf("wrote %s: %s chart, %d×%d pixels: false-positive rate against items, 0 to %s; curves: %s",
		path, kind, width, height, plot.Count(chart.MaxItems), strings.Join(chart.Legend(), ", "))
	if chart.Target > 0 {
		said += "; target " + plot.Rate(chart.Target)
	}
	for _, p := range chart.Points {
		said += "; marked: " + p.Label
	}
	_, err = fmt.Fprintln(w, said)
	return err
}

// calcChart draws what calc prints: every rule's curve for -n -p, or the given size's.
func (q calcQuery) chart() *plot.Chart {
	if q.m == 0 {
		return plot.SizingChart(q.n, q.p)
	}
	m, k, n := q.m, q.k, q.n
	if k == 0 {
		if n > 0 {
			k = bloom.OptimalK(n, m)
		} else {
			for c := 1; c <= 64; c++ { // as printGiven: the k that holds the most items at p
				if k == 0 || bloom.Capacity(m, c, q.p) > bloom.Capacity(m, k, q.p) {
					k = c
				}
			}
		}
	}
	if n == 0 && q.p != 0 {
		n = bloom.Capacity(m, k, q.p)
	}
	if n == 0 {
		n = max(1, uint64(float64(m)*0.6931471805599453/float64(k)))
	}
	c := &plot.Chart{Title: fmt.Sprintf("%s, k=%d", sizeString(m), k), MaxItems: 4 * float64(n), Target: q.p,
		Curves: []plot.Curve{{Name: "classic", FPP: func(x float64) float64 { return bloom.FalsePositiveRate(m, k, uint64(x)) }}}}
	return c
}

// filterChart draws a filter file's curve: for a RedisBloom chain the links it has and those it
// would add, for other filters their m and k; with where the filter stands now.
func (f *filter) chart(name string, d description) *plot.Chart {
	maxItems := max(2*float64(d.Capacity), 1.5*float64(d.Count), 10)
	c := &plot.Chart{Title: filepath.Base(name), MaxItems: maxItems}
	if f.chain != nil {
		mf := metrics.Filter{Scaling: !f.chain.NonScaling(), Expansion: f.chain.Expansion()}
		for _, l := range f.chain.Links() {
			mf.Links = append(mf.Links, metrics.Link{Bits: l.Bytes * 8, Hashes: l.Hashes, Items: l.Items, Capacity: l.Capacity, Target: l.ErrorRate})
		}
		links := mf.Projected(maxItems, func(capacity uint64, p float64) (uint64, int, bool) {
			m, k, _, err := bloom.RedisBloomSize(capacity, p)
			return m, k, err == nil
		})
		c.Curves = []plot.Curve{{Name: d.Kind, FPP: func(x float64) float64 { return metrics.FPPAt(links, x) }}}
		c.Starts = metrics.Starts(links)
	} else {
		m, k, z := d.Bits, d.K, d.Sectors
		fpp := func(x float64) float64 { return bloom.FalsePositiveRate(m, k, uint64(x)) }
		if z > 0 {
			fpp = func(x float64) float64 { return bloom.BlockedFalsePositiveRate(m, k, z, uint64(x)) }
		}
		c.Curves = []plot.Curve{{Name: d.Kind, FPP: fpp}}
	}
	label := "now: " + plot.Count(float64(d.Count)) + " items, " + plot.Rate(d.FPP)
	c.Points = []plot.Point{{Label: label, Class: "now", Items: float64(d.Count), FPP: d.FPP}}
	return c
}
