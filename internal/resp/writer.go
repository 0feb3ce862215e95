package resp

import "io"

// A Writer buffers replies for one connection and writes them with one call per Flush.
// Its methods encode for the protocol version in Proto: the types that RESP2 lacks are sent in
// their RESP2 form (a map as a flat array, a boolean as 1 or 0, a null as "$-1", a double or
// verbatim string as a bulk string). The first write error is kept: later Flushes return it and
// write nothing. A Writer is not safe for concurrent use.
type Writer struct {
	// Proto is the protocol version, 2 or 3; 0 means 2.
	Proto int
	// OnError, if not nil, is called with the message of every error reply written, for
	// statistics (Redis's errorstats).
	OnError func(msg string)

	dst io.Writer
	buf []byte
	err error
}

// NewWriter returns a RESP2 Writer to dst.
func NewWriter(dst io.Writer) *Writer { return &Writer{dst: dst} }

// Reset discards buffered output and any error and makes w write to dst.
func (w *Writer) Reset(dst io.Writer) { w.dst, w.buf, w.err = dst, w.buf[:0], nil }

// Buffered returns the number of bytes not yet flushed.
func (w *Writer) Buffered() int { return len(w.buf) }

// Cap returns the capacity of the buffer, for reporting memory.
func (w *Writer) Cap() int { return cap(w.buf) }

// Err returns the first error a Flush met, if any.
func (w *Writer) Err() error { return w.err }

// Bytes returns the buffered output, which stays valid until the next method call.
func (w *Writer) Bytes() []byte { return w.buf }

// Truncate discards all but the first n buffered bytes; it undoes what was appended after
// Buffered returned n.
func (w *Writer) Truncate(n int) { w.buf = w.buf[:n] }

// Flush writes the buffered output in one Write call.
func (w *Writer) Flush() error {
	if w.err != nil {
		w.buf = w.buf[:0]
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.dst.Write(w.buf)
	if cap(w.buf) > keepBuf {
		w.buf = nil // give back what one large reply grew
	} else {
		w.buf = w.buf[:0]
	}
	if err != nil {
		w.err = err
	}
	return err
}

// Clear discards the buffered output, as after writing it elsewhere, and gives back a buffer that
// one large reply grew.
func (w *Writer) Clear() {
	if cap(w.buf) > keepBuf {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
}

// Raw appends already encoded bytes.
func (w *Writer) Raw(p []byte) { w.buf = append(w.buf, p...) }

// Simple appends a simple string; s must not contain CR or LF.
func (w *Writer) Simple(s string) { w.buf = AppendSimple(w.buf, s) }

// OK appends "+OK".
func (w *Writer) OK() { w.buf = append(w.buf, "+OK\r\n"...) }

// Error appends an error reply; msg starts with its code ("ERR ...").
func (w *Writer) Error(msg string) {
	if w.OnError != nil {
		w.OnError(msg)
	}
	w.buf = AppendError(w.buf, msg)
}

// Int appends an integer.
func (w *Writer) Int(n int64) { w.buf = AppendInt(w.buf, n) }

// Bulk appends a bulk string.
func (w *Writer) Bulk(p []byte) { w.buf = AppendBulk(w.buf, p) }

// BulkString appends a bulk string.
func (w *Writer) BulkString(s string) { w.buf = AppendBulkString(w.buf, s) }

// Array appends the header of an array of n elements.
func (w *Writer) Array(n int) { w.buf = AppendArrayLen(w.buf, n) }

// Null appends a null: "$-1" in RESP2, "_" in RESP3.
func (w *Writer) Null() {
	if w.Proto == 3 {
		w.buf = AppendNull(w.buf)
	} else {
		w.buf = AppendNullBulk(w.buf)
	}
}

// NullArray appends a null array: "*-1" in RESP2, "_" in RESP3.
func (w *Writer) NullArray() {
	if w.Proto == 3 {
		w.buf = AppendNull(w.buf)
	} else {
		w.buf = AppendNullArray(w.buf)
	}
}

// Map appends the header of a map of n pairs: "%n" in RESP3, an array of 2n elements in RESP2.
func (w *Writer) Map(n int) {
	if w.Proto == 3 {
		w.buf = AppendMapLen(w.buf, n)
	} else {
		w.buf = AppendArrayLen(w.buf, 2*n)
	}
}

// Set appends the header of a set of n elements: "~n" in RESP3, an array in RESP2.
func (w *Writer) Set(n int) {
	if w.Proto == 3 {
		w.buf = AppendSetLen(w.buf, n)
	} else {
		w.buf = AppendArrayLen(w.buf, n)
	}
}

// Bool appends a boolean: "#t"/"#f" in RESP3, the integer 1 or 0 in RESP2.
func (w *Writer) Bool(v bool) {
	switch {
	case w.Proto == 3:
		w.buf = AppendBool(w.buf, v)
	case v:
		w.buf = append(w.buf, ":1\r\n"...)
	default:
		w.buf = append(w.buf, ":0\r\n"...)
	}
}

// Double appends a double: "," in RESP3, a bulk string in RESP2.
func (w *Writer) Double(f float64) {
	if w.Proto == 3 {
		w.buf = AppendDouble(w.buf, f)
		return
	}
	var tmp [32]byte
	w.buf = AppendBulk(w.buf, appendFloat(tmp[:0], f))
}

// Verbatim appends text (INFO, CLIENT LIST): a verbatim "txt" string in RESP3, a bulk string in
// RESP2.
func (w *Writer) Verbatim(s string) {
	if w.Proto == 3 {
		w.buf = AppendVerbatim(w.buf, s)
	} else {
		w.buf = AppendBulkString(w.buf, s)
	}
}
