package resp

import (
	"fmt"
	"strconv"
	"strings"
)

// A Value is one RESP2 or RESP3 value as a client receives it.
type Value struct {
	// Kind is the type byte: '+' simple string, '-' error, ':' integer, '$' bulk string,
	// '*' array, '_' null, '#' boolean, ',' double, '(' big number, '!' bulk error,
	// '=' verbatim string, '%' map, '~' set, '>' push.
	Kind byte
	// Str is the payload of strings, errors, doubles and big numbers (a verbatim string's
	// includes its "txt:" prefix).
	Str []byte
	// Int is the value of an integer, and 1 or 0 for a boolean.
	Int int64
	// Null marks "$-1" and "*-1" (Kind '$' or '*') and "_" (Kind '_').
	Null bool
	// Elems are the elements of an aggregate; a map's are key, value, key, value, ...
	Elems []Value
	// Attrs is the RESP3 attribute map ('|') that preceded the value, as key, value, ...
	Attrs []Value
}

// IsError reports whether v is an error reply ('-' or '!').
func (v Value) IsError() bool { return v.Kind == '-' || v.Kind == '!' }

// Text returns the payload of a string-like value, or the decimal form of an integer.
func (v Value) Text() string {
	if v.Kind == ':' {
		return strconv.FormatInt(v.Int, 10)
	}
	return string(v.Str)
}

// String formats v for test failures and debugging, in the style of redis-cli.
func (v Value) String() string {
	var sb strings.Builder
	v.format(&sb)
	return sb.String()
}

func (v Value) format(sb *strings.Builder) {
	switch {
	case v.Null:
		sb.WriteString("(nil)")
	case v.Kind == ':':
		fmt.Fprintf(sb, "(integer) %d", v.Int)
	case v.Kind == '#':
		fmt.Fprintf(sb, "(boolean) %t", v.Int != 0)
	case v.Kind == '-' || v.Kind == '!':
		fmt.Fprintf(sb, "(error) %s", v.Str)
	case v.Kind == '$' || v.Kind == '=' || v.Kind == '+' || v.Kind == ',' || v.Kind == '(':
		sb.WriteString(strconv.Quote(string(v.Str)))
	default:
		sb.WriteByte('[')
		for i, e := range v.Elems {
			if i > 0 {
				sb.WriteString(", ")
			}
			e.format(sb)
		}
		sb.WriteByte(']')
	}
}

// AppendValue appends the encoding of v to b. Values read by ReadReply re-encode to the bytes
// they were read from, except that an integer is written in canonical decimal.
func AppendValue(b []byte, v Value) []byte {
	if v.Attrs != nil {
		b = appendLen(b, '|', len(v.Attrs)/2)
		for _, e := range v.Attrs {
			b = AppendValue(b, e)
		}
	}
	switch v.Kind {
	case '+', '-', ',', '(':
		b = append(b, v.Kind)
		b = append(b, v.Str...)
		return append(b, '\r', '\n')
	case ':':
		return AppendInt(b, v.Int)
	case '#':
		return AppendBool(b, v.Int != 0)
	case '_':
		return append(b, '_', '\r', '\n')
	case '$', '!', '=':
		if v.Null {
			return append(b, '$', '-', '1', '\r', '\n')
		}
		b = appendLen(b, v.Kind, len(v.Str))
		b = append(b, v.Str...)
		return append(b, '\r', '\n')
	case '*', '~', '>', '%':
		if v.Null {
			return append(b, '*', '-', '1', '\r', '\n')
		}
		n := len(v.Elems)
		if v.Kind == '%' {
			n /= 2
		}
		b = appendLen(b, v.Kind, n)
		for _, e := range v.Elems {
			b = AppendValue(b, e)
		}
		return b
	}
	panic("resp: AppendValue of unknown kind " + strconv.Quote(string(v.Kind)))
}

// ReadReply reads the next value of any RESP2 or RESP3 type. It allocates the value it returns,
// which stays valid after further reads. Malformed input, or input past the limits or deeper
// than Limits.MaxDepth, returns a *ProtocolError.
func (r *Reader) ReadReply() (Value, error) {
	for {
		v, next, err := r.parseValue(r.start, 0)
		if err != nil {
			return Value{}, err
		}
		if next > 0 {
			r.start = next
			return v, nil
		}
		if err := r.fill(); err != nil {
			return Value{}, err
		}
	}
}

// parseValue parses the value starting at p. next is 0 when more input is needed.
func (r *Reader) parseValue(p, depth int) (v Value, next int, err error) {
	if p >= r.end {
		return v, 0, nil
	}
	if depth > r.maxDepth() {
		return v, 0, protoErr("reply nested too deeply")
	}
	kind := r.buf[p]
	line, next, ok, err := r.line(p+1, "too big reply header")
	if !ok {
		return v, 0, err
	}
	v.Kind = kind
	switch kind {
	case '+', '-', ',', '(':
		if len(line) > 0 && line[len(line)-1] == '\r' {
			return v, 0, protoErr("invalid reply line")
		}
		v.Str = append([]byte{}, line...)
		return v, next, nil
	case ':':
		n, ok := parseInt(line)
		if !ok {
			return v, 0, protoErr("invalid integer")
		}
		v.Int = n
		return v, next, nil
	case '#':
		if len(line) != 1 || line[0] != 't' && line[0] != 'f' {
			return v, 0, protoErr("invalid boolean")
		}
		if line[0] == 't' {
			v.Int = 1
		}
		return v, next, nil
	case '_':
		if len(line) != 0 {
			return v, 0, protoErr("invalid null")
		}
		v.Null = true
		return v, next, nil
	case '$', '!', '=':
		n, ok := parseInt(line)
		if ok && n == -1 && kind == '$' {
			v.Null = true
			return v, next, nil
		}
		if !ok || n < 0 || n > int64(r.maxBulk()) {
			return v, 0, protoErr("invalid bulk length")
		}
		end := next + int(n)
		if end+2 > r.end {
			return v, 0, nil
		}
		if r.buf[end] != '\r' || r.buf[end+1] != '\n' {
			return v, 0, protoErr("bulk string not terminated by CRLF")
		}
		v.Str = append([]byte{}, r.buf[next:end]...)
		return v, end + 2, nil
	case '*', '%', '~', '>', '|':
		n, ok := parseInt(line)
		if ok && n == -1 && kind == '*' {
			v.Null = true
			return v, next, nil
		}
		if !ok || n < 0 || n > int64(r.maxElems()) {
			return v, 0, protoErr("invalid multibulk length")
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		elems := make([]Value, 0, min(n, 64))
		for range n {
			e, nx, err := r.parseValue(next, depth+1)
			if nx == 0 {
				return v, 0, err
			}
			elems = append(elems, e)
			next = nx
		}
		if kind != '|' {
			v.Elems = elems
			return v, next, nil
		}
		// An attribute map decorates the value that follows it.
		v, next, err = r.parseValue(next, depth+1)
		if next == 0 {
			return v, 0, err
		}
		if v.Attrs != nil {
			return v, 0, protoErr("two attributes for one value")
		}
		v.Attrs = elems
		return v, next, nil
	}
	return v, 0, protoErr("unknown reply type '" + printable(kind) + "'")
}
