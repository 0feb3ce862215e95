package script

import (
	"bytes"
	"errors"
)

// Flags are a script's flags, as its shebang line declares them ("#!lua flags=no-writes").
type Flags uint32

const (
	FlagNoWrites       Flags = 1 << iota // no-writes: the script may not call write commands
	FlagAllowOOM                         // allow-oom: deny-oom commands run over maxmemory
	FlagAllowStale                       // allow-stale: runs on a stale replica
	FlagNoCluster                        // no-cluster: refused in cluster mode
	FlagAllowCrossSlot                   // allow-cross-slot-keys
	// FlagCompat marks a script without a shebang line: Redis 6's rules (writes allowed,
	// and the flags above do not apply).
	FlagCompat
)

var flagNames = []struct {
	f    Flags
	name string
}{
	{FlagNoWrites, "no-writes"}, {FlagAllowOOM, "allow-oom"}, {FlagAllowStale, "allow-stale"},
	{FlagNoCluster, "no-cluster"}, {FlagAllowCrossSlot, "allow-cross-slot-keys"},
}

// ParseShebang reads the flags of a script body, as Redis 7.0's evalExtractShebangFlags: a body
// that does not start with "#!" has FlagCompat; one that does must have a first line "#!lua"
// followed by at most "flags=a,b" options. It returns the flags and the length of the shebang
// line (without its newline, which the compiled body keeps so that line numbers stay the
// user's), or an error whose text is Redis's.
func ParseShebang(body []byte) (Flags, int, error) {
	if !bytes.HasPrefix(body, []byte("#!")) {
		return FlagCompat, 0, nil
	}
	// Redis works on C strings here: the line ends at the first newline, and a NUL before it
	// ends the string (so there is no newline).
	end := bytes.IndexAny(body, "\n\x00")
	if end < 0 || body[end] == 0 {
		return 0, 0, errRedis("Invalid script shebang")
	}
	parts, ok := splitArgs(body[:end])
	if !ok || len(parts) == 0 {
		return 0, 0, errRedis("Invalid engine in script shebang")
	}
	if cstr(parts[0]) != "#!lua" {
		return 0, 0, errors.New("Unexpected engine in script shebang: " + cstr(parts[0]))
	}
	var flags Flags
	for _, p := range parts[1:] {
		if !bytes.HasPrefix([]byte(cstr(p)), []byte("flags=")) {
			return 0, 0, errors.New("Unknown lua shebang option: " + cstr(p))
		}
		rest := p[len("flags="):]
		if len(rest) == 0 {
			continue
		}
		for _, name := range bytes.Split(rest, []byte(",")) {
			f := flagByName(cstr(name))
			if f == 0 {
				return 0, 0, errors.New("Unexpected flag in script shebang: " + cstr(name))
			}
			flags |= f
		}
	}
	return flags, end, nil
}

// errRedis is an error whose text is Redis's reply (without "ERR "), capitals included.
func errRedis(msg string) error { return errors.New(msg) }

func flagByName(name string) Flags {
	for _, f := range flagNames {
		if f.name == name {
			return f.f
		}
	}
	return 0
}

// cstr returns b as C sees it: up to its first NUL.
func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// splitArgs splits a line into arguments as Redis's sdssplitargs does (the same rules as
// redis-cli's): blanks separate arguments; "double quotes" take \n \r \t \b \a, \xHH and \c
// escapes; 'single quotes' take \'; a closing quote must be followed by a blank or the end.
// ok is false for unbalanced quotes. Hand-written because the rules are Redis's own; fuzzed by
// FuzzShebang.
func splitArgs(line []byte) (args [][]byte, ok bool) {
	p := 0
	at := func(i int) byte {
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p >= len(line) {
			return args, true
		}
		var cur []byte
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					cur = append(cur, unhex(at(p+2))<<4|unhex(at(p+3)))
					p += 3
				case c == '\\' && p+1 < len(line):
					p++
					switch e := line[p]; e {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, e)
					}
				case c == '"':
					if p+1 < len(line) && !isSpace(line[p+1]) {
						return nil, false
					}
					done = true
				case p >= len(line):
					return nil, false
				default:
					cur = append(cur, c)
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					cur = append(cur, '\'')
				case c == '\'':
					if p+1 < len(line) && !isSpace(line[p+1]) {
						return nil, false
					}
					done = true
				case p >= len(line):
					return nil, false
				default:
					cur = append(cur, c)
				}
			default:
				switch {
				case p >= len(line) || c == ' ' || c == '\n' || c == '\r' || c == '\t':
					done = true
				case c == '"':
					inq = true
				case c == '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			if p < len(line) {
				p++
			}
		}
		if cur == nil {
			cur = []byte{}
		}
		args = append(args, cur)
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
