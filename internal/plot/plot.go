package plot

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// A Curve is one false-positive rate function to draw.
type Curve struct {
	Name string
	FPP  func(items float64) float64
}

// A Point marks one place on the chart.
type Point struct {
	Label string
	Class string // "now", "crossing", ... (the circle's class)
	Items float64
	FPP   float64
}

// A Chart is what one SVG shows.
type Chart struct {
	Title    string
	MaxItems float64 // the x axis runs from 0 to MaxItems
	Curves   []Curve
	Points   []Point
	Target   float64   // a horizontal line at the target rate, if positive
	Starts   []float64 // vertical lines where sub-filters start, in items
}

// Chart geometry in SVG user units.
const (
	width, height = 720.0, 400.0
	left, right   = 70.0, 20.0
	top, bottom   = 36.0, 50.0
	samples       = 200
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

// A frame is a chart's sampled curves and its mapping from (items, rate) to the picture.
type frame struct {
	sampled [][]float64 // each curve's rates at samples+1 evenly spaced item counts
	lo      float64     // the y axis's lowest decade (log10 of the rate)
	x, y    func(float64) float64
}

// frame samples the curves and fixes the axes; SVG and PNG draw the same frame.
func (c *Chart) frame() (*frame, error) {
	if !(c.MaxItems > 0) || math.IsInf(c.MaxItems, 0) {
		return nil, fmt.Errorf("plot: the x axis needs a positive number of items, not %v", c.MaxItems)
	}
	// The y range: every sampled rate above 0, every point and the target.
	minY := 1.0
	consider := func(v float64) {
		if v > 0 && v < minY {
			minY = v
		}
	}
	sampled := make([][]float64, len(c.Curves))
	for i, cv := range c.Curves {
		ys := make([]float64, samples+1)
		for j := range ys {
			ys[j] = clamp01(cv.FPP(c.MaxItems * float64(j) / samples))
			// The first samples of a curve are tiny (the rate grows as n^k); leave them out
			// of the range so that the chart shows the region that matters.
			if j >= samples/20 {
				consider(ys[j])
			}
		}
		sampled[i] = ys
	}
	for _, p := range c.Points {
		consider(p.FPP)
	}
	consider(c.Target)
	lo := math.Floor(math.Log10(minY)) - 1
	lo = max(lo, -15)
	x := func(items float64) float64 { return left + (width-left-right)*items/c.MaxItems }
	y := func(fpp float64) float64 {
		l := lo
		if fpp > 0 {
			l = max(math.Log10(fpp), lo)
		}
		return top + (height-top-bottom)*(0-l)/(0-lo)
	}
	return &frame{sampled: sampled, lo: lo, x: x, y: y}, nil
}

// WriteSVG draws the chart. It fails only if w does, or if the chart has no x range.
func (c *Chart) WriteSVG(w io.Writer) error {
	fr, err := c.frame()
	if err != nil {
		return err
	}
	sampled, lo, x, y := fr.sampled, fr.lo, fr.x, fr.y

	var b strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	f(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" width="%g" height="%g" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	f(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	if c.Title != "" {
		f(`<text x="%g" y="20" font-size="14">%s</text>`+"\n", left, html.EscapeString(c.Title))
	}
	// Axes and grid: a line per decade, five x ticks.
	for d := 0.0; d >= lo; d-- {
		yy := y(math.Pow(10, d))
		f(`<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/>`, left, yy, width-right, yy)
		f(`<text x="%g" y="%.1f" text-anchor="end">1e%d</text>`+"\n", left-6, yy+4, int(d))
	}
	for i := 0; i <= 5; i++ {
		items := c.MaxItems * float64(i) / 5
		xx := x(items)
		f(`<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#ddd"/>`, xx, top, xx, height-bottom)
		f(`<text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", xx, height-bottom+16, Count(items))
	}
	f(`<text x="%g" y="%g" text-anchor="middle">items</text>`+"\n", (left+width-right)/2, height-12)
	f(`<text x="14" y="%g" transform="rotate(-90 14 %g)" text-anchor="middle">false-positive rate</text>`+"\n", (top+height-bottom)/2, (top+height-bottom)/2)
	for _, s := range c.Starts {
		xx := x(s)
		f(`<line class="start" x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#999" stroke-dasharray="4 3"/>`+"\n", xx, top, xx, height-bottom)
	}
	if c.Target > 0 {
		yy := y(c.Target)
		f(`<line class="target" x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#2ca02c" stroke-dasharray="6 3"/>`, left, yy, width-right, yy)
		f(`<text x="%g" y="%.1f" text-anchor="end" fill="#2ca02c">target %s</text>`+"\n", width-right-4, yy-4, Rate(c.Target))
	}
	for i, cv := range c.Curves {
		color := palette[i%len(palette)]
		f(`<polyline class="curve" data-name="%s" fill="none" stroke="%s" stroke-width="2" points="`, html.EscapeString(cv.Name), color)
		for j, v := range sampled[i] {
			if j > 0 {
				b.WriteByte(' ')
			}
			f("%.1f,%.1f", x(c.MaxItems*float64(j)/samples), y(v))
		}
		f(`"/>` + "\n")
		f(`<text x="%g" y="%g" fill="%s">%s</text>`+"\n", left+8+float64(i)*150, top+14, color, html.EscapeString(cv.Name))
	}
	for _, p := range c.Points {
		f(`<circle class="%s" cx="%.1f" cy="%.1f" r="5" fill="black" data-items="%s" data-fpp="%s"><title>%s</title></circle>`,
			html.EscapeString(p.Class), x(p.Items), y(p.FPP), strconv.FormatFloat(p.Items, 'g', -1, 64), strconv.FormatFloat(p.FPP, 'g', 6, 64), html.EscapeString(p.Label))
		f(`<text x="%.1f" y="%.1f">%s</text>`+"\n", x(p.Items)+8, y(p.FPP)-8, html.EscapeString(p.Label))
	}
	f("</svg>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

func clamp01(v float64) float64 {
	if math.IsNaN(v) || v < 0 {
		return 0
	}
	return min(v, 1)
}

// Crossing returns the least item count in [0, hi] at which fpp reaches target, by bisection,
// or -1 if it does not reach it by hi. fpp must not decrease.
func Crossing(fpp func(float64) float64, target, hi float64) float64 {
	if fpp(hi) < target {
		return -1
	}
	lo := 0.0
	for range 100 {
		mid := (lo + hi) / 2
		if fpp(mid) >= target {
			hi = mid
		} else {
			lo = mid
		}
		if hi-lo < 0.5 {
			break
		}
	}
	return math.Ceil(hi)
}

// Count formats an item count briefly: 1500 as 1.5k, 2e6 as 2M.
func Count(n float64) string {
	for _, u := range []struct {
		v float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if n >= u.v {
			return strconv.FormatFloat(n/u.v, 'g', 3, 64) + u.s
		}
	}
	return strconv.FormatFloat(n, 'g', 3, 64)
}

// Rate formats a rate briefly: 0.01 as 1%, 1e-5 as 0.001%.
func Rate(p float64) string { return strconv.FormatFloat(p*100, 'g', 3, 64) + "%" }
