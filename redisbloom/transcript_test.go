package redisbloom

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The transcript tests replay RedisBloom 2.6.28's recorded sessions (testdata/README.md) against
// Chain through the smallest BF.* interpreter that can run them, and compare every reply line.
// The interpreter is not the server: it parses only well-formed commands and knows only the
// replies these sessions contain. What it proves is that Chain gives the numbers, counts,
// sub-filters, dumps and errors from which RedisBloom's replies are made.

func TestTranscriptScaling(t *testing.T)  { replay(t, "testdata/transcript-scaling.txt") }
func TestTranscriptScandump(t *testing.T) { replay(t, "testdata/transcript-scandump.txt") }

type block struct {
	line  int      // line of the command in the file
	args  []string // expanded arguments
	multi bool     // ">>": one command per item of the last argument range
	reply []string // expected reply lines, @file references expanded
}

func replay(t *testing.T, path string) {
	blocks := parseTranscript(t, path)
	in := interp{keys: map[string]*Chain{}}
	n := 0
	for _, b := range blocks {
		var got []string
		if b.multi {
			last := len(b.args) - 1
			for _, item := range expandRange(b.args[last]) {
				args := append(append([]string{}, b.args[:last]...), item)
				got = append(got, in.do(args)...)
				n++
			}
		} else {
			got = in.do(expandArgs(b.args))
			n++
		}
		if strings.Join(got, "\n") != strings.Join(b.reply, "\n") {
			t.Fatalf("%s:%d: %s\n got: %q\nwant: %q", path, b.line, strings.Join(b.args, " "), got, b.reply)
		}
	}
	t.Logf("%s: %d commands, every reply identical", path, n)
}

func parseTranscript(t *testing.T, path string) []block {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	line := 1
	for _, text := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n\n") {
		lines := strings.Split(text, "\n")
		b := block{line: line}
		switch {
		case strings.HasPrefix(lines[0], ">> "):
			b.multi, b.args = true, strings.Split(lines[0][3:], " ")
		case strings.HasPrefix(lines[0], "> "):
			b.args = strings.Split(lines[0][2:], " ")
		default:
			t.Fatalf("%s:%d: block does not start with a command: %q", path, line, lines[0])
		}
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "@") {
				l = "hex:" + hex.EncodeToString(readDump(t, l[1:]))
			}
			b.reply = append(b.reply, l)
		}
		blocks = append(blocks, b)
		line += len(lines) + 1
	}
	return blocks
}

func readDump(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// expandArgs expands item ranges and decodes hex: and @file arguments to raw bytes (as strings).
func expandArgs(args []string) []string {
	var out []string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "hex:"):
			b, err := hex.DecodeString(a[4:])
			if err != nil {
				panic(err)
			}
			out = append(out, string(b))
		case strings.HasPrefix(a, "@"):
			b, err := os.ReadFile(filepath.Join("testdata", a[1:]))
			if err != nil {
				panic(err)
			}
			out = append(out, string(b))
		default:
			out = append(out, expandRange(a)...)
		}
	}
	return out
}

// expandRange turns "item-3..item-5" into item-3, item-4, item-5; other arguments stay.
func expandRange(a string) []string {
	from, to, ok := strings.Cut(a, "..")
	if !ok {
		return []string{a}
	}
	i := strings.LastIndexByte(from, '-') + 1
	prefix := from[:i]
	lo, err1 := strconv.Atoi(from[i:])
	hi, err2 := strconv.Atoi(strings.TrimPrefix(to, prefix))
	if err1 != nil || err2 != nil || !strings.HasPrefix(to, prefix) {
		return []string{a}
	}
	var out []string
	for n := lo; n <= hi; n++ {
		out = append(out, prefix+strconv.Itoa(n))
	}
	return out
}

// interp is a keyspace of chains answering BF.* commands with RESP2 reply lines in the
// transcript format.
type interp struct{ keys map[string]*Chain }

func integer(n uint64) string { return ":" + strconv.FormatUint(n, 10) }

func boolean(b bool) string {
	if b {
		return ":1"
	}
	return ":0"
}

// errorLine is RedisBloom's reply to each error of this package.
func errorLine(err error) string {
	switch {
	case errors.Is(err, ErrFull):
		return "-ERR non scaling filter is full"
	case errors.Is(err, ErrCannotGrow):
		return "-ERR problem inserting into filter"
	case errors.Is(err, ErrBadData):
		return "-ERR received bad data"
	case errors.Is(err, ErrNoLink):
		return "-ERR invalid offset - no link found"
	case errors.Is(err, ErrChunkTooBig):
		return "-ERR invalid chunk - Too big for current filter"
	}
	return "-ERR unexpected: " + err.Error()
}

func (in *interp) do(args []string) []string {
	cmd, key := strings.ToUpper(args[0]), args[1]
	c := in.keys[key]
	switch cmd {
	case "BF.RESERVE":
		if c != nil {
			return []string{"-ERR item exists"}
		}
		rate, _ := strconv.ParseFloat(args[2], 64)
		capacity, _ := strconv.ParseUint(args[3], 10, 64)
		expansion, nonScaling := uint64(DefaultExpansion), false
		for i := 4; i < len(args); i++ {
			switch strings.ToUpper(args[i]) {
			case "EXPANSION":
				i++
				expansion, _ = strconv.ParseUint(args[i], 10, 64)
			case "NONSCALING":
				nonScaling = true
			}
		}
		c, err := NewChain(capacity, rate, uint32(expansion), nonScaling, nil)
		if err != nil {
			return []string{"-ERR could not create filter"}
		}
		in.keys[key] = c
		return []string{"+OK"}
	case "BF.ADD", "BF.MADD", "BF.INSERT":
		items := args[2:]
		if cmd == "BF.INSERT" {
			capacity, rate, expansion, nonScaling := uint64(DefaultCapacity), DefaultErrorRate, uint64(DefaultExpansion), false
		options:
			for i := 2; i < len(args); i++ {
				switch strings.ToUpper(args[i]) {
				case "CAPACITY":
					i++
					capacity, _ = strconv.ParseUint(args[i], 10, 64)
				case "ERROR":
					i++
					rate, _ = strconv.ParseFloat(args[i], 64)
				case "EXPANSION":
					i++
					expansion, _ = strconv.ParseUint(args[i], 10, 64)
				case "NONSCALING":
					nonScaling = true
				case "ITEMS":
					items = args[i+1:]
					break options
				}
			}
			if c == nil {
				var err error
				if c, err = NewChain(capacity, rate, uint32(expansion), nonScaling, nil); err != nil {
					return []string{"-ERR could not create filter"}
				}
				in.keys[key] = c
			}
		}
		if c == nil {
			var err error
			if c, err = NewChain(DefaultCapacity, DefaultErrorRate, DefaultExpansion, false, nil); err != nil {
				return []string{"-ERR could not create filter"}
			}
			in.keys[key] = c
		}
		var out []string
		for _, item := range items {
			added, err := c.Add([]byte(item))
			if err != nil {
				out = append(out, errorLine(err))
				if errors.Is(err, ErrFull) {
					break
				}
				continue
			}
			out = append(out, boolean(added))
		}
		if cmd == "BF.ADD" {
			return out
		}
		return append([]string{"*" + strconv.Itoa(len(out))}, out...)
	case "BF.EXISTS", "BF.MEXISTS":
		var out []string
		for _, item := range args[2:] {
			out = append(out, boolean(c != nil && c.Exists([]byte(item))))
		}
		if cmd == "BF.EXISTS" {
			return out
		}
		return append([]string{"*" + strconv.Itoa(len(out))}, out...)
	case "BF.CARD":
		if c == nil {
			return []string{":0"}
		}
		return []string{integer(c.Card())}
	case "BF.INFO":
		if c == nil {
			return []string{"-ERR not found"}
		}
		expansion := integer(uint64(c.Expansion()))
		if c.NonScaling() {
			expansion = "$-1"
		}
		fields := [][2]string{
			{"Capacity", integer(c.Capacity())},
			{"Size", integer(c.Size())},
			{"Number of filters", integer(uint64(c.NumFilters()))},
			{"Number of items inserted", integer(c.Card())},
			{"Expansion rate", expansion},
		}
		if len(args) == 3 {
			i := map[string]int{"CAPACITY": 0, "SIZE": 1, "FILTERS": 2, "ITEMS": 3, "EXPANSION": 4}[strings.ToUpper(args[2])]
			return []string{"*1", fields[i][1]}
		}
		out := []string{"*10"}
		for _, f := range fields {
			out = append(out, "+"+f[0], f[1])
		}
		return out
	case "BF.DEBUG":
		if c == nil {
			return []string{"-ERR not found"}
		}
		lines := c.Debug()
		out := []string{"*" + strconv.Itoa(len(lines))}
		for _, l := range lines {
			out = append(out, "$"+strconv.Itoa(len(l)), l)
		}
		return out
	case "BF.SCANDUMP":
		if c == nil {
			return []string{"-ERR not found"}
		}
		it, _ := strconv.ParseInt(args[2], 10, 64)
		next, data := c.ScanDump(it)
		return []string{"*2", ":" + strconv.FormatInt(next, 10), "$" + strconv.Itoa(len(data)), "hex:" + hex.EncodeToString(data)}
	case "BF.LOADCHUNK":
		it, _ := strconv.ParseInt(args[2], 10, 64)
		data := []byte(args[3])
		if c == nil {
			if it != 1 {
				return []string{"-ERR not found"}
			}
			c, err := LoadHeader(data, nil)
			if err != nil {
				return []string{errorLine(err)}
			}
			in.keys[key] = c
			return []string{"+OK"}
		}
		if err := c.LoadChunk(it, data); err != nil {
			return []string{errorLine(err)}
		}
		return []string{"+OK"}
	}
	panic(fmt.Sprintf("interp: unsupported command %q", cmd))
}
