package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
)

// ErrWouldBlock is what a non-blocking source returns from Read when no data is available. The
// Reader passes it on without keeping it: Fill returns it, and the Reader can be used again once
// the source has data.
var ErrWouldBlock = errors.New("resp: read would block")

// ErrProtocol is the category of every *ProtocolError: errors.Is(err, ErrProtocol) reports
// whether a read failed because of what the peer sent rather than because of the transport.
var ErrProtocol = errors.New("resp: protocol error")

// ProtocolError reports bytes that are not valid RESP or that pass a limit. Msg is the text Redis
// sends for the same input ("Protocol error: invalid bulk length"), so a server can answer
// "-ERR " + Msg and close the connection, as Redis does.
type ProtocolError struct {
	Msg string
}

func (e *ProtocolError) Error() string        { return "resp: " + e.Msg }
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

func protoErr(msg string) error { return &ProtocolError{Msg: "Protocol error: " + msg} }

// Limits bound what a Reader accepts. A zero field means the default given with it.
type Limits struct {
	// MaxBulk is the longest bulk string, Redis's proto-max-bulk-len: default 512 MiB.
	MaxBulk int
	// MaxElems is the most elements in one request or reply aggregate: default 2^31-1, as
	// Redis. Memory for elements is taken only as they arrive, so a large declared count
	// costs nothing by itself.
	MaxElems int
	// MaxLine is the longest inline command or header line, Redis's PROTO_INLINE_MAX_SIZE:
	// default 64 KiB.
	MaxLine int
	// MaxDepth is the deepest nesting of reply aggregates: default 64.
	MaxDepth int
}

// Default limits, as Redis 7.0 sets them.
const (
	DefaultMaxBulk  = 512 << 20
	DefaultMaxElems = math.MaxInt32
	DefaultMaxLine  = 64 << 10
	DefaultMaxDepth = 64

	// Limits Redis applies to clients that have not authenticated yet, when a password is set.
	UnauthMaxElems = 10
	UnauthMaxBulk  = 16384
)

const (
	initialBuf = 16 << 10
	minRead    = 4 << 10
	keepBuf    = 64 << 10 // an idle buffer larger than this is released
)

// A Reader reads RESP from an underlying io.Reader through its own growing buffer.
// It is not safe for concurrent use.
type Reader struct {
	// Limits bound what ReadCommand and ReadReply accept.
	Limits Limits

	// Unauthenticated applies Redis's tighter limits for clients that have not yet
	// authenticated: at most 10 elements and 16384-byte bulk strings per request.
	Unauthenticated bool

	// BeforeRead, if set, is called before every read from the underlying reader, that is,
	// each time the Reader has no complete request left in its buffer. A server sets it to
	// flush its replies, which answers a pipelined batch with one write.
	BeforeRead func() error

	src        io.Reader
	buf        []byte
	start, end int // buf[start:end] holds the unread bytes
	err        error

	// State of the request being parsed: once its array header is consumed, want is its
	// declared element count, spans the [start, end) offsets in buf of the elements parsed so
	// far, pos the offset of the next unparsed byte. want < 0 between requests.
	want  int
	pos   int
	spans []int
	args  [][]byte // the request returned last: argv, or a kept request's elements in aheadArgs
	argv  [][]byte // the elements of requests parsed one at a time

	noHook bool // Fill: read without calling BeforeRead

	// The line that starts at scanLine has no terminator before scanTo: a slow client's next
	// bytes are searched, not the whole line again.
	scanLine, scanTo int

	// Requests that Peek parsed, kept so that the reads that follow take them without parsing
	// them again: ahead[aheadNext:] are still unread, their elements are in aheadArgs, and they
	// were parsed under aheadLimits and aheadUnauth. Any read from the source (which may
	// move the buffer) or Reset forgets them, and so does a change of the limits (the next
	// reads then parse under the new ones).
	ahead       []aheadRequest
	aheadArgs   [][]byte
	aheadNext   int
	aheadLimits Limits
	aheadUnauth bool
	peeking     bool // in Peek: parse past the kept requests
	keepAhead   bool // in Peek: parse the elements into aheadArgs, within the bounds
}

// An aheadRequest is a request parsed by Peek: it occupies buf[start:next] and its elements are
// aheadArgs[lo:hi].
type aheadRequest struct {
	start, next, lo, hi int
}

// Bounds on what Peek keeps for the reads that follow; requests past them are parsed again.
const (
	maxAhead     = 64
	maxAheadArgs = 1024
)

// NewReader returns a Reader reading from src with default limits.
func NewReader(src io.Reader) *Reader {
	return &Reader{src: src, want: -1, scanLine: -1}
}

// Reset discards all state and makes r read from src, keeping its buffer and limits.
func (r *Reader) Reset(src io.Reader) {
	r.src, r.start, r.end, r.err, r.want, r.pos, r.scanLine = src, 0, 0, nil, -1, 0, -1
	r.spans, r.args = r.spans[:0], r.args[:0]
	r.forgetAhead()
}

// forgetAhead drops the requests Peek parsed ahead.
func (r *Reader) forgetAhead() {
	clear(r.aheadArgs) // no reference to a buffer that may be given back
	r.ahead, r.aheadArgs, r.aheadNext = r.ahead[:0], r.aheadArgs[:0], 0
}

// Buffered returns the number of bytes received but not yet returned as a command or reply.
func (r *Reader) Buffered() int { return r.end - r.start }

// Unread returns the bytes received but not yet returned as a command or reply, valid until the
// next call on r: for handing the connection over to another protocol (a replica's stream).
func (r *Reader) Unread() []byte { return r.buf[r.start:r.end] }

// BufferSize returns the capacity of the Reader's buffer (Redis's qbuf plus qbuf-free).
func (r *Reader) BufferSize() int { return len(r.buf) }

func (r *Reader) maxBulk() int {
	if r.Limits.MaxBulk > 0 {
		return r.Limits.MaxBulk
	}
	return DefaultMaxBulk
}

func (r *Reader) maxElems() int {
	if r.Limits.MaxElems > 0 {
		return r.Limits.MaxElems
	}
	return DefaultMaxElems
}

func (r *Reader) maxLine() int {
	if r.Limits.MaxLine > 0 {
		return r.Limits.MaxLine
	}
	return DefaultMaxLine
}

func (r *Reader) maxDepth() int {
	if r.Limits.MaxDepth > 0 {
		return r.Limits.MaxDepth
	}
	return DefaultMaxDepth
}

// fill reads more bytes into the buffer, making room first. It returns io.EOF only when the
// source ended cleanly between messages, io.ErrUnexpectedEOF when it ended inside one.
func (r *Reader) fill() error {
	if r.err != nil {
		return r.eof()
	}
	if r.BeforeRead != nil && !r.noHook {
		if err := r.BeforeRead(); err != nil {
			return err
		}
	}
	n, err := r.src.Read(r.space())
	return r.commit(n, err)
}

// space makes room for a read and returns the free end of the buffer.
func (r *Reader) space() []byte {
	r.forgetAhead() // the buffer may move
	if r.start == r.end && r.want < 0 {
		// Idle: rewind, and give back a buffer that one large message grew.
		r.start, r.end, r.scanLine = 0, 0, -1
		if len(r.buf) > keepBuf {
			r.buf = nil
		}
	}
	if len(r.buf)-r.end < minRead {
		if r.start > 0 && r.end-r.start+minRead <= len(r.buf)/2 {
			r.shift(r.buf)
		} else {
			size := max(2*len(r.buf), initialBuf)
			for size-(r.end-r.start) < minRead {
				size *= 2
			}
			nb := make([]byte, size)
			r.shift(nb)
			r.buf = nb
		}
	}
	return r.buf[r.end:]
}

// commit takes the result of a read into space.
func (r *Reader) commit(n int, err error) error {
	if n < 0 || n > len(r.buf)-r.end {
		return errors.New("resp: invalid count from Read")
	}
	r.end += n
	if err == ErrWouldBlock && n == 0 {
		return err
	}
	if err != nil {
		r.err = err
		if n == 0 {
			return r.eof()
		}
	}
	return nil
}

// Space makes room for a read and returns the free end of the buffer, for a server that reads
// the source itself rather than through Fill (several sockets in one system call); Commit then
// takes the result of that read. Nothing else may be called on r between the two.
func (r *Reader) Space() []byte { return r.space() }

// Commit takes the result of a read into the slice Space returned: n bytes, and the error the
// source would have returned. Its results are those of Fill; it does not read.
func (r *Reader) Commit(n int, err error) error {
	if r.err != nil {
		return r.eof()
	}
	return r.commit(n, err)
}

// eof returns the sticky read error, turning io.EOF into io.ErrUnexpectedEOF when a message has
// begun.
func (r *Reader) eof() error {
	if r.err == io.EOF && (r.end > r.start || r.want >= 0) {
		return io.ErrUnexpectedEOF
	}
	return r.err
}

// shift moves the unread bytes to the front of dst (which may be r.buf) and rebases every
// offset of the parse state.
func (r *Reader) shift(dst []byte) {
	d := r.start
	copy(dst, r.buf[r.start:r.end])
	r.start, r.end = 0, r.end-d
	r.scanLine, r.scanTo = r.scanLine-d, r.scanTo-d
	if r.want >= 0 {
		r.pos -= d
		for i := range r.spans {
			r.spans[i] -= d
		}
	}
}

// index returns the index of c in buf[p:end], or -1, searching only bytes that arrived since the
// last search from p.
func (r *Reader) index(p int, c byte) int {
	from := p
	if r.scanLine == p && r.scanTo > p && r.scanTo <= r.end {
		from = r.scanTo
	}
	i := bytes.IndexByte(r.buf[from:r.end], c)
	if i < 0 {
		r.scanLine, r.scanTo = p, r.end
		return -1
	}
	r.scanLine = -1
	return from - p + i
}

// line finds the header line that starts at p and ends with "\r\n". It returns the line without
// the terminator and the offset just past it; ok is false when more input is needed. A line
// whose "\r" is not followed by "\n" is returned with bad set.
func (r *Reader) line(p int, tooBig string) (line []byte, next int, ok bool, err error) {
	i := r.index(p, '\r')
	if i < 0 && r.end-p > r.maxLine() || i > r.maxLine() {
		// Checked whether or not the "\r" has arrived, so that the outcome does not depend on
		// how the input was split into reads.
		return nil, 0, false, protoErr(tooBig)
	}
	if i < 0 {
		return nil, 0, false, nil
	}
	if p+i+1 >= r.end {
		return nil, 0, false, nil
	}
	if r.buf[p+i+1] != '\n' {
		// Not a number followed by CRLF: make it fail the caller's number parse.
		return r.buf[p : p+i+1], p + i + 2, true, nil
	}
	return r.buf[p : p+i], p + i + 2, true, nil
}

// Fill reads once from the source into the buffer, without calling BeforeRead: for event loops,
// which read when the source is readable and then take the buffered requests with
// ReadBuffered. It returns ErrWouldBlock (passed on from the source), io.EOF at the end of input
// between requests, io.ErrUnexpectedEOF inside one, or the source's error.
func (r *Reader) Fill() error {
	r.noHook = true
	defer func() { r.noHook = false }()
	return r.fill()
}

// ReadBuffered returns the next request if the buffer holds all of it, and nil with a nil error
// if it does not; it never reads from the source. Its results are those of ReadCommand.
func (r *Reader) ReadBuffered() ([][]byte, error) {
	for {
		done, err := r.parseRequest()
		if err != nil || !done {
			return nil, err
		}
		if len(r.args) > 0 {
			return r.args, nil
		}
	}
}

// Peek calls fn with each complete request buffered ahead, in order, without consuming any: the
// reads that follow return them as if Peek had not been called. It stops when fn returns false,
// at the first request that is incomplete, inline or malformed (the reads report those), and
// when a request is partly consumed already. args and its elements are valid only during the
// call. A server uses it to prepare for a pipelined batch before running it.
//
// The requests Peek parses are kept, up to a bound, for the reads that follow (ReadBuffered,
// ReadCommand), which then return them without parsing them again, until the Reader reads from
// its source, is Reset, or its Limits or Unauthenticated change (after which requests are parsed
// again, under the new limits). A second Peek before the reads starts from the kept requests.
func (r *Reader) Peek(fn func(args [][]byte) bool) {
	if r.want >= 0 {
		return
	}
	if !r.aheadValid() {
		r.forgetAhead()
	}
	start, scanLine, scanTo := r.start, r.scanLine, r.scanTo
	r.peeking = true
	defer func() {
		r.peeking, r.keepAhead = false, false
		r.start, r.want, r.scanLine, r.scanTo = start, -1, scanLine, scanTo
		r.spans, r.args = r.spans[:0], r.args[:0]
	}()
	r.aheadLimits, r.aheadUnauth = r.Limits, r.Unauthenticated
	for i := r.aheadNext; i < len(r.ahead); i++ {
		a := r.ahead[i]
		r.start = a.next
		if a.hi > a.lo && !fn(r.aheadArgs[a.lo:a.hi:a.hi]) {
			return
		}
	}
	r.keepAhead = true
	for r.start < r.end && r.buf[r.start] == '*' {
		from, lo := r.start, len(r.aheadArgs)
		done, err := r.parseRequest()
		if err != nil || !done {
			return
		}
		if r.keepAhead && len(r.ahead) < maxAhead {
			r.ahead = append(r.ahead, aheadRequest{start: from, next: r.start, lo: lo, hi: len(r.aheadArgs)})
		} else {
			r.keepAhead = false
		}
		if len(r.args) > 0 && !fn(r.args) {
			return
		}
	}
}

// aheadValid reports whether the requests kept by Peek are still to be read as they were
// parsed: the next one starts where the reads are, under the same limits.
func (r *Reader) aheadValid() bool {
	return r.aheadNext < len(r.ahead) && r.ahead[r.aheadNext].start == r.start &&
		r.Limits == r.aheadLimits && r.Unauthenticated == r.aheadUnauth
}

// ReadCommand reads the next request: an array of bulk strings, or an inline command (a line of
// space-separated words, quoted like redis-cli's input). Empty requests (an empty line, "*0",
// "*-1") are skipped. The returned slice and the byte slices in it are owned by the Reader and
// valid until its next read; each element's capacity is its length, so appending to one copies.
// A request that breaks the protocol or the limits returns a *ProtocolError, after which the
// stream cannot be resynchronised and the connection should be closed. At the end of input it
// returns io.EOF, or io.ErrUnexpectedEOF inside a request.
func (r *Reader) ReadCommand() ([][]byte, error) {
	for {
		done, err := r.parseRequest()
		if err != nil {
			return nil, err
		}
		if done {
			if len(r.args) == 0 {
				continue
			}
			return r.args, nil
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
}

// takeAhead sets r.args to the next request kept by Peek and reports true, or forgets the kept
// requests and reports false when they no longer apply (see aheadValid).
func (r *Reader) takeAhead() bool {
	if !r.aheadValid() {
		r.forgetAhead()
		return false
	}
	a := r.ahead[r.aheadNext]
	r.args, r.start = r.aheadArgs[a.lo:a.hi:a.hi], a.next
	if r.aheadNext++; r.aheadNext == len(r.ahead) {
		// aheadArgs holds r.args until the next read or Peek, and is cleared then
		// (forgetAhead), so that it keeps no reference to a buffer given back.
		r.ahead, r.aheadNext = r.ahead[:0], 0
	}
	return true
}

// parseRequest takes the next request: one that Peek kept, or one parsed from the buffer. It
// reports done with r.args set (possibly empty), or not done when it needs more input.
func (r *Reader) parseRequest() (done bool, err error) {
	if r.want < 0 {
		if len(r.ahead) > 0 && !r.peeking && r.takeAhead() {
			return true, nil
		}
		if r.start == r.end {
			return false, nil
		}
		if r.buf[r.start] != '*' {
			return r.parseInline()
		}
		if n, next, ok := r.smallLen(r.start, '*'); ok && n > 0 && n <= r.maxElems() && (n <= UnauthMaxElems || !r.Unauthenticated) {
			r.start = next
			r.want, r.pos, r.spans = n, next, r.spans[:0]
			return r.parseArgs()
		}
		line, next, ok, err := r.line(r.start+1, "too big mbulk count string")
		if !ok {
			return false, err
		}
		n, ok := parseInt(line)
		if !ok || n > int64(r.maxElems()) || n > math.MaxInt32 {
			return false, protoErr("invalid multibulk length")
		}
		if n > UnauthMaxElems && r.Unauthenticated {
			return false, protoErr("unauthenticated multibulk length")
		}
		r.start = next
		if n <= 0 {
			r.args = r.args[:0]
			return true, nil
		}
		r.want, r.pos, r.spans = int(n), next, r.spans[:0]
	}
	return r.parseArgs()
}

// parseArgs parses the elements of the request whose header has been read.
func (r *Reader) parseArgs() (done bool, err error) {
	for len(r.spans) < 2*r.want {
		if r.pos >= r.end {
			return false, nil
		}
		if n, next, ok := r.smallLen(r.pos, '$'); ok && n <= r.maxBulk() {
			// The usual case, a short argument whose header is in the buffer.
			if end := next + n; end+2 <= r.end && r.buf[end] == '\r' && r.buf[end+1] == '\n' {
				r.spans = append(r.spans, next, end)
				r.pos = end + 2
				continue
			}
		}
		line, next, ok, err := r.line(r.pos+1, "too big bulk count string")
		if !ok {
			return false, err
		}
		if r.buf[r.pos] != '$' {
			return false, protoErr("expected '$', got '" + printable(r.buf[r.pos]) + "'")
		}
		n, ok := parseInt(line)
		if !ok || n < 0 || n > int64(r.maxBulk()) {
			return false, protoErr("invalid bulk length")
		}
		if n > UnauthMaxBulk && r.Unauthenticated {
			return false, protoErr("unauthenticated bulk length")
		}
		end := next + int(n)
		if end+2 > r.end {
			return false, nil
		}
		if r.buf[end] != '\r' || r.buf[end+1] != '\n' {
			return false, protoErr("bulk string not terminated by CRLF")
		}
		r.spans = append(r.spans, next, end)
		r.pos = end + 2
	}
	if n := len(r.spans) / 2; r.keepAhead && len(r.ahead) < maxAhead && len(r.aheadArgs)+n <= maxAheadArgs {
		// Peek keeps the request: its elements go straight to the end of aheadArgs.
		lo := len(r.aheadArgs)
		for i := 0; i < len(r.spans); i += 2 {
			r.aheadArgs = append(r.aheadArgs, r.buf[r.spans[i]:r.spans[i+1]:r.spans[i+1]])
		}
		r.args = r.aheadArgs[lo:len(r.aheadArgs):len(r.aheadArgs)]
	} else {
		r.keepAhead = false // past Peek's bounds: this request and the next are parsed again
		r.args = r.argv[:0]
		for i := 0; i < len(r.spans); i += 2 {
			r.args = append(r.args, r.buf[r.spans[i]:r.spans[i+1]:r.spans[i+1]])
		}
		r.argv = r.args
	}
	r.start, r.want = r.pos, -1
	return true, nil
}

// smallLen parses a header "<kind><n>\r\n" at p with n below 10000, returning n and the offset
// after the header; ok is false for anything else, which the general path then handles.
func (r *Reader) smallLen(p int, kind byte) (n, next int, ok bool) {
	b := r.buf[p:r.end]
	if len(b) < 4 || b[0] != kind || b[1] < '0' || b[1] > '9' {
		return 0, 0, false
	}
	n = int(b[1] - '0')
	i := 2
	for ; i < len(b) && i < 5 && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int(b[i]-'0')
	}
	if i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' || b[1] == '0' && i > 2 {
		return 0, 0, false
	}
	return n, p + i + 2, true
}

// printable renders one byte of an error message; CR and LF would end the error line.
func printable(c byte) string {
	if c == '\r' || c == '\n' {
		return " "
	}
	return string([]byte{c})
}

// parseInline parses one inline command: a line ending in "\n" (a "\r" before it is dropped).
func (r *Reader) parseInline() (bool, error) {
	i := r.index(r.start, '\n')
	if i < 0 {
		if r.end-r.start > r.maxLine() {
			return false, protoErr("too big inline request")
		}
		return false, nil
	}
	if i > r.maxLine() {
		return false, protoErr("too big inline request")
	}
	line := r.buf[r.start : r.start+i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := splitInline(r.argv[:0], line)
	if !ok {
		return false, protoErr("unbalanced quotes in request")
	}
	if len(args) > UnauthMaxElems && r.Unauthenticated || len(args) > r.maxElems() {
		return false, protoErr("invalid multibulk length")
	}
	r.args, r.argv = args, args
	r.start += i + 1
	return true, nil
}

// isSpace is C's isspace, which Redis uses to skip blanks between inline arguments.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// splitInline splits line into arguments as Redis's sdssplitargs does: words separated by blanks;
// "double quotes" with \n \r \t \b \a \xHH and \<any> escapes; 'single quotes' with \' only; a
// closing quote must be followed by a blank or the end of the line. It unescapes in place (an
// escape never grows), so the arguments are slices of line. ok is false for unbalanced quotes.
func splitInline(args [][]byte, line []byte) (_ [][]byte, ok bool) {
	p, n := 0, len(line)
	for {
		for p < n && isSpace(line[p]) {
			p++
		}
		if p == n {
			return args, true
		}
		w0, w := p, p // the argument is written at line[w0:w]
		inq, insq := false, false
	token:
		for {
			if inq {
				switch {
				case p == n:
					return args, false
				case line[p] == '\\' && p+3 < n && line[p+1] == 'x':
					hi, ok1 := hexVal(line[p+2])
					lo, ok2 := hexVal(line[p+3])
					if ok1 && ok2 {
						line[w] = hi<<4 | lo
						w++
						p += 4
						continue
					}
					line[w] = 'x'
					w++
					p += 2
				case line[p] == '\\' && p+1 < n:
					c := line[p+1]
					switch c {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					}
					line[w] = c
					w++
					p += 2
				case line[p] == '"':
					if p+1 < n && !isSpace(line[p+1]) {
						return args, false
					}
					p++
					break token
				default:
					line[w] = line[p]
					w++
					p++
				}
			} else if insq {
				switch {
				case p == n:
					return args, false
				case line[p] == '\\' && p+1 < n && line[p+1] == '\'':
					line[w] = '\''
					w++
					p += 2
				case line[p] == '\'':
					if p+1 < n && !isSpace(line[p+1]) {
						return args, false
					}
					p++
					break token
				default:
					line[w] = line[p]
					w++
					p++
				}
			} else {
				if p == n {
					break token
				}
				switch line[p] {
				case ' ', '\n', '\r', '\t':
					p++
					break token
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					line[w] = line[p]
					w++
				}
				p++
			}
		}
		args = append(args, line[w0:w:w])
	}
}

// parseInt parses a decimal integer as Redis's string2ll does: an optional '-', then digits with
// no leading zero (except "0" itself), no '+', no spaces, within int64.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// ParseInt parses b as Redis parses integer arguments (string2ll): strict decimal within int64,
// optional leading '-', no '+', no leading zeros, no spaces.
func ParseInt(b []byte) (int64, bool) { return parseInt(b) }

// EqualFold reports whether the argument b equals lower, a lower-case ASCII word, ignoring the
// case of b: how Redis matches command names, subcommands and options (strcasecmp).
func EqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
