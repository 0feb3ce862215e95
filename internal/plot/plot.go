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

// The curves' colours, in order, and the target line's, which no curve takes.
var palette = []string{"#1f77b4", "#d62728", "#9467bd", "#ff7f0e", "#8c564b"}

const targetColor = "#2ca02c"

// A frame is a chart's sampled curves, its mapping from (items, rate) to the picture, and its
// text: what SVG and PNG both draw.
type frame struct {
	sampled [][]float64 // each curve's rates at samples+1 evenly spaced item counts
	lo      float64     // the y axis's lowest decade (log10 of the rate)
	x, y    func(float64) float64
	colors  []string // each curve's colour; a curve that coincides with an earlier one takes its colour
	drawn   []bool   // whether the PNG draws the curve: not if it coincides with an earlier one
	labels  []label
}

// A label is one piece of text, placed as SVG places text: (x, y) is on the baseline, at the
// start, middle or end of the text as anchor says.
type label struct {
	x, y   float64
	text   string
	size   float64 // in pixels (SVG user units)
	anchor string  // "start", "middle" or "end"
	color  string  // "#rrggbb"
	rotate bool    // turned 90° counter-clockwise, read upwards, about (x, y)
	swatch bool    // a legend entry: a short line of the colour precedes the text
}

// Text sizes and the legend's place.
const (
	textSize, titleSize = 12.0, 14.0
	legendLine          = 16.0 // the legend's line height
	swatchWidth         = 18.0 // the coloured line before a legend entry
)

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
	fr := &frame{sampled: sampled, lo: lo, x: x, y: y}
	fr.legend(c)
	fr.text(c)
	return fr, nil
}

// legend gives each curve its colour and the legend its entries. Curves that coincide, within
// half a pixel everywhere (Guava's and RedisBloom's sizings often give the same m and k), are
// one entry naming them all, in the colour of the first, which the PNG draws alone: a legend
// entry for a curve hidden under another would point at nothing.
func (fr *frame) legend(c *Chart) {
	fr.colors = make([]string, len(c.Curves))
	fr.drawn = make([]bool, len(c.Curves))
	same := make([]int, len(c.Curves)) // the first curve each coincides with
	var entries []int
	for i := range c.Curves {
		same[i] = i
		for _, j := range entries {
			if fr.coincide(i, j) {
				same[i] = j
				break
			}
		}
		if same[i] == i {
			entries = append(entries, i)
			fr.colors[i] = palette[(len(entries)-1)%len(palette)]
			fr.drawn[i] = true
		} else {
			fr.colors[i] = fr.colors[same[i]]
		}
	}
	for n, i := range entries {
		var names []string
		for k := range c.Curves {
			if same[k] == i {
				names = append(names, c.Curves[k].Name)
			}
		}
		text := names[0]
		if len(names) > 1 {
			text = strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " (the same curve)"
		}
		fr.labels = append(fr.labels, label{x: left + 8, y: top + 14 + legendLine*float64(n), text: text,
			size: textSize, anchor: "start", color: fr.colors[i], swatch: true})
	}
}

// Legend returns the legend's entries, one per curve or group of coinciding curves, as the
// chart draws them, or nil if the chart cannot be drawn.
func (c *Chart) Legend() []string {
	fr, err := c.frame()
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range fr.labels {
		if l.swatch {
			out = append(out, l.text)
		}
	}
	return out
}

// Size is the picture's width and height, in pixels (SVG user units).
func Size() (w, h int) { return int(width), int(height) }

// coincide reports whether curves i and j are drawn within half a pixel of each other at every
// sample.
func (fr *frame) coincide(i, j int) bool {
	for k, v := range fr.sampled[i] {
		if math.Abs(fr.y(v)-fr.y(fr.sampled[j][k])) >= 0.5 {
			return false
		}
	}
	return true
}

// text adds the title, the axes' ticks and names, the target's label and the points' labels.
func (fr *frame) text(c *Chart) {
	const black = "#000000"
	add := func(l label) { fr.labels = append(fr.labels, l) }
	if c.Title != "" { // first, before the legend: the picture's first text names it
		fr.labels = append([]label{{x: left, y: 20, text: c.Title, size: titleSize, anchor: "start", color: black}}, fr.labels...)
	}
	for d := 0.0; d >= fr.lo; d-- {
		add(label{x: left - 6, y: fr.y(math.Pow(10, d)) + 4, text: fmt.Sprintf("1e%d", int(d)), size: textSize, anchor: "end", color: black})
	}
	for i := 0; i <= 5; i++ {
		items := c.MaxItems * float64(i) / 5
		add(label{x: fr.x(items), y: height - bottom + 16, text: Count(items), size: textSize, anchor: "middle", color: black})
	}
	add(label{x: (left + width - right) / 2, y: height - 12, text: "items", size: textSize, anchor: "middle", color: black})
	add(label{x: 14, y: (top + height - bottom) / 2, text: "false-positive rate", size: textSize, anchor: "middle", color: black, rotate: true})
	if c.Target > 0 {
		add(label{x: width - right - 4, y: fr.y(c.Target) - 4, text: "target " + Rate(c.Target), size: textSize, anchor: "end", color: targetColor})
	}
	for _, p := range c.Points {
		add(label{x: fr.x(p.Items) + 8, y: fr.y(p.FPP) - 8, text: p.Label, size: textSize, anchor: "start", color: black})
	}
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
	// Axes and grid: a line per decade, five x ticks.
	for d := 0.0; d >= lo; d-- {
		yy := y(math.Pow(10, d))
		f(`<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/>`+"\n", left, yy, width-right, yy)
	}
	for i := 0; i <= 5; i++ {
		xx := x(c.MaxItems * float64(i) / 5)
		f(`<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#ddd"/>`+"\n", xx, top, xx, height-bottom)
	}
	f(`<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="black"/>`+"\n", left, top, left, height-bottom)
	f(`<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="black"/>`+"\n", left, height-bottom, width-right, height-bottom)
	for _, s := range c.Starts {
		xx := x(s)
		f(`<line class="start" x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#999" stroke-dasharray="4 3"/>`+"\n", xx, top, xx, height-bottom)
	}
	if c.Target > 0 {
		yy := y(c.Target)
		f(`<line class="target" x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="%s" stroke-dasharray="6 3"/>`+"\n", left, yy, width-right, yy, targetColor)
	}
	for i, cv := range c.Curves {
		f(`<polyline class="curve" data-name="%s" fill="none" stroke="%s" stroke-width="2" points="`, html.EscapeString(cv.Name), fr.colors[i])
		for j, v := range sampled[i] {
			if j > 0 {
				b.WriteByte(' ')
			}
			f("%.1f,%.1f", x(c.MaxItems*float64(j)/samples), y(v))
		}
		f(`"/>` + "\n")
	}
	for _, p := range c.Points {
		f(`<circle class="%s" cx="%.1f" cy="%.1f" r="5" fill="black" data-items="%s" data-fpp="%s"><title>%s</title></circle>`+"\n",
			html.EscapeString(p.Class), x(p.Items), y(p.FPP), strconv.FormatFloat(p.Items, 'g', -1, 64), strconv.FormatFloat(p.FPP, 'g', 6, 64), html.EscapeString(p.Label))
	}
	for _, l := range fr.labels {
		tx := l.x
		if l.swatch {
			f(`<line class="swatch" x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"/>`+"\n", l.x, l.y-4, l.x+swatchWidth, l.y-4, l.color)
			tx += swatchWidth + 6
		}
		f(`<text x="%.1f" y="%.1f" font-size="%g" text-anchor="%s" fill="%s"`, tx, l.y, l.size, l.anchor, l.color)
		if l.rotate {
			f(` transform="rotate(-90 %.1f %.1f)"`, tx, l.y)
		}
		f(`>%s</text>`+"\n", html.EscapeString(l.text))
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
