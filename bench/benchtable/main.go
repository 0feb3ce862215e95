// Command benchtable turns benchstat's CSV output into the Markdown tables of BENCHMARKS.md, and
// splices generated text into the marked regions of that file. bench/run.sh drives it; a user
// rarely runs it by hand.
//
//	go tool benchstat -format csv -table /n -row /impl -col /op results/library-1e6-1e7.txt |
//		go run ./benchtable table -units bits/key,fpp%,sec/op -base bitsandblooms
//	go run ./benchtable splice -doc ../BENCHMARKS.md -region library < generated.md
//
// table reads every block of the CSV (one per benchstat table and unit) and prints one Markdown
// table: a row per (table, row) pair, a column per unit in -units order; a unit measured in
// several columns of the input (sec/op per operation) gets one column per input column, each cell
// the median and benchstat's 95% confidence interval. A figure that every column of a row reports
// alike (bits per key, measured FPP) is one column, without an interval. -base adds a column with
// the base row's median divided by this row's, per time column (above 1: faster than the base).
//
// splice replaces the lines between "<!-- bench:NAME -->" and "<!-- /bench:NAME -->" in -doc
// with standard input, and fails when the markers are missing, so a renamed region is noticed.
// benchstat itself is a tool of this module (go tool benchstat); hand-written here is only the
// Markdown, which benchstat does not print.
package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtable table|splice [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "table":
		err = tableCmd(os.Args[2:], os.Stdin, os.Stdout)
	case "splice":
		err = spliceCmd(os.Args[2:], os.Stdin)
	default:
		err = fmt.Errorf("unknown subcommand %q (want table or splice)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// cell is one median with its confidence interval, as benchstat printed them.
type cell struct {
	median float64
	ci     string
}

// stats holds the parsed CSV: values by table, unit, row and column, with the order in which
// tables, rows and each unit's columns first appeared.
type stats struct {
	tables []string
	rows   map[string][]string // table -> rows in order
	cols   map[string][]string // unit -> columns in order
	vals   map[[4]string]cell  // table, unit, row, col
}

func parse(r io.Reader) (*stats, error) {
	s := &stats{rows: map[string][]string{}, cols: map[string][]string{}, vals: map[[4]string]cell{}}
	seenRow := map[[2]string]bool{}
	seenCol := map[[2]string]bool{}
	table := ""
	var block [][]string
	flush := func() error {
		defer func() { block = nil }()
		if len(block) == 0 {
			return nil
		}
		if len(block) < 2 {
			return fmt.Errorf("a block of %d lines: want two header lines and rows", len(block))
		}
		if !seenRow[[2]string{table, ""}] {
			seenRow[[2]string{table, ""}] = true
			s.tables = append(s.tables, table)
		}
		names, units := block[0], block[1]
		for _, rec := range block[2:] {
			row := rec[0]
			if row == "geomean" {
				continue
			}
			colName := ""
			for i := 1; i < len(rec) && i < len(units); i++ {
				if i < len(names) && names[i] != "" {
					colName = names[i]
				}
				unit := units[i]
				if unit == "CI" || unit == "vs base" || unit == "P" || unit == "" || rec[i] == "" {
					continue
				}
				v, err := strconv.ParseFloat(rec[i], 64)
				if err != nil {
					return fmt.Errorf("row %q, column %q: %v", row, colName, err)
				}
				ci := ""
				if i+1 < len(units) && units[i+1] == "CI" && i+1 < len(rec) {
					ci = rec[i+1]
				}
				s.vals[[4]string{table, unit, row, colName}] = cell{v, ci}
				if !seenRow[[2]string{table, row}] {
					seenRow[[2]string{table, row}] = true
					s.rows[table] = append(s.rows[table], row)
				}
				if !seenCol[[2]string{unit, colName}] {
					seenCol[[2]string{unit, colName}] = true
					s.cols[unit] = append(s.cols[unit], colName)
				}
			}
		}
		return nil
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		if !strings.Contains(line, ",") { // a table's title: "/n: 1e6", or configuration lines
			if err := flush(); err != nil {
				return nil, err
			}
			table = ""
			if strings.HasPrefix(line, "/") || strings.HasPrefix(line, ".") {
				_, t, _ := strings.Cut(line, ":")
				table = strings.TrimSpace(t)
			}
			continue
		}
		rec, err := csv.NewReader(strings.NewReader(line)).Read()
		if err != nil {
			return nil, err
		}
		block = append(block, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(s.vals) == 0 {
		return nil, errors.New("no benchmark results in the input")
	}
	return s, nil
}

// format prints v in unit's terms: times with three significant digits in ns, µs or ms, rates
// with three, other figures with four.
func format(v float64, unit string) string {
	switch {
	case isTime(unit):
		switch {
		case v >= 1e-3:
			return sig(v*1e3, 3) + " ms"
		case v >= 1e-6:
			return sig(v*1e6, 3) + " µs"
		default:
			return sig(v*1e9, 3) + " ns"
		}
	case unit == "fpp%":
		return sig(v, 3) + "%"
	}
	return sig(v, 4)
}

// sig formats v with n significant digits, never in exponent form.
func sig(v float64, n int) string {
	if v == 0 {
		return "0"
	}
	d := n - int(math.Floor(math.Log10(math.Abs(v)))) - 1
	if d < 0 {
		d = 0
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

func isTime(unit string) bool { return strings.Contains(unit, "sec/") }

func tableCmd(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	units := fs.String("units", "sec/op", "comma-separated units, in column order")
	base := fs.String("base", "", "a row name: add its time divided by each row's time")
	tableHead := fs.String("table-head", "n", "header of the first column when there are several tables")
	rowHead := fs.String("row-head", "", "header of the row column")
	rename := fs.String("rename", "", "comma-separated old=new pairs for row and column names")
	if err := fs.Parse(args); err != nil {
		return err
	}
	names := map[string]string{}
	for _, kv := range strings.Split(*rename, ",") {
		if old, nw, ok := strings.Cut(kv, "="); ok {
			names[old] = nw
		}
	}
	name := func(s string) string {
		if n, ok := names[s]; ok {
			return n
		}
		return s
	}
	s, err := parse(in)
	if err != nil {
		return err
	}
	type column struct {
		unit, col, head string
		collapsed       bool // one value per row, whichever input column reports it
	}
	var cols []column
	for _, u := range strings.Split(*units, ",") {
		cs := s.cols[u]
		if len(cs) == 0 {
			return fmt.Errorf("unit %q is not in the input", u)
		}
		if !isTime(u) && (len(cs) == 1 || sameInEveryColumn(s, u)) {
			cols = append(cols, column{u, cs[0], name(u), true})
			continue
		}
		for _, c := range cs {
			head := name(c)
			if !isTime(u) || len(strings.Split(*units, ",")) > 1 && countTime(*units) > 1 {
				head += " " + u
			}
			cols = append(cols, column{u, c, head, false})
		}
	}
	// The ratio column covers the time columns in which the base row has a value somewhere.
	var ratioCols []column
	if *base != "" {
		for _, c := range cols {
			if !isTime(c.unit) {
				continue
			}
			for _, t := range s.tables {
				if _, ok := s.vals[[4]string{t, c.unit, *base, c.col}]; ok {
					ratioCols = append(ratioCols, c)
					break
				}
			}
		}
	}
	var b bytes.Buffer
	several := len(s.tables) > 1 || s.tables[0] != ""
	var head []string
	if several {
		head = append(head, *tableHead)
	}
	head = append(head, *rowHead)
	for _, c := range cols {
		head = append(head, c.head)
	}
	if len(ratioCols) > 0 {
		var hs []string
		for _, c := range ratioCols {
			hs = append(hs, name(c.col))
		}
		head = append(head, fmt.Sprintf("× %s (%s)", name(*base), strings.Join(hs, " / ")))
	}
	fmt.Fprintf(&b, "| %s |\n", strings.Join(head, " | "))
	fmt.Fprintf(&b, "|%s\n", strings.Repeat("---|", len(head)))
	for _, t := range s.tables {
		for _, r := range s.rows[t] {
			var line []string
			if several {
				line = append(line, t)
			}
			line = append(line, name(r))
			for _, c := range cols {
				v, ok := s.vals[[4]string{t, c.unit, r, c.col}]
				if !ok && c.collapsed {
					v, ok = firstValue(s, t, c.unit, r)
				}
				switch {
				case !ok:
					line = append(line, "")
				case v.ci == "" || v.ci == "0%" || c.collapsed:
					line = append(line, format(v.median, c.unit))
				default:
					line = append(line, format(v.median, c.unit)+" ±"+v.ci)
				}
			}
			if len(ratioCols) > 0 {
				var rs []string
				for _, c := range ratioCols {
					bv, ok1 := s.vals[[4]string{t, c.unit, *base, c.col}]
					v, ok2 := s.vals[[4]string{t, c.unit, r, c.col}]
					if ok1 && ok2 && v.median > 0 {
						rs = append(rs, fmt.Sprintf("%.2f", bv.median/v.median))
					} else {
						rs = append(rs, "–")
					}
				}
				line = append(line, strings.Join(rs, " / "))
			}
			fmt.Fprintf(&b, "| %s |\n", strings.Join(line, " | "))
		}
	}
	_, err = out.Write(b.Bytes())
	return err
}

// sameInEveryColumn reports whether unit has, in every row, one value whichever column reports
// it (bits per key reported by every operation of one filter, say).
func sameInEveryColumn(s *stats, unit string) bool {
	for _, t := range s.tables {
		for _, r := range s.rows[t] {
			first, seen := 0.0, false
			for _, c := range s.cols[unit] {
				v, ok := s.vals[[4]string{t, unit, r, c}]
				if !ok {
					continue
				}
				if seen && v.median != first {
					return false
				}
				first, seen = v.median, true
			}
		}
	}
	return true
}

// firstValue returns unit's value in row r of table t from whichever column has it.
func firstValue(s *stats, t, unit, r string) (cell, bool) {
	for _, c := range s.cols[unit] {
		if v, ok := s.vals[[4]string{t, unit, r, c}]; ok {
			return v, true
		}
	}
	return cell{}, false
}

func countTime(units string) int {
	n := 0
	for _, u := range strings.Split(units, ",") {
		if isTime(u) {
			n++
		}
	}
	return n
}

func spliceCmd(args []string, in io.Reader) error {
	fs := flag.NewFlagSet("splice", flag.ContinueOnError)
	doc := fs.String("doc", "", "the Markdown file to change")
	region := fs.String("region", "", "the region's name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *doc == "" || *region == "" {
		return errors.New("splice needs -doc and -region")
	}
	body, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	text, err := os.ReadFile(*doc)
	if err != nil {
		return err
	}
	out, err := splice(text, *region, body)
	if err != nil {
		return fmt.Errorf("%s: %w", *doc, err)
	}
	return os.WriteFile(*doc, out, 0o644)
}

// splice returns doc with the lines between region's markers replaced by body.
func splice(doc []byte, region string, body []byte) ([]byte, error) {
	open := []byte("<!-- bench:" + region + " -->\n")
	closing := []byte("<!-- /bench:" + region + " -->")
	i := bytes.Index(doc, open)
	if i < 0 {
		return nil, fmt.Errorf("no line %q", strings.TrimSpace(string(open)))
	}
	j := bytes.Index(doc[i:], closing)
	if j < 0 {
		return nil, fmt.Errorf("no line %q after the region's start", closing)
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(open)])
	out.Write(body)
	if len(body) > 0 && body[len(body)-1] != '\n' {
		out.WriteByte('\n')
	}
	out.Write(doc[i+j:])
	return out.Bytes(), nil
}
