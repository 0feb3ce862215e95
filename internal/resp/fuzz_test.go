package resp

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
	"testing/iotest"
)

// Small limits, so that fuzzing reaches them with small inputs.
var fuzzLimits = Limits{MaxBulk: 64, MaxElems: 8, MaxLine: 32, MaxDepth: 6}

type parsed struct {
	cmds [][][]byte
	err  string
}

func parseAllCommands(src io.Reader, unauth bool) parsed {
	return parseAllChanging(src, unauth, 0)
}

// changeLimits sets the limits that apply to read number i of a schedule: its bits 2i and 2i+1
// switch Unauthenticated and lower MaxBulk for that read, as AUTH and CONFIG SET change them
// between the requests of a pipelined batch. Schedule 0 changes nothing.
func changeLimits(r *Reader, unauth bool, schedule uint64, i int) {
	r.Limits = fuzzLimits
	r.Unauthenticated = unauth
	if i >= 32 {
		return
	}
	if schedule>>(2*i)&1 != 0 {
		r.Unauthenticated = !unauth
	}
	if schedule>>(2*i+1)&1 != 0 {
		r.Limits.MaxBulk = 5
	}
}

// parseAllChanging reads every command one at a time, with the limits of schedule.
func parseAllChanging(src io.Reader, unauth bool, schedule uint64) parsed {
	r := NewReader(src)
	var p parsed
	for {
		changeLimits(r, unauth, schedule, len(p.cmds))
		args, err := r.ReadCommand()
		if err != nil {
			p.err = err.Error()
			return p
		}
		if len(args) == 0 {
			panic("ReadCommand returned an empty command")
		}
		p.cmds = append(p.cmds, cloneArgs(args))
	}
}

func cloneArgs(args [][]byte) [][]byte {
	cmd := make([][]byte, len(args))
	for i, a := range args {
		cmd[i] = bytes.Clone(a)
	}
	return cmd
}

// parseAllPeeking is parseAllChanging as an event loop reads: Fill, then ReadBuffered until the
// buffer holds no complete request, with Peeks (which keep the requests they parse for the reads)
// at points chosen by rng, each stopping after a number of requests chosen by rng. It fails t
// unless every command a Peek announces is the next one read, while the limits stay as they were
// at the Peek.
func parseAllPeeking(t *testing.T, src io.Reader, unauth bool, schedule uint64, rng *rand.Rand) parsed {
	r := NewReader(src)
	var p parsed
	var ahead [][][]byte
	peek := func() {
		ahead = ahead[:0]
		stop := rng.IntN(6)
		r.Peek(func(args [][]byte) bool {
			ahead = append(ahead, cloneArgs(args))
			return len(ahead) != stop
		})
	}
	for {
		for {
			changeLimits(r, unauth, schedule, len(p.cmds))
			if rng.IntN(3) == 0 {
				peek()
			}
			limits, ua := r.Limits, r.Unauthenticated
			args, err := r.ReadBuffered()
			if err != nil {
				if len(ahead) > 0 {
					t.Fatalf("Peek announced %q, then the read failed: %v", ahead, err)
				}
				p.err = err.Error()
				return p
			}
			if args == nil {
				if len(ahead) > 0 {
					t.Fatalf("Peek announced %q, then the read found no request", ahead)
				}
				break
			}
			cmd := cloneArgs(args)
			if len(ahead) > 0 {
				if !reflect.DeepEqual(ahead[0], cmd) {
					t.Fatalf("Peek announced %q, then %q was read", ahead[0], cmd)
				}
				ahead = ahead[1:]
			}
			p.cmds = append(p.cmds, cmd)
			changeLimits(r, unauth, schedule, len(p.cmds))
			if r.Limits != limits || r.Unauthenticated != ua {
				ahead = ahead[:0] // announced under other limits
			}
		}
		if err := r.Fill(); err != nil {
			p.err = err.Error()
			return p
		}
	}
}

// quoteInline writes args as one inline command that splitInline reads back exactly.
func quoteInline(b []byte, args [][]byte) []byte {
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, '"')
		for _, c := range a {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 || c >= 0x7f:
				b = fmt.Appendf(b, "\\x%02x", c)
			default:
				b = append(b, c)
			}
		}
		b = append(b, '"')
	}
	return append(b, '\r', '\n')
}

// FuzzReadCommand checks that any input gives the same commands and the same error however it
// is split into reads, and whether or not the requests are parsed ahead by Peek (with the limits
// changing between requests), and that every command read re-encodes (as RESP and inline) to
// bytes that read back as the same command.
func FuzzReadCommand(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n"))
	f.Add([]byte("set a \"b\\x00c\" 'd\\'e'\r\n"))
	f.Add([]byte("*3\r\n$6\r\nBF.ADD\r\n$2\r\nbf\r\n$1\r\na\r\n*0\r\n*2\r\n$9\r\nBF.EXISTS\r\n$2\r\nbf\r\nPING\r\n*1\r\n$4\r\nPI"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h := fnv.New64a()
		h.Write(data)
		seed := h.Sum64()
		for _, unauth := range []bool{false, true} {
			whole := parseAllCommands(bytes.NewReader(data), unauth)
			for i, schedule := range []uint64{0, seed} {
				want := whole
				if schedule != 0 {
					want = parseAllChanging(bytes.NewReader(data), unauth, schedule)
				}
				rng := rand.New(rand.NewPCG(seed, uint64(i)))
				for _, src := range []io.Reader{bytes.NewReader(data), iotest.HalfReader(bytes.NewReader(data)), iotest.OneByteReader(bytes.NewReader(data))} {
					if peeked := parseAllPeeking(t, src, unauth, schedule, rng); !reflect.DeepEqual(peeked, want) {
						t.Fatalf("unauth %v, limits changed by %#x: reads after Peek give %q / %s, without %q / %s",
							unauth, schedule, peeked.cmds, peeked.err, want.cmds, want.err)
					}
				}
			}
			for _, src := range []io.Reader{iotest.OneByteReader(bytes.NewReader(data)), iotest.HalfReader(bytes.NewReader(data))} {
				if split := parseAllCommands(src, unauth); !reflect.DeepEqual(split, whole) {
					t.Fatalf("unauth %v: split reads give %q / %s, whole gives %q / %s", unauth, split.cmds, split.err, whole.cmds, whole.err)
				}
			}
			for _, cmd := range whole.cmds {
				enc := AppendCommand(nil, cmd...)
				again := parseAllCommands(bytes.NewReader(enc), unauth)
				if again.err != "EOF" || len(again.cmds) != 1 || !reflect.DeepEqual(again.cmds[0], cmd) {
					t.Fatalf("%q re-encoded as %q reads back as %q / %s", cmd, enc, again.cmds, again.err)
				}
				inl := quoteInline(nil, cmd)
				if len(inl)-1 > fuzzLimits.MaxLine {
					continue
				}
				again = parseAllCommands(bytes.NewReader(inl), unauth)
				if again.err != "EOF" || len(again.cmds) != 1 || !reflect.DeepEqual(again.cmds[0], cmd) {
					t.Fatalf("%q quoted as %q reads back as %q / %s", cmd, inl, again.cmds, again.err)
				}
			}
		}
	})
}

// FuzzCommandRoundTrip builds commands from arbitrary bytes and checks that both encodings read
// back exactly.
func FuzzCommandRoundTrip(f *testing.F) {
	f.Add([]byte("BF.ADD\xffkey\xffitem"), uint8(0))
	f.Add([]byte("\xff\xff\"'\\\r\n"), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		args := bytes.Split(data, []byte{0xff})
		var enc []byte
		enc = AppendCommand(enc, args...)
		enc = quoteInline(enc, args)
		r := NewReader(iotest.HalfReader(bytes.NewReader(enc)))
		if split%2 == 1 {
			r = NewReader(iotest.OneByteReader(bytes.NewReader(enc)))
		}
		for form := range 2 {
			got, err := r.ReadCommand()
			if err != nil {
				if form == 1 && len(enc) > DefaultMaxLine {
					return
				}
				t.Fatalf("form %d: %v", form, err)
			}
			if len(got) != len(args) {
				t.Fatalf("form %d: %q read back as %q", form, args, got)
			}
			for i := range got {
				if !bytes.Equal(got[i], args[i]) {
					t.Fatalf("form %d: %q read back as %q", form, args, got)
				}
			}
		}
		if _, err := r.ReadCommand(); err != io.EOF {
			t.Fatalf("after both forms: %v", err)
		}
	})
}

func parseAllReplies(src io.Reader) ([]Value, string) {
	r := NewReader(src)
	r.Limits = fuzzLimits
	var vs []Value
	for {
		v, err := r.ReadReply()
		if err != nil {
			return vs, err.Error()
		}
		vs = append(vs, v)
	}
}

// FuzzReadReply checks that any input gives the same values and error however it is split, and
// that every value read re-encodes to bytes that read back as the same value.
func FuzzReadReply(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nabc\r\n:1\r\n%1\r\n+k\r\n_\r\n"))
	f.Add([]byte("|1\r\n+a\r\n#t\r\n,1.5\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		whole, werr := parseAllReplies(bytes.NewReader(data))
		split, serr := parseAllReplies(iotest.OneByteReader(bytes.NewReader(data)))
		if !reflect.DeepEqual(whole, split) || werr != serr {
			t.Fatalf("split reads give %v / %s, whole gives %v / %s", split, serr, whole, werr)
		}
		for _, v := range whole {
			enc := AppendValue(nil, v)
			again, err := parseAllReplies(bytes.NewReader(enc))
			if err != "EOF" || len(again) != 1 || !reflect.DeepEqual(again[0], v) {
				t.Fatalf("%v re-encoded as %q reads back as %v / %s", v, enc, again, err)
			}
		}
	})
}
