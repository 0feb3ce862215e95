// Package value holds bloomd's value types beyond filters: strings, which the bitmap commands
// treat as arrays of bits, and hashes. It follows Redis 7.0.15 (t_string.c, bitops.c,
// t_hash.c): each type's operations with Redis's replies, limits and error texts, its memory
// charge, and its encoding in bloomd's snapshot. The server (internal/server) stays the command
// table: its handlers look keys up, take locks, journal and reply, and call this package for the
// rest.
package value
