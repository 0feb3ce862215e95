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
