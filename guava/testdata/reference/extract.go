//go:build ignore

// extract turns Guava golden vectors (a directory of <case>.bin and <case>.json files, written by
// a Java program with Guava 31.1: the writeTo bytes, and the parameters, answers and per-key hash
// details) into the compact fixtures the tests read: it copies each .bin here, writes the JSON's expectations as <case>.txt in the format of
// ../README.md, and writes the per-key hash details to the root package's
// testdata/guava/positions.tsv. Run from this directory:
//
//	go run extract.go DIR
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

type vector struct {
	Case               string `json:"case"`
	Description        string `json:"description"`
	GuavaVersion       string `json:"guava_version"`
	Funnel             string `json:"funnel"`
	StrategyOrdinal    int    `json:"strategy_ordinal"`
	ExpectedInsertions int64  `json:"expected_insertions"`
	FPP                struct {
		Value   float64 `json:"value"`
		BitsHex string  `json:"bits_hex"`
	} `json:"fpp"`
	BitSize       uint64 `json:"bit_size"`
	DataLength    int    `json:"data_length_longs"`
	K             int    `json:"num_hash_functions"`
	InsertedCount int    `json:"inserted_count"`
	PutFalse      []int  `json:"put_returned_false_at_insert_positions"`
	BitCount      uint64 `json:"bit_count"`
	ApproxCount   int64  `json:"approximate_element_count"`
	ExpectedFPP   struct {
		BitsHex    string `json:"bits_hex"`
		JavaString string `json:"java_string"`
	} `json:"expected_fpp"`
	Details []struct {
		Kind    string   `json:"kind"`
		Item    any      `json:"item"`
		Funnel  string   `json:"funnel_bytes_hex"`
		H1      int64    `json:"h1_lower8_le"`
		H2      int64    `json:"h2_upper8_le"`
		Indexes []uint64 `json:"indexes"`
	} `json:"details"`
	Probes [][2]any `json:"probes_item_mightContain"`
}

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: go run extract.go DIR")
	}
	files, err := filepath.Glob(filepath.Join(os.Args[1], "*.json"))
	if err != nil || len(files) == 0 {
		log.Fatalf("no vectors in %s", os.Args[1])
	}
	positions := []string{
		"# Per-key hash details of the Guava 31.1 golden vectors: the funnel bytes, murmur3_128's h1 and h2",
		"# and the k bit indexes in probe order, for a filter of modulus m. Made by guava/testdata/reference/extract.go.",
		"#case\tscheme\tm\tk\tkey_hex\th1\th2\tindexes",
	}
	for _, file := range files {
		var v vector
		data, err := os.ReadFile(file)
		if err != nil {
			log.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber() // items are Java longs; float64 would round them
		if err := dec.Decode(&v); err != nil {
			log.Fatalf("%s: %v", file, err)
		}
		bin, err := os.ReadFile(strings.TrimSuffix(file, ".json") + ".bin")
		if err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(v.Case+".bin", bin, 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(v.Case+".txt", []byte(fixture(&v)), 0o644); err != nil {
			log.Fatal(err)
		}
		scheme := map[int]string{0: "guava32", 1: "guava64"}[v.StrategyOrdinal]
		for _, d := range v.Details {
			idx := make([]string, len(d.Indexes))
			for i, x := range d.Indexes {
				idx[i] = strconv.FormatUint(x, 10)
			}
			positions = append(positions, fmt.Sprintf("%s\t%s\t%d\t%d\t%s\t%016x\t%016x\t%s",
				v.Case, scheme, v.BitSize, v.K, d.Funnel, uint64(d.H1), uint64(d.H2), strings.Join(idx, ",")))
		}
	}
	out := filepath.Join("..", "..", "..", "testdata", "guava", "positions.tsv")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(out, []byte(strings.Join(positions, "\n")+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
}

// item is one item of a vector: a string, or an integer for the numeric funnels.
type item struct {
	s      string
	n      int64
	isText bool
}

func parseItem(x any) item {
	switch x := x.(type) {
	case string:
		return item{s: x, isText: true}
	case float64:
		log.Fatalf("item %v was decoded as a float", x)
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			log.Fatal(err)
		}
		return item{n: n}
	}
	log.Fatalf("item %v of type %T", x, x)
	return item{}
}

// split returns the prefix and the trailing canonical decimal number of a string item, so that
// runs like "item-1000", "item-1001", ... become one range line; ok is false if there is none.
func (it item) split() (prefix string, n int64, ok bool) {
	if !it.isText {
		return "", it.n, true
	}
	i := len(it.s)
	for i > 0 && it.s[i-1] >= '0' && it.s[i-1] <= '9' {
		i--
	}
	digits := it.s[i:]
	if digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return "", 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return it.s[:i], n, err == nil
}

func (it item) literal() string {
	if it.isText {
		return strconv.Quote(it.s)
	}
	return strconv.FormatInt(it.n, 10)
}

func fixture(v *vector) string {
	var b strings.Builder
	funnel := map[string]string{
		"Funnels.stringFunnel(UTF_8)": "string", "Funnels.longFunnel()": "long", "Funnels.integerFunnel()": "int",
	}[v.Funnel]
	if funnel == "" {
		log.Fatalf("%s: funnel %s", v.Case, v.Funnel)
	}
	fmt.Fprintf(&b, "# %s: %s. Guava %s golden vector, extracted from its JSON by reference/extract.go.\n",
		v.Case, v.Description, v.GuavaVersion)
	fmt.Fprintf(&b, "funnel\t%s\nstrategy\t%d\nexpected_insertions\t%d\nfpp\t%s\t%v\n",
		funnel, v.StrategyOrdinal, v.ExpectedInsertions, v.FPP.BitsHex, v.FPP.Value)
	fmt.Fprintf(&b, "num_hash_functions\t%d\ndata_length\t%d\n", v.K, v.DataLength)

	items := make([]item, len(v.Probes))
	answers := make([]bool, len(v.Probes))
	for i, p := range v.Probes {
		items[i] = parseItem(p[0])
		answers[i] = p[1].(bool)
	}
	// The inserted items are either all in the details, or (in the larger vectors) the first
	// probes, in insertion order; the details then list the first of them.
	var inserted []item
	for _, d := range v.Details {
		if d.Kind == "inserted" {
			inserted = append(inserted, parseItem(d.Item))
		}
	}
	probesFrom := 0
	if len(inserted) < v.InsertedCount {
		for i, it := range inserted {
			if it != items[i] {
				log.Fatalf("%s: inserted item %d is %v in the details, %v in the probes", v.Case, i, it, items[i])
			}
		}
		inserted, probesFrom = items[:v.InsertedCount], v.InsertedCount
	}
	putResults := make([]bool, v.InsertedCount)
	for i := range putResults {
		putResults[i] = true
	}
	for _, i := range v.PutFalse {
		putResults[i] = false
	}
	prefix := ""
	emit(&b, "put", inserted, putResults, false, &prefix)
	emit(&b, "probe", items[:probesFrom], answers[:probesFrom], true, &prefix)
	emit(&b, "probe", items[probesFrom:], answers[probesFrom:], true, &prefix)
	fmt.Fprintf(&b, "bit_count\t%d\napproximate_element_count\t%d\nexpected_fpp\t%s\t%s\n",
		v.BitCount, v.ApproxCount, v.ExpectedFPP.BitsHex, v.ExpectedFPP.JavaString)
	return b.String()
}

// emit writes items with their answers as range lines ("puts"/"probes": from, to, step and the
// values whose answer is listed, "-" for none, "*" for all) where at least three follow one
// another, and as single lines ("put"/"probe" with the literal and its answer) otherwise.
func emit(b *strings.Builder, op string, items []item, answers []bool, listed bool, prefix *string) {
	for i := 0; i < len(items); {
		p, first, ok := items[i].split()
		j := i + 1
		var step int64
		if ok && j < len(items) {
			if p2, second, ok2 := items[j].split(); ok2 && p2 == p && second != first {
				step = second - first
				for j < len(items) {
					pj, nj, okj := items[j].split()
					if !okj || pj != p || nj-first != int64(j-i)*step {
						break
					}
					j++
				}
			}
		}
		if j-i < 3 {
			fmt.Fprintf(b, "%s\t%s\t%v\n", op, items[i].literal(), answers[i])
			i++
			continue
		}
		if items[i].isText && p != *prefix {
			fmt.Fprintf(b, "prefix\t%s\n", strconv.Quote(p))
			*prefix = p
		}
		var set []string
		for x := i; x < j; x++ {
			if answers[x] == listed {
				_, n, _ := items[x].split()
				set = append(set, strconv.FormatInt(n, 10))
			}
		}
		list := strings.Join(set, ",")
		switch len(set) {
		case 0:
			list = "-"
		case j - i:
			list = "*"
		}
		_, last, _ := items[j-1].split()
		fmt.Fprintf(b, "%ss\t%d\t%d\t%d\t%s\n", op, first, last, step, list)
		i = j
	}
}
