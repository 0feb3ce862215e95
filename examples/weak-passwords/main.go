// Command weak-passwords builds a Bloom filter of weak passwords from a real word list (Debian's
// wamerican, /usr/share/dict/american-english) and the variants people make of each word
// (capitalised, upper case, a digit or "123" or "!" appended, letters swapped for look-alike
// symbols), and checks candidate passwords against it as a sign-up form would. It compares the
// filter with the same list held in a Go map: memory, time per check, and the filter's measured
// false-positive rate (strong passwords it would wrongly refuse).
//
//	go run ./examples/weak-passwords
//	go run ./examples/weak-passwords -p 0.0001 Tr0ub4dor correcthorse 'xK#9vq!2mZ'
//
// The arguments, if any, are checked as candidate passwords.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bloomd/bloom"
)

func main() {
	if _, err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h or -help: the flag package has printed the usage; asking is no error
		}
		log.Fatal(err)
	}
}

// result is what a run measured.
type result struct {
	words, entries int     // words read, distinct weak passwords made from them
	filterBytes    int64   // the filter's bit array
	mapBytes       uint64  // heap held by the map and its strings
	probes, fp     int     // random strong passwords checked, and wrongly refused
	fpp            float64 // the rate the filter was sized for
}

func run(args []string, out io.Writer) (result, error) {
	fs := flag.NewFlagSet("weak-passwords", flag.ContinueOnError)
	path := fs.String("words", "/usr/share/dict/american-english", "word list, one word a line (Debian: apt-get install wamerican)")
	p := fs.Float64("p", 0.001, "false-positive rate of the filter")
	limit := fs.Int("limit", 0, "read at most this many words (0: all)")
	probes := fs.Int("probes", 1_000_000, "random strong passwords to measure the false-positive rate with")
	if err := fs.Parse(args); err != nil {
		return result{}, err
	}
	if !(*p > 0 && *p < 1) || *limit < 0 || *probes < 0 {
		return result{}, errors.New("weak-passwords: need 0 < -p < 1, -limit >= 0, -probes >= 0")
	}
	words, err := readWords(*path, *limit)
	if err != nil {
		return result{}, err
	}
	if len(words) == 0 {
		return result{}, fmt.Errorf("weak-passwords: no words in %s", *path)
	}

	// The exact set, in a map: the baseline, and the count the filter is sized for.
	runtime.GC()
	before := heapAlloc()
	weak := make(map[string]struct{})
	for _, w := range words {
		for _, v := range variants(w) {
			weak[v] = struct{}{}
		}
	}
	runtime.GC()
	r := result{words: len(words), entries: len(weak), fpp: *p, mapBytes: heapAlloc() - before}

	f, err := bloom.New(uint64(len(weak)), *p)
	if err != nil {
		return r, err
	}
	for w := range weak {
		f.AddString(w)
	}
	r.filterBytes = f.ByteLen()
	fmt.Fprintf(out, "%d words from %s, %d weak passwords with their variants\n", len(words), *path, len(weak))
	fmt.Fprintf(out, "%-6s %12s %10s\n", "", "memory", "bytes/entry")
	fmt.Fprintf(out, "%-6s %12s %10.2f   (p=%g, k=%d)\n", "filter", bloom.FormatBytes(uint64(r.filterBytes)), float64(r.filterBytes)/float64(len(weak)), *p, f.K())
	fmt.Fprintf(out, "%-6s %12s %10.2f   (keys and their strings)\n", "map", bloom.FormatBytes(r.mapBytes), float64(r.mapBytes)/float64(len(weak)))

	// Strong passwords: random, 10 to 14 characters of a 70-character alphabet; the few that
	// happen to be weak are skipped, so every hit of the filter is a false positive.
	rng := rand.New(rand.NewPCG(1, 2)) // fixed seed
	strong := make([]string, 0, *probes)
	for len(strong) < *probes {
		s := randomPassword(rng)
		if _, ok := weak[s]; !ok {
			strong = append(strong, s)
		}
	}
	start := time.Now()
	for _, s := range strong {
		if f.TestString(s) {
			r.fp++
		}
	}
	filterTime := time.Since(start)
	start = time.Now()
	hits := 0
	for _, s := range strong {
		if _, ok := weak[s]; ok {
			hits++
		}
	}
	mapTime := time.Since(start)
	r.probes = len(strong)
	if r.probes > 0 {
		fmt.Fprintf(out, "false positives: %d of %d strong passwords refused (%.4f%%; sized for %.4f%%)\n",
			r.fp, r.probes, 100*float64(r.fp)/float64(r.probes), 100**p)
		fmt.Fprintf(out, "time per check: filter %.0f ns, map %.0f ns\n",
			float64(filterTime.Nanoseconds())/float64(r.probes), float64(mapTime.Nanoseconds())/float64(r.probes))
	}

	candidates := fs.Args()
	if len(candidates) == 0 {
		candidates = []string{"Sunshine1", "dr@g0n", "PASSWORD", "Tr0ub4dor&3", "correct horse battery staple", "xK#9vq!2mZ"}
	}
	for _, c := range candidates {
		verdict := "accepted"
		if f.TestString(c) {
			verdict = "refused: a dictionary word or a variant of one"
		}
		fmt.Fprintf(out, "  sign-up with %-30q %s\n", c, verdict)
	}
	return r, nil
}

// readWords reads one word a line, skipping empty lines.
func readWords(path string, limit int) ([]string, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("weak-passwords: %w (on Debian: apt-get install wamerican)", err)
	}
	defer file.Close()
	var words []string
	sc := bufio.NewScanner(file)
	for sc.Scan() && (limit == 0 || len(words) < limit) {
		if w := strings.TrimSpace(sc.Text()); w != "" {
			words = append(words, w)
		}
	}
	return words, sc.Err()
}

// leet swaps letters for the look-alike symbols people use to make a word "strong".
var leet = strings.NewReplacer("a", "@", "e", "3", "i", "1", "o", "0", "s", "$", "t", "7")

// variants returns w and the common variants of it.
func variants(w string) []string {
	lower := strings.ToLower(w)
	title := lower
	if r, n := utf8.DecodeRuneInString(lower); r != utf8.RuneError {
		title = string(unicode.ToUpper(r)) + lower[n:]
	}
	v := []string{w, lower, title, strings.ToUpper(w), leet.Replace(lower)}
	for _, base := range []string{lower, title} {
		for _, suffix := range []string{"1", "12", "123", "!", "2024", "2025", "2026"} {
			v = append(v, base+suffix)
		}
	}
	return v
}

const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&*+-=?@"

func randomPassword(rng *rand.Rand) string {
	b := make([]byte, 10+rng.IntN(5))
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
