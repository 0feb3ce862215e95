package resp

import (
	"bytes"
	"fmt"
	"io"
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
	r := NewReader(src)
	r.Limits = fuzzLimits
	r.Unauthenticated = unauth
	var p parsed
	for {
		args, err := r.ReadCommand()
		if err != nil {
			p.err = err.Error()
			return p
		}
		if len(args) == 0 {
			panic("ReadCommand returned an empty command")
		}
		cmd := make([][]byte, len(args))
		for i, a := range args {
			cmd[i] = bytes.Clone(a)
		}
		p.cmds = append(p.cmds, cmd)
	}
}

// parseAllPeeking is parseAllCommands with a Peek before each read whenever no peeked command is
// pending; it fails t unless every command Peek announces is the next one read.
func parseAllPeeking(t *testing.T, src io.Reader, unauth bool) parsed {
	r := NewReader(src)
	r.Limits = fuzzLimits
	r.Unauthenticated = unauth
	clone := func(args [][]byte) [][]byte {
		cmd := make([][]byte, len(args))
		for i, a := range args {
			cmd[i] = bytes.Clone(a)
		}
		return cmd
	}
	var p parsed
	var ahead [][][]byte
	for {
		if len(ahead) == 0 {
			r.Peek(func(args [][]byte) bool { ahead = append(ahead, clone(args)); return true })
		}
		args, err := r.ReadCommand()
		if err != nil {
			if len(ahead) > 0 {
				t.Fatalf("Peek announced %q, then the read failed: %v", ahead, err)
			}
			p.err = err.Error()
			return p
		}
		cmd := clone(args)
		if len(ahead) > 0 {
			if !reflect.DeepEqual(ahead[0], cmd) {
				t.Fatalf("Peek announced %q, then %q was read", ahead[0], cmd)
			}
			ahead = ahead[1:]
		}
		p.cmds = append(p.cmds, cmd)
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
// is split into reads, and that every command read re-encodes (as RESP and inline) to bytes that
// read back as the same command.
func FuzzReadCommand(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n"))
	f.Add([]byte("set a \"b\\x00c\" 'd\\'e'\r\n"))
	f.Add([]byte("*3\r\n$6\r\nBF.ADD\r\n$2\r\nbf\r\n$1\r\na\r\n*0\r\n*2\r\n$9\r\nBF.EXISTS\r\n$2\r\nbf\r\nPING\r\n*1\r\n$4\r\nPI"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, unauth := range []bool{false, true} {
			whole := parseAllCommands(bytes.NewReader(data), unauth)
			if peeked := parseAllPeeking(t, bytes.NewReader(data), unauth); !reflect.DeepEqual(peeked, whole) {
				t.Fatalf("unauth %v: reads after Peek give %q / %s, without %q / %s", unauth, peeked.cmds, peeked.err, whole.cmds, whole.err)
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
