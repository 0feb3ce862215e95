package value

// Redis 7.0's error replies for the commands of this package, as redis-server writes them
// (addReplyError prefixes "ERR "). The server sends them unchanged.
const (
	ErrSyntax      = "ERR syntax error"
	ErrNotInt      = "ERR value is not an integer or out of range"
	ErrBitOffset   = "ERR bit offset is not an integer or out of range"
	ErrBitValue    = "ERR bit is not an integer or out of range"
	ErrTooBig      = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	ErrOffsetRange = "ERR offset is out of range"
	ErrBitArg      = "ERR The bit argument must be 1 or 0."
	ErrBitopNot    = "ERR BITOP NOT must be called with a single source key."
	ErrFieldType   = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	ErrOverflowArg = "ERR Invalid OVERFLOW type specified"
	ErrBitfieldRO  = "ERR BITFIELD_RO only supports the GET subcommand"
	ErrHashNotInt  = "ERR hash value is not an integer"
	ErrHashNotFlt  = "ERR hash value is not a float"
	ErrIncrOverflo = "ERR increment or decrement would overflow"
	ErrNotFloat    = "ERR value is not a valid float"
	ErrNaNArg      = "ERR value is NaN or Infinity"
	ErrNaNResult   = "ERR increment would produce NaN or Infinity"
	ErrOutOfRange  = "ERR value is out of range"
	ErrCount       = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
	ErrCursor      = "ERR invalid cursor"
)
