package plot

import (
	"encoding/xml"
	"math"
	"strings"
	"testing"
)

func TestWriteSVG(t *testing.T) {
	c := Chart{Title: "t <&>", MaxItems: 1000, Target: 0.01,
		Curves: []Curve{{Name: "a", FPP: func(n float64) float64 { return math.Pow(n/1000, 3) }}},
		Points: []Point{{Label: "now", Class: "now", Items: 500, FPP: 0.125}}, Starts: []float64{400}}
	var b strings.Builder
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	// Well-formed XML, the title escaped, one curve of samples+1 points, the marker and lines.
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v\n%s", err, svg)
			}
			break
		}
	}
	if !strings.Contains(svg, "t &lt;&amp;&gt;") || !strings.Contains(svg, `class="now"`) ||
		!strings.Contains(svg, `class="target"`) || !strings.Contains(svg, `class="start"`) {
		t.Errorf("SVG lacks a part:\n%s", svg)
	}
	i := strings.Index(svg, `points="`)
	pts := strings.Fields(svg[i+8 : i+8+strings.Index(svg[i+8:], `"`)])
	if len(pts) != samples+1 {
		t.Errorf("%d points, want %d", len(pts), samples+1)
	}
	if err := (&Chart{}).WriteSVG(&b); err == nil {
		t.Error("a chart with no x range drew")
	}
}

func TestCrossing(t *testing.T) {
	f := func(n float64) float64 { return n / 1000 }
	if x := Crossing(f, 0.25, 1000); x != 250 {
		t.Errorf("Crossing = %v, want 250", x)
	}
	if x := Crossing(f, 2, 1000); x != -1 {
		t.Errorf("Crossing beyond the range = %v", x)
	}
}

// TestCoincidingCurves: curves drawn within half a pixel of each other share one legend entry
// that names them all, and one colour; others keep their own.
func TestCoincidingCurves(t *testing.T) {
	a := func(n float64) float64 { return math.Pow(n/1000, 3) }
	b := func(n float64) float64 { return math.Pow(n/1000, 3) * (1 + 1e-9) }
	other := func(n float64) float64 { return math.Pow(n/2000, 2) }
	c := Chart{MaxItems: 1000, Curves: []Curve{{Name: "guava", FPP: a}, {Name: "redisbloom", FPP: b}, {Name: "blocked", FPP: other}}}
	fr, err := c.frame()
	if err != nil {
		t.Fatal(err)
	}
	var legend []string
	for _, l := range fr.labels {
		if l.swatch {
			legend = append(legend, l.text)
		}
	}
	if strings.Join(legend, "|") != "guava and redisbloom (the same curve)|blocked" {
		t.Errorf("legend %q", legend)
	}
	if fr.colors[0] != fr.colors[1] || fr.colors[2] == fr.colors[0] || !fr.drawn[0] || fr.drawn[1] || !fr.drawn[2] {
		t.Errorf("colours %v, drawn %v", fr.colors, fr.drawn)
	}
	var svg strings.Builder
	if err := c.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	// The SVG keeps a polyline per curve (the page counts them), in the shared colour.
	if n := strings.Count(svg.String(), `<polyline class="curve"`); n != 3 ||
		!strings.Contains(svg.String(), ">guava and redisbloom (the same curve)</text>") {
		t.Errorf("SVG has %d curves, or lacks the shared legend entry:\n%s", n, svg.String())
	}
}
