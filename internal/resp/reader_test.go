package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads commands until an error and returns them with the error.
func readAll(r *Reader) ([][]string, error) {
	var cmds [][]string
	for {
		args, err := r.ReadCommand()
		if err != nil {
			return cmds, err
		}
		cmd := make([]string, len(args))
		for i, a := range args {
			cmd[i] = string(a)
		}
		cmds = append(cmds, cmd)
	}
}

func TestReadCommand(t *testing.T) {
	tests := []struct {
		in   string
		want [][]string
		err  string // the ProtocolError text, or "" for a clean io.EOF
	}{
		{in: "*1\r\n$4\r\nPING\r\n", want: [][]string{{"PING"}}},
		{in: "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", want: [][]string{{"SET", "k", ""}}},
		{in: "*2\r\n$3\r\nGET\r\n$4\r\na\r\nb\r\n", want: [][]string{{"GET", "a\r\nb"}}},
		{in: "*0\r\n*-1\r\n*1\r\n$1\r\nx\r\n", want: [][]string{{"x"}}},
		{in: "PING\r\n", want: [][]string{{"PING"}}},
		{in: "PING\n\r\n\n  \r\nECHO  a   b\n", want: [][]string{{"PING"}, {"ECHO", "a", "b"}}},
		{in: "set k \"a b\\n\\x41\\x4g\"\r\n", want: [][]string{{"set", "k", "a b\nAx4g"}}},
		{in: "set k 'it\\'s' ''\r\n", want: [][]string{{"set", "k", "it's", ""}}},
		{in: "a\"b c\"d\r\n", err: "Protocol error: unbalanced quotes in request"},
		{in: "a\"b c\" d\r\n", want: [][]string{{"ab c", "d"}}},
		{in: "\"unterminated\r\n", err: "Protocol error: unbalanced quotes in request"},
		{in: "\v\fx\vy\r\n", want: [][]string{{"x\vy"}}},
		{in: "*1\r\n$3\r\nabcXY", err: "Protocol error: bulk string not terminated by CRLF"},
		{in: "*1\r\n+PING\r\n", err: "Protocol error: expected '$', got '+'"},
		{in: "*1\r\n$-1\r\n", err: "Protocol error: invalid bulk length"},
		{in: "*1\r\n$01\r\nx\r\n", err: "Protocol error: invalid bulk length"},
		{in: "*1\r\n$536870913\r\n", err: "Protocol error: invalid bulk length"},
		{in: "*x\r\n", err: "Protocol error: invalid multibulk length"},
		{in: "*2147483648\r\n", err: "Protocol error: invalid multibulk length"},
		{in: "*1\r\r\n", err: "Protocol error: invalid multibulk length"},
		{in: "*1\r\n$1\rx\r\n", err: "Protocol error: invalid bulk length"},
		{in: "*1\r\n$1\r\nx\r\n*1\r\n$", err: "unexpected EOF", want: [][]string{{"x"}}},
		{in: "*" + strings.Repeat("1", 70000), err: "Protocol error: too big mbulk count string"},
		{in: "*1\r\n$" + strings.Repeat("1", 70000), err: "Protocol error: too big bulk count string"},
		{in: strings.Repeat("a", 70000), err: "Protocol error: too big inline request"},
		{in: strings.Repeat("a", 70000) + "\n", err: "Protocol error: too big inline request"},
	}
	for _, tt := range tests {
		for _, chunked := range []bool{false, true} {
			var src io.Reader = strings.NewReader(tt.in)
			if chunked {
				src = iotest.OneByteReader(src)
			}
			got, err := readAll(NewReader(src))
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("%.40q (chunked %v): commands %q, want %q", tt.in, chunked, got, tt.want)
			}
			var pe *ProtocolError
			switch {
			case tt.err == "" && err != io.EOF:
				t.Errorf("%.40q (chunked %v): err %v, want EOF", tt.in, chunked, err)
			case tt.err == "unexpected EOF" && err != io.ErrUnexpectedEOF:
				t.Errorf("%.40q (chunked %v): err %v, want unexpected EOF", tt.in, chunked, err)
			case tt.err != "" && tt.err != "unexpected EOF" && (!errors.As(err, &pe) || pe.Msg != tt.err || !errors.Is(err, ErrProtocol)):
				t.Errorf("%.40q (chunked %v): err %v, want %q", tt.in, chunked, err, tt.err)
			}
		}
	}
}

func TestUnauthenticatedLimits(t *testing.T) {
	for _, tt := range []struct{ in, err string }{
		{"*11\r\n", "Protocol error: unauthenticated multibulk length"},
		{"*1\r\n$16385\r\n", "Protocol error: unauthenticated bulk length"},
		{"a b c d e f g h i j k\r\n", "Protocol error: invalid multibulk length"},
	} {
		r := NewReader(strings.NewReader(tt.in))
		r.Unauthenticated = true
		_, err := r.ReadCommand()
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Msg != tt.err {
			t.Errorf("%q: err %v, want %q", tt.in, err, tt.err)
		}
	}
	r := NewReader(strings.NewReader("*10\r\n" + strings.Repeat("$16384\r\n"+strings.Repeat("x", 16384)+"\r\n", 10)))
	r.Unauthenticated = true
	if args, err := r.ReadCommand(); err != nil || len(args) != 10 {
		t.Errorf("10 args of 16384 bytes unauthenticated: %d args, %v", len(args), err)
	}
}

// A declared length costs nothing until the bytes arrive: a client that announces 2^31 elements
// of 512 MiB each and sends nothing more leaves a small buffer.
func TestHugeDeclaredLengthsAllocateNothing(t *testing.T) {
	r := NewReader(strings.NewReader("*2147483647\r\n$536870912\r\nabc"))
	_, err := r.ReadCommand()
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("err %v, want unexpected EOF", err)
	}
	if r.BufferSize() > 64<<10 {
		t.Fatalf("buffer grew to %d bytes", r.BufferSize())
	}
	rr := NewReader(strings.NewReader("*2147483647\r\n*2147483647\r\n$536870912\r\n"))
	if _, err := rr.ReadReply(); err != io.ErrUnexpectedEOF {
		t.Fatalf("reply err %v, want unexpected EOF", err)
	}
}

// BeforeRead runs only when no complete command is buffered: once per pipelined batch.
func TestBeforeReadOncePerBatch(t *testing.T) {
	batch := strings.Repeat("*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n", 50)
	src := &chunks{parts: []string{batch, batch[:7], batch[7:]}}
	r := NewReader(src)
	calls := 0
	r.BeforeRead = func() error { calls++; return nil }
	n := 0
	for {
		_, err := r.ReadCommand()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 100 || calls != 4 { // 3 reads with data, 1 read of EOF
		t.Fatalf("%d commands, %d calls to BeforeRead; want 100, 4", n, calls)
	}
}

type chunks struct{ parts []string }

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	if c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

// A large bulk grows the buffer, and the buffer is given back once the reader is idle.
func TestLargeBulkAndRelease(t *testing.T) {
	big := bytes.Repeat([]byte("z"), 3<<20)
	in := AppendCommand(nil, []byte("BF.LOADCHUNK"), []byte("k"), []byte("9"), big)
	in = AppendCommand(in, []byte("PING"))
	r := NewReader(iotest.HalfReader(bytes.NewReader(in)))
	args, err := r.ReadCommand()
	if err != nil || len(args) != 4 || !bytes.Equal(args[3], big) {
		t.Fatalf("big command: %d args, %v", len(args), err)
	}
	if args, err = r.ReadCommand(); err != nil || string(args[0]) != "PING" {
		t.Fatalf("after big command: %q, %v", args, err)
	}
	if _, err := r.ReadCommand(); err != io.EOF {
		t.Fatal(err)
	}
	if r.BufferSize() > keepBuf {
		t.Fatalf("idle buffer still %d bytes", r.BufferSize())
	}
}

type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.data[r.off:])
	r.off = (r.off + n) % len(r.data)
	return n, nil
}

func TestReadCommandAllocs(t *testing.T) {
	batch := bytes.Repeat(AppendCommand(nil, []byte("BF.ADD"), []byte("key"), []byte("item-1234")), 16)
	r := NewReader(&repeatReader{data: batch})
	for range 100 {
		if _, err := r.ReadCommand(); err != nil {
			t.Fatal(err)
		}
	}
	if a := testing.AllocsPerRun(1000, func() {
		if _, err := r.ReadCommand(); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Fatalf("ReadCommand allocates %v times per command", a)
	}
}

func TestParseInt(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1": 1, "-1": -1, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63} {
		if got, ok := ParseInt([]byte(in)); !ok || got != want {
			t.Errorf("ParseInt(%q) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "-", "+1", "01", "-0", " 1", "1 ", "1e3", "1.5", "9223372036854775808", "-9223372036854775809", "99999999999999999999"} {
		if got, ok := ParseInt([]byte(in)); ok {
			t.Errorf("ParseInt(%q) = %d, want failure", in, got)
		}
	}
}

func TestReadReply(t *testing.T) {
	in := "+OK\r\n-ERR x\r\n:-5\r\n$3\r\nabc\r\n$-1\r\n*-1\r\n*2\r\n:1\r\n$0\r\n\r\n" +
		"_\r\n#t\r\n#f\r\n,1.5\r\n(123\r\n!3\r\nbad\r\n=8\r\ntxt:abcd\r\n%1\r\n+k\r\n:2\r\n~1\r\n:3\r\n>1\r\n+p\r\n" +
		"|1\r\n+a\r\n+b\r\n:7\r\n"
	want := []string{`"OK"`, "(error) ERR x", "(integer) -5", `"abc"`, "(nil)", "(nil)", `[(integer) 1, ""]`,
		"(nil)", "(boolean) true", "(boolean) false", `"1.5"`, `"123"`, "(error) bad", `"txt:abcd"`,
		`["k", (integer) 2]`, "[(integer) 3]", `["p"]`, "(integer) 7"}
	for _, chunked := range []bool{false, true} {
		var src io.Reader = strings.NewReader(in)
		if chunked {
			src = iotest.OneByteReader(src)
		}
		r := NewReader(src)
		var out []byte
		for i, w := range want {
			v, err := r.ReadReply()
			if err != nil {
				t.Fatalf("value %d: %v", i, err)
			}
			if v.String() != w {
				t.Errorf("value %d = %s, want %s", i, v, w)
			}
			out = AppendValue(out, v)
		}
		if _, err := r.ReadReply(); err != io.EOF {
			t.Fatalf("at end: %v", err)
		}
		if string(out) != in {
			t.Errorf("re-encoded\n%q\nwant\n%q", out, in)
		}
	}
	for _, bad := range []string{"?x\r\n", ":1x\r\n", "#x\r\n", "_x\r\n", "$2\r\nabc\r\n", "*-2\r\n", "!-1\r\n", "|1\r\n+a\r\n+b\r\n|1\r\n+a\r\n+b\r\n:1\r\n",
		strings.Repeat("*1\r\n", 100) + ":1\r\n"} {
		_, err := NewReader(strings.NewReader(bad)).ReadReply()
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%q: err %v, want a protocol error", bad, err)
		}
	}
}

func TestWriter(t *testing.T) {
	for _, tt := range []struct {
		proto int
		want  string
	}{
		{2, "+OK\r\n-ERR a  b\r\n:42\r\n$1\r\nx\r\n$-1\r\n*-1\r\n*4\r\n*2\r\n:1\r\n:0\r\n$3\r\n1.5\r\n$3\r\ninf\r\n$2\r\nhi\r\n"},
		{3, "+OK\r\n-ERR a  b\r\n:42\r\n$1\r\nx\r\n_\r\n_\r\n%2\r\n~2\r\n#t\r\n#f\r\n,1.5\r\n,inf\r\n=6\r\ntxt:hi\r\n"},
	} {
		var sb strings.Builder
		w := NewWriter(&sb)
		w.Proto = tt.proto
		w.OK()
		w.Error("ERR a\r\nb")
		w.Int(42)
		w.BulkString("x")
		w.Null()
		w.NullArray()
		w.Map(2)
		w.Set(2)
		w.Bool(true)
		w.Bool(false)
		w.Double(1.5)
		w.Double(posInf)
		w.Verbatim("hi")
		if sb.Len() != 0 {
			t.Fatal("Writer wrote before Flush")
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if sb.String() != tt.want {
			t.Errorf("RESP%d:\n%q\nwant\n%q", tt.proto, sb.String(), tt.want)
		}
	}
	// The first error sticks.
	fw := &failWriter{}
	w := NewWriter(fw)
	w.OK()
	if err := w.Flush(); err == nil {
		t.Fatal("Flush to a failing writer succeeded")
	}
	w.OK()
	if err := w.Flush(); err == nil || fw.calls != 1 {
		t.Fatalf("second Flush: err %v after %d writes; want the first error and no write", err, fw.calls)
	}
}

var posInf = math.Inf(1)

type failWriter struct{ calls int }

func (f *failWriter) Write(p []byte) (int, error) { f.calls++; return 0, errors.New("broken pipe") }

// wouldBlock serves its parts one per Read, returning ErrWouldBlock between them.
type wouldBlock struct {
	parts []string
	gap   bool
}

func (w *wouldBlock) Read(p []byte) (int, error) {
	if w.gap = !w.gap; w.gap {
		return 0, ErrWouldBlock
	}
	if len(w.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, w.parts[0])
	w.parts[0] = w.parts[0][n:]
	if w.parts[0] == "" {
		w.parts = w.parts[1:]
	}
	return n, nil
}

// TestFillReadBuffered drives the Reader as an event loop does: Fill when readable, then every
// buffered request, keeping a request split across reads.
func TestFillReadBuffered(t *testing.T) {
	src := &wouldBlock{parts: []string{"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nPING\r\n*1\r\n$4\r\nPI", "NG\r\n"}}
	r := NewReader(src)
	r.BeforeRead = func() error { t.Fatal("Fill called BeforeRead"); return nil }
	var got []string
	var err error
	for {
		err = r.Fill()
		if err == ErrWouldBlock {
			continue
		}
		if err != nil {
			break
		}
		for {
			args, err := r.ReadBuffered()
			if err != nil {
				t.Fatal(err)
			}
			if args == nil {
				break
			}
			got = append(got, string(bytes.Join(args, []byte(" "))))
		}
	}
	if err != io.EOF || fmt.Sprint(got) != "[ECHO hi PING PING]" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// The fast path for short arguments keeps the limits.
func TestSmallBulkLimit(t *testing.T) {
	r := NewReader(strings.NewReader("*1\r\n$100\r\n" + strings.Repeat("x", 100) + "\r\n"))
	r.Limits.MaxBulk = 64
	var pe *ProtocolError
	if _, err := r.ReadCommand(); !errors.As(err, &pe) || pe.Msg != "Protocol error: invalid bulk length" {
		t.Fatalf("a 100-byte argument with MaxBulk 64: %v", err)
	}
}

// Space and Commit read as Fill does, with the caller making the read.
func TestSpaceCommit(t *testing.T) {
	r := NewReader(nil)
	in := []byte("*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n*1\r\n$4\r\nPING\r\n")
	feed := func(b []byte) error {
		n := copy(r.Space(), b)
		return r.Commit(n, nil)
	}
	if err := feed(in[:10]); err != nil {
		t.Fatal(err)
	}
	if args, err := r.ReadBuffered(); args != nil || err != nil {
		t.Fatalf("a partial request: %q, %v", args, err)
	}
	if err := feed(in[10:]); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PING hi", "PING"} {
		args, err := r.ReadBuffered()
		if err != nil || string(bytes.Join(args, []byte(" "))) != want {
			t.Fatalf("got %q, %v; want %q", args, err, want)
		}
	}
	if err := r.Commit(0, ErrWouldBlock); err != ErrWouldBlock {
		t.Fatalf("would block: %v", err)
	}
	if err := feed([]byte("*1\r\n$4\r\nPI")); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(0, io.EOF); err != io.ErrUnexpectedEOF {
		t.Fatalf("end inside a request: %v, want io.ErrUnexpectedEOF", err)
	}
	if err := r.Commit(0, nil); err != io.ErrUnexpectedEOF {
		t.Fatalf("after the end: %v, want the sticky error", err)
	}
	if err := NewReader(nil).Commit(5, nil); err == nil {
		t.Fatal("a count beyond the buffer was accepted")
	}
}

// Peek keeps the requests it parses for the reads that follow, which return them unparsed only
// while the limits they were parsed under still apply.
func TestPeekKeepsRequests(t *testing.T) {
	batch := "*2\r\n$4\r\nECHO\r\n$10\r\n0123456789\r\n*0\r\n*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
	peek := func(r *Reader, stop int) (got []string) {
		r.Peek(func(args [][]byte) bool {
			got = append(got, string(bytes.Join(args, []byte(" "))))
			return len(got) != stop
		})
		return got
	}
	read := func(r *Reader) string {
		args, err := r.ReadBuffered()
		if err != nil {
			return err.Error()
		}
		return string(bytes.Join(args, []byte(" ")))
	}
	r := NewReader(strings.NewReader(batch))
	if err := r.Fill(); err != nil {
		t.Fatal(err)
	}
	if got := peek(r, 2); fmt.Sprint(got) != "[ECHO 0123456789 PING]" {
		t.Fatalf("Peek stopping after 2: %q", got)
	}
	if got := read(r); got != "ECHO 0123456789" {
		t.Fatalf("first read: %q", got)
	}
	// A second Peek starts from the kept requests and parses on past them.
	if got := peek(r, 0); fmt.Sprint(got) != "[PING SET k v]" {
		t.Fatalf("second Peek: %q", got)
	}
	for _, want := range []string{"PING", "SET k v", ""} {
		if got := read(r); got != want {
			t.Fatalf("read %q, want %q", got, want)
		}
	}

	// Lowered limits apply to requests peeked before they changed.
	r = NewReader(strings.NewReader(batch))
	r.Fill()
	peek(r, 0)
	r.Limits.MaxBulk = 5
	if got := read(r); got != "resp: Protocol error: invalid bulk length" {
		t.Fatalf("a peeked 10-byte argument read with MaxBulk 5: %q", got)
	}

	// Raised ones too: a request Peek stopped at is read under the limits of the read.
	r = NewReader(strings.NewReader("PING\r\n" + batch))
	r.Fill()
	r.Unauthenticated, r.Limits.MaxBulk = true, 5
	if got := read(r); got != "PING" {
		t.Fatalf("inline PING: %q", got)
	}
	if got := peek(r, 0); len(got) != 0 {
		t.Fatalf("Peek under MaxBulk 5 announced %q", got)
	}
	r.Unauthenticated, r.Limits.MaxBulk = false, 0
	if got := read(r); got != "ECHO 0123456789" {
		t.Fatalf("read after the limits were raised: %q", got)
	}
}

// Requests past Peek's bounds (64 requests, 1024 elements) are announced, and read, as well.
func TestPeekBounds(t *testing.T) {
	var in []byte
	var want []string
	add := func(args ...[]byte) {
		in = AppendCommand(in, args...)
		want = append(want, string(bytes.Join(args, []byte(" "))))
	}
	for i := range 50 {
		add([]byte("ECHO"), []byte(strconv.Itoa(i)))
	}
	big := make([][]byte, 1000)
	for i := range big {
		big[i] = []byte(strconv.Itoa(i))
	}
	add(big...) // passes the elements' bound
	for i := range 30 {
		add([]byte("ECHO"), []byte(strconv.Itoa(i))) // the 64th request passes the other
	}
	r := NewReader(bytes.NewReader(in))
	r.Limits.MaxLine = 1 << 20
	if err := r.Fill(); err != nil {
		t.Fatal(err)
	}
	for r.Buffered() < len(in) {
		if err := r.Fill(); err != nil {
			t.Fatal(err)
		}
	}
	for from := 0; from < len(want); from += 20 {
		var peeked []string
		r.Peek(func(args [][]byte) bool {
			peeked = append(peeked, string(bytes.Join(args, []byte(" "))))
			return true
		})
		if !slices.Equal(peeked, want[from:]) {
			t.Fatalf("Peek from request %d announced %d requests, want %d", from, len(peeked), len(want)-from)
		}
		for i := from; i < min(from+20, len(want)); i++ {
			args, err := r.ReadBuffered()
			if err != nil || string(bytes.Join(args, []byte(" "))) != want[i] {
				t.Fatalf("request %d: %.40q, %v", i, args, err)
			}
		}
	}
	if args, err := r.ReadBuffered(); args != nil || err != nil {
		t.Fatalf("after the batch: %q, %v", args, err)
	}
}

// TestPeekKeepsNoBuffer checks that once the kept requests are read and the Reader reads again,
// nothing it keeps refers to the old buffer, which a Reader gives back after a large message.
func TestPeekKeepsNoBuffer(t *testing.T) {
	var in []byte
	for i := range 3 {
		in = AppendCommand(in, []byte("ECHO"), []byte(strconv.Itoa(i)))
	}
	r := NewReader(bytes.NewReader(in))
	if err := r.Fill(); err != nil {
		t.Fatal(err)
	}
	kept := 0
	r.Peek(func([][]byte) bool { kept++; return true })
	for range kept {
		if args, err := r.ReadBuffered(); err != nil || args == nil {
			t.Fatal(args, err)
		}
	}
	if kept != 3 {
		t.Fatalf("Peek saw %d requests, want 3", kept)
	}
	r.Fill() // the source is empty: reads nothing, after making room
	for i, a := range r.aheadArgs[:cap(r.aheadArgs)] {
		if a != nil {
			t.Fatalf("aheadArgs[%d] still refers to the buffer: %q", i, a)
		}
	}
}
