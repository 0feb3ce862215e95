package plot

import (
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
)

// WritePNG draws the chart as a PNG of the SVG's size (720×400 pixels): the same axes, decade
// grid and x ticks, sub-filter starts, target line, curves in the same colours and the points
// as black discs. It has no text; the SVG carries the labels. It fails only if w does, or if the
// chart has no x range.
//
// The rasterizer is hand-written on image/draw: a chart of lines and discs needs only a round
// pen, and the module's dependencies have no drawing or font library (text would need one).
func (c *Chart) WritePNG(w io.Writer) error {
	fr, err := c.frame()
	if err != nil {
		return err
	}
	img := image.NewRGBA(image.Rect(0, 0, int(width), int(height)))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	grid := color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	for d := 0.0; d >= fr.lo; d-- {
		yy := fr.y(math.Pow(10, d))
		line(img, left, yy, width-right, yy, 0.5, grid, 0)
	}
	for i := 0; i <= 5; i++ {
		xx := fr.x(c.MaxItems * float64(i) / 5)
		line(img, xx, top, xx, height-bottom, 0.5, grid, 0)
	}
	black := color.RGBA{0, 0, 0, 0xff}
	line(img, left, top, left, height-bottom, 0.5, black, 0)
	line(img, left, height-bottom, width-right, height-bottom, 0.5, black, 0)
	for _, s := range c.Starts {
		xx := fr.x(s)
		line(img, xx, top, xx, height-bottom, 0.5, color.RGBA{0x99, 0x99, 0x99, 0xff}, 4)
	}
	if c.Target > 0 {
		yy := fr.y(c.Target)
		line(img, left, yy, width-right, yy, 0.5, hex(palette[2]), 6)
	}
	for i := range c.Curves {
		col := hex(palette[i%len(palette)])
		ys := fr.sampled[i]
		for j := 1; j < len(ys); j++ {
			x0, x1 := fr.x(c.MaxItems*float64(j-1)/samples), fr.x(c.MaxItems*float64(j)/samples)
			line(img, x0, fr.y(ys[j-1]), x1, fr.y(ys[j]), 1, col, 0)
		}
	}
	for _, p := range c.Points {
		disc(img, fr.x(p.Items), fr.y(p.FPP), 5, black)
	}
	return png.Encode(w, img)
}

// line strokes the segment from (x0, y0) to (x1, y1) with a round pen of radius r; dash > 0
// draws dash units on, dash units off.
func line(img *image.RGBA, x0, y0, x1, y1, r float64, c color.RGBA, dash float64) {
	length := math.Hypot(x1-x0, y1-y0)
	steps := max(1, int(math.Ceil(length*2)))
	for s := 0; s <= steps; s++ {
		t := float64(s) / float64(steps)
		if dash > 0 && int(t*length/dash)%2 == 1 {
			continue
		}
		disc(img, x0+(x1-x0)*t, y0+(y1-y0)*t, r, c)
	}
}

// disc fills the pixels whose centres lie within r of (cx, cy), and at least the pixel that
// holds (cx, cy).
func disc(img *image.RGBA, cx, cy, r float64, c color.RGBA) {
	if math.IsNaN(cx) || math.IsNaN(cy) {
		return
	}
	img.SetRGBA(int(math.Floor(cx)), int(math.Floor(cy)), c)
	for py := int(math.Floor(cy - r)); py <= int(math.Ceil(cy+r)); py++ {
		for px := int(math.Floor(cx - r)); px <= int(math.Ceil(cx+r)); px++ {
			dx, dy := float64(px)+0.5-cx, float64(py)+0.5-cy
			if dx*dx+dy*dy <= r*r {
				img.SetRGBA(px, py, c) // SetRGBA ignores pixels outside the image
			}
		}
	}
}

// hex parses a palette colour, "#rrggbb".
func hex(s string) color.RGBA {
	v := func(i int) uint8 {
		var n uint8
		for _, ch := range s[i : i+2] {
			switch {
			case ch >= '0' && ch <= '9':
				n = n*16 + uint8(ch-'0')
			case ch >= 'a' && ch <= 'f':
				n = n*16 + uint8(ch-'a'+10)
			}
		}
		return n
	}
	return color.RGBA{v(1), v(3), v(5), 0xff}
}
