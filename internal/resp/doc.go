// Package resp reads and writes the Redis serialization protocol, RESP2 and RESP3.
//
// One Reader parses both directions of the protocol: ReadCommand reads requests as a server
// receives them (arrays of bulk strings, or inline commands typed into a terminal, split like
// Redis's sdssplitargs), and ReadReply reads any RESP2 or RESP3 value as a client receives it.
// The Reader enforces limits like Redis (bulk length, element count, inline and header line
// length) and reports a violation as a *ProtocolError whose text is the one Redis sends, before
// anything large is allocated: buffers grow only as bytes actually arrive.
//
// Replies are encoded by plain Append functions over a []byte, and by a Writer that adds the
// choice between RESP2 and RESP3 for the types that differ (nulls, maps, sets, booleans, doubles,
// verbatim strings), keeps the first write error and writes its buffer in one call to Flush.
// A server answers a pipelined batch with one Flush by flushing only before the Reader would
// block (see Reader.BeforeRead).
//
// ReadCommand is allocation-free in the steady state: the returned arguments are slices of the
// Reader's buffer, valid until the next call.
package resp
