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
