package plot

import (
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// WritePNG draws the chart as a PNG of the SVG's size (720×400 pixels): the same axes, decade
// grid and ticks, sub-filter starts, target line, curves in the same colours, the points as
// black discs, and the same text (title, tick values, axis names, legend, labels) in the Go
// fonts (golang.org/x/image/font/gofont), so the picture stands on its own. It fails only if w
// does, or if the chart has no x range.
//
// The lines and discs are drawn by hand on image/draw: a chart needs only a round pen. Text is
// laid out by golang.org/x/image's OpenType rasterizer, which no hand-written code should try
// to match.
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
		line(img, left, yy, width-right, yy, 0.5, hex(targetColor), 6)
	}
	for i := range c.Curves {
		if !fr.drawn[i] {
			continue // it coincides with an earlier curve, which the legend names it with
		}
		col := hex(fr.colors[i])
		ys := fr.sampled[i]
		for j := 1; j < len(ys); j++ {
			x0, x1 := fr.x(c.MaxItems*float64(j-1)/samples), fr.x(c.MaxItems*float64(j)/samples)
			line(img, x0, fr.y(ys[j-1]), x1, fr.y(ys[j]), 1, col, 0)
		}
	}
	for _, p := range c.Points {
		disc(img, fr.x(p.Items), fr.y(p.FPP), 5, black)
	}
	for _, l := range fr.labels {
		x := l.x
		if l.swatch {
			line(img, l.x, l.y-4, l.x+swatchWidth, l.y-4, 1, hex(l.color), 0)
			x += swatchWidth + 6
		}
		drawText(img, x, l.y, l)
	}
	return png.Encode(w, img)
}

// goRegular is the Go font, parsed once.
var goRegular = sync.OnceValue(func() *opentype.Font {
	f, err := opentype.Parse(goregular.TTF)
	if err != nil {
		panic(err) // the font is compiled in; it always parses
	}
	return f
})

// faces holds a face per text size, made once.
var faces sync.Map // float64 -> font.Face

func face(size float64) font.Face {
	if f, ok := faces.Load(size); ok {
		return f.(font.Face)
	}
	// 72 dots per inch: a point is a pixel, as in SVG user units.
	f, err := opentype.NewFace(goRegular(), &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		panic(err) // only a size of 0 or less fails
	}
	f2, _ := faces.LoadOrStore(size, f)
	return f2.(font.Face)
}

// drawText draws l's text with its baseline's start, middle or end at (x, y), or, rotated,
// reading upwards with its baseline's anchor at (x, y).
func drawText(img *image.RGBA, x, y float64, l label) {
	fc := face(l.size)
	adv := font.MeasureString(fc, l.text)
	w := float64(adv) / 64
	shift := 0.0
	switch l.anchor {
	case "middle":
		shift = w / 2
	case "end":
		shift = w
	}
	src := image.NewUniform(hex(l.color))
	if !l.rotate {
		d := font.Drawer{Dst: img, Src: src, Face: fc, Dot: fixed.P(int(math.Round(x-shift)), int(math.Round(y)))}
		d.DrawString(l.text)
		return
	}
	// Rotated: draw the text level into a mask, turn the mask, and paint through it.
	m := fc.Metrics()
	ascent, descent := m.Ascent.Ceil(), m.Descent.Ceil()
	tw := adv.Ceil() + 1
	level := image.NewAlpha(image.Rect(0, 0, tw, ascent+descent))
	d := font.Drawer{Dst: level, Src: image.Opaque, Face: fc, Dot: fixed.P(0, ascent)}
	d.DrawString(l.text)
	// Turned 90° counter-clockwise: level's (px, py) goes to (py, tw-1-px).
	turned := image.NewAlpha(image.Rect(0, 0, ascent+descent, tw))
	for py := 0; py < ascent+descent; py++ {
		for px := 0; px < tw; px++ {
			turned.SetAlpha(py, tw-1-px, level.AlphaAt(px, py))
		}
	}
	// The baseline runs upwards at x; the text starts shift pixels below y.
	x0 := int(math.Round(x)) - ascent
	y0 := int(math.Round(y+shift)) - tw
	r := image.Rect(x0, y0, x0+ascent+descent, y0+tw)
	draw.DrawMask(img, r, src, image.Point{}, turned, image.Point{}, draw.Over)
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
