package cli

import (
	pngpkg "image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
)

// svgCurves returns the data-name of each curve in an SVG file and the number of points of the
// first.
func svgCurves(t *testing.T, path string) ([]string, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	svg := string(b)
	if !strings.HasPrefix(svg, "<svg ") || !strings.HasSuffix(svg, "</svg>\n") {
		t.Fatalf("%s is not an SVG document:\n%.200s", path, svg)
	}
	var names []string
	points := 0
	for _, part := range strings.Split(svg, `<polyline class="curve" data-name="`)[1:] {
		names = append(names, part[:strings.IndexByte(part, '"')])
		if points == 0 {
			i := strings.Index(part, `points="`) + len(`points="`)
			points = len(strings.Fields(part[i : i+strings.IndexByte(part[i:], '"')]))
		}
	}
	return names, points
}

func TestCalcPlot(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "fpp.svg")
	printed := run(t, "", "calc", "-n", "1M", "-p", "1%", "--plot", out).ok(t)
	m, _, _ := bloom.GuavaSize(1e6, 0.01)
	if !strings.Contains(printed, group(m)) {
		t.Errorf("calc --plot no longer prints the sizing:\n%s", printed)
	}
	if want := "wrote " + out + ": SVG chart, 720×400 pixels: false-positive rate against items, 0 to 4M; curves: guava and redisbloom (the same curve), blocked; target 1%\n"; !strings.HasSuffix(printed, "\n"+want) {
		t.Errorf("calc --plot does not say what it wrote (%q):\n%s", want, printed)
	}
	names, points := svgCurves(t, out)
	if strings.Join(names, ",") != "guava,redisbloom,blocked" || points != 201 {
		t.Errorf("curves %v with %d points", names, points)
	}
	out2 := filepath.Join(dir, "given.svg")
	run(t, "", "calc", "-m", "16MiB", "-k", "7", "-n", "10M", "--plot", out2).ok(t)
	if names, _ := svgCurves(t, out2); len(names) != 1 || names[0] != "classic" {
		t.Errorf("calc -m -k -n --plot: curves %v", names)
	}
	png := filepath.Join(dir, "fpp.png")
	run(t, "", "calc", "-n", "1M", "-p", "1%", "--plot", png).ok(t)
	f, err := os.Open(png)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if cfg, err := pngpkg.DecodeConfig(f); err != nil || cfg.Width != 720 || cfg.Height != 400 {
		t.Errorf("calc --plot fpp.png: %+v, %v", cfg, err)
	}
	run(t, "", "calc", "-n", "1M", "-p", "1%", "--plot", filepath.Join(dir, "fpp.jpg")).fails(t, "SVG or PNG")
}

func TestInfoPlot(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.bloom")
	run(t, "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n", "build", "--type", "scalable", "-n", "4", "-o", file).ok(t)
	out := filepath.Join(dir, "s.svg")
	if printed := run(t, "", "info", file, "--plot", out).ok(t); !strings.Contains(printed, "fpp now:") ||
		!strings.Contains(printed, "\nwrote "+out+": SVG chart, 720×400 pixels: false-positive rate against items, 0 to ") ||
		!strings.Contains(printed, "; marked: now: 10 items, ") {
		t.Errorf("info --plot does not say what it wrote after the description:\n%s", printed)
	}
	// With --json, stdout stays one JSON object and the note goes to stderr.
	r := run(t, "", "info", "--json", file, "--plot", out)
	if r.ok(t); !strings.HasPrefix(r.stdout, "{") || !strings.HasPrefix(r.stderr, "wrote "+out) {
		t.Errorf("info --json --plot: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	names, points := svgCurves(t, out)
	if len(names) != 1 || points != 201 {
		t.Errorf("info --plot: curves %v, %d points", names, points)
	}
	b, _ := os.ReadFile(out)
	if !strings.Contains(string(b), `class="now"`) {
		t.Error("info --plot does not mark where the filter stands")
	}
	// A RedisBloom chain: its links' starts are drawn.
	rb := filepath.Join(dir, "rb.bf")
	run(t, "", "build", "--type", "scalable", "-n", "1000", "--format", "redisbloom", "-o", rb, testdata("items/nums.txt.gz")).ok(t)
	rbOut := filepath.Join(dir, "rb.svg")
	run(t, "", "info", rb, "--plot", rbOut).ok(t)
	if b, _ := os.ReadFile(rbOut); strings.Count(string(b), `class="start"`) < 4 {
		t.Errorf("info --plot of a 5-link chain draws %d link starts", strings.Count(string(b), `class="start"`))
	}
	g := filepath.Join(dir, "g.svg")
	run(t, "", "info", "--from", "guava", testdata("guava/longs.guava"), "--plot", g).ok(t)
	if names, _ := svgCurves(t, g); len(names) != 1 || names[0] != "classic" {
		t.Errorf("info --plot of a Guava file: curves %v", names)
	}
}
