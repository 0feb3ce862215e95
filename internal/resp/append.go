package resp

import (
	"math"
	"strconv"
)

// The Append functions append one encoded value to b and return the extended slice. Those that
// differ between RESP2 and RESP3 are methods of Writer.

// AppendSimple appends a simple string, "+s\r\n". s must not contain CR or LF.
func AppendSimple(b []byte, s string) []byte {
	b = append(b, '+')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendError appends an error reply, "-msg\r\n". msg carries its own code ("ERR ...",
// "WRONGTYPE ..."); CR and LF in it become spaces, as in Redis, so it stays one line.
func AppendError(b []byte, msg string) []byte {
	b = append(b, '-')
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return append(b, '\r', '\n')
}

// AppendInt appends an integer, ":n\r\n".
func AppendInt(b []byte, n int64) []byte {
	if n >= 0 && n < 10 {
		return append(b, ':', byte('0'+n), '\r', '\n')
	}
	b = append(b, ':')
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

// AppendBulk appends a bulk string, "$len\r\np\r\n".
func AppendBulk(b []byte, p []byte) []byte {
	b = appendLen(b, '$', len(p))
	b = append(b, p...)
	return append(b, '\r', '\n')
}

// AppendBulkString appends a bulk string, "$len\r\ns\r\n".
func AppendBulkString(b []byte, s string) []byte {
	b = appendLen(b, '$', len(s))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendArrayLen appends the header of an array of n elements, "*n\r\n".
func AppendArrayLen(b []byte, n int) []byte { return appendLen(b, '*', n) }

// AppendNullBulk appends RESP2's null bulk string, "$-1\r\n".
func AppendNullBulk(b []byte) []byte { return append(b, '$', '-', '1', '\r', '\n') }

// AppendNullArray appends RESP2's null array, "*-1\r\n".
func AppendNullArray(b []byte) []byte { return append(b, '*', '-', '1', '\r', '\n') }

// AppendNull appends RESP3's null, "_\r\n".
func AppendNull(b []byte) []byte { return append(b, '_', '\r', '\n') }

// AppendBool appends a RESP3 boolean, "#t\r\n" or "#f\r\n".
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, '#', 't', '\r', '\n')
	}
	return append(b, '#', 'f', '\r', '\n')
}

// AppendMapLen appends the header of a RESP3 map of n pairs, "%n\r\n".
func AppendMapLen(b []byte, n int) []byte { return appendLen(b, '%', n) }

// AppendSetLen appends the header of a RESP3 set of n elements, "~n\r\n".
func AppendSetLen(b []byte, n int) []byte { return appendLen(b, '~', n) }

// AppendDouble appends a RESP3 double, ",f\r\n", formatted as Redis does (%.17g, inf, -inf, nan).
func AppendDouble(b []byte, f float64) []byte {
	b = append(b, ',')
	b = appendFloat(b, f)
	return append(b, '\r', '\n')
}

func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	}
	return strconv.AppendFloat(b, f, 'g', 17, 64)
}

// AppendVerbatim appends a RESP3 verbatim string of format "txt", "=len\r\ntxt:s\r\n".
func AppendVerbatim(b []byte, s string) []byte {
	b = appendLen(b, '=', len(s)+4)
	b = append(b, "txt:"...)
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendCommand appends a request as clients send it: an array of bulk strings.
func AppendCommand(b []byte, args ...[]byte) []byte {
	b = AppendArrayLen(b, len(args))
	for _, a := range args {
		b = AppendBulk(b, a)
	}
	return b
}

func appendLen(b []byte, kind byte, n int) []byte {
	if n >= 0 && n < 10 {
		return append(b, kind, byte('0'+n), '\r', '\n')
	}
	b = append(b, kind)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}
