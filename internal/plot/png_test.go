package plot

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"testing"
)

func TestWritePNG(t *testing.T) {
	// A classic filter of m bits and k hashes: rate (1-e^(-kn/m))^k.
	const m, k = 9586.0, 7.0
	fpp := func(n float64) float64 { return math.Pow(1-math.Exp(-k*n/m), k) }
	c := Chart{MaxItems: 4000, Curves: []Curve{{Name: "classic", FPP: fpp}}}
	var b bytes.Buffer
	if err := c.WritePNG(&b); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds(); got != image.Rect(0, 0, int(width), int(height)) {
		t.Fatalf("size %v, want %gx%g", got, width, height)
	}
	curve := hex(palette[0])
	same := func(x, y int, want color.RGBA) bool {
		r, g, bb, a := img.At(x, y).RGBA()
		return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bb >> 8), uint8(a >> 8)} == want
	}
	// The axis's lowest decade, as the chart picks it: a decade below the least rate drawn.
	lo := math.Floor(math.Log10(fpp(4000*10/samples))) - 1
	for _, n := range []float64{400, 1000, 1500, 2000, 2500, 3000, 4000} {
		px := left + (width-left-right)*n/4000
		py := top + (height-top-bottom)*(-math.Log10(fpp(n)))/(-lo)
		if !same(int(px), int(py), curve) {
			t.Errorf("n=%v: pixel (%d,%d) is not the curve's colour", n, int(px), int(py))
		}
		// Well above the curve, in the plot area, the curve is not.
		if py-30 > top && same(int(px)+1, int(py)-30, curve) {
			t.Errorf("n=%v: curve colour 30 pixels above the curve", n)
		}
	}

	// A marker is a black disc centred where its point is.
	c.Points = []Point{{Items: 2000, FPP: fpp(2000)}}
	b.Reset()
	if err := c.WritePNG(&b); err != nil {
		t.Fatal(err)
	}
	if img, err = png.Decode(&b); err != nil {
		t.Fatal(err)
	}
	px := left + (width-left-right)*0.5
	py := top + (height-top-bottom)*(-math.Log10(fpp(2000)))/(-lo)
	for _, d := range [][2]int{{0, 0}, {3, 0}, {-3, 0}, {0, 3}, {0, -3}} {
		if !same(int(px)+d[0], int(py)+d[1], color.RGBA{0, 0, 0, 0xff}) {
			t.Errorf("marker pixel %v from the point is not black", d)
		}
	}
	if err := (&Chart{}).WritePNG(&b); err == nil {
		t.Error("a chart with no x range drew")
	}
}

// inked counts the pixels of img in r that are not white.
func inked(img image.Image, r image.Rectangle) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if cr, cg, cb, _ := img.At(x, y).RGBA(); cr != 0xffff || cg != 0xffff || cb != 0xffff {
				n++
			}
		}
	}
	return n
}

// TestWritePNGText: the PNG carries its own text: the title, the y axis's decades and name, the
// x ticks, the target's label and the legend, each where the SVG puts it, in the text's colour.
func TestWritePNGText(t *testing.T) {
	fpp := func(n float64) float64 { return math.Pow(1-math.Exp(-7*n/9586), 7) }
	draw := func(c Chart) image.Image {
		t.Helper()
		var b bytes.Buffer
		if err := c.WritePNG(&b); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&b)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	bare := draw(Chart{MaxItems: 4000, Curves: []Curve{{Name: "", FPP: fpp}}})
	fullChart := Chart{Title: "1000 items at 1%", MaxItems: 4000, Target: 0.01, Curves: []Curve{{Name: "classic", FPP: fpp}}}
	full := draw(fullChart)
	fr, err := fullChart.frame()
	if err != nil {
		t.Fatal(err)
	}
	ty := int(fr.y(0.01)) // the target line; its label sits just above it
	for _, area := range []struct {
		what string
		r    image.Rectangle
	}{
		{"title", image.Rect(int(left), 6, int(left)+120, 24)},
		{"legend", image.Rect(int(left)+30, int(top)+2, int(left)+90, int(top)+18)},
		{"target label", image.Rect(int(width-right)-70, ty-16, int(width-right), ty-2)},
	} {
		if got, was := inked(full, area.r), inked(bare, area.r); got < was+20 {
			t.Errorf("%s: %d inked pixels, %d without it: no text drawn", area.what, got, was)
		}
	}
	// Text that every chart has: decade labels left of the axis, tick values below it, the axis
	// names.
	for _, area := range []struct {
		what string
		r    image.Rectangle
	}{
		{"y decades", image.Rect(int(left)-40, int(top), int(left)-4, int(height-bottom))},
		{"y axis name", image.Rect(4, int(top), 20, int(height-bottom))},
		{"x ticks and name", image.Rect(int(left), int(height-bottom)+4, int(width-right), int(height))},
	} {
		if n := inked(bare, area.r); n < 50 {
			t.Errorf("%s: %d inked pixels; no text", area.what, n)
		}
	}
	// The legend's text is in the curve's colour.
	curve := hex(palette[0])
	found := false
	r := image.Rect(int(left)+30, int(top)+2, int(left)+90, int(top)+18)
	for y := r.Min.Y; y < r.Max.Y && !found; y++ {
		for x := r.Min.X; x < r.Max.X && !found; x++ {
			cr, cg, cb, _ := full.At(x, y).RGBA()
			found = color.RGBA{uint8(cr >> 8), uint8(cg >> 8), uint8(cb >> 8), 0xff} == curve
		}
	}
	if !found {
		t.Error("the legend's text is not in the curve's colour")
	}
}
