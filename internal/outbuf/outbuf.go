package outbuf

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
)

// A Class is a kind of client, each with its own limit.
type Class int

// The classes, in Redis's order (CONFIG GET lists them so).
const (
	Normal  Class = iota // every client that is none of the others, MONITOR clients included
	Replica              // a replica's link
	PubSub               // a client subscribed to at least one channel or pattern
	NumClasses
)

// String returns the class's name as CONFIG GET writes it: normal, slave or pubsub.
func (c Class) String() string {
	switch c {
	case Normal:
		return "normal"
	case Replica:
		return "slave"
	case PubSub:
		return "pubsub"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// rewriteName is the class's name in a rewritten config file, where Redis writes "replica".
func (c Class) rewriteName() string {
	if c == Replica {
		return "replica"
	}
	return c.String()
}

// classByName finds a class as Redis's getClientTypeByName does, in any case: normal, slave,
// replica, pubsub. "master" is a class in Redis but has no limit of its own.
func classByName(s string) (Class, bool) {
	switch strings.ToLower(s) {
	case "normal":
		return Normal, true
	case "slave", "replica":
		return Replica, true
	case "pubsub":
		return PubSub, true
	}
	return 0, false
}

// A Limit bounds one class's output: a client whose unwritten output reaches Hard bytes is
// closed at once; one at or over Soft bytes for more than SoftSeconds seconds in a row is closed
// too. 0 bytes means no such limit.
type Limit struct {
	Hard, Soft  uint64
	SoftSeconds int64
}

// Limits are the limits of every class: the setting client-output-buffer-limit.
type Limits [NumClasses]Limit

// Default returns Redis 7.0's defaults: normal 0 0 0, replica 256mb 64mb 60, pubsub 32mb 8mb 60.
func Default() Limits {
	return Limits{
		Normal:  {},
		Replica: {Hard: 256 << 20, Soft: 64 << 20, SoftSeconds: 60},
		PubSub:  {Hard: 32 << 20, Soft: 8 << 20, SoftSeconds: 60},
	}
}

// The errors of Set, in Redis 7.0's words (CONFIG SET quotes them after its own prefix).
var (
	//lint:ignore ST1005 Redis 7.0's wording, which CONFIG SET returns as it is
	ErrArgs = errors.New("Wrong number of arguments in buffer limit configuration.")
	//lint:ignore ST1005 Redis 7.0's wording
	ErrClass = errors.New("Invalid client class specified in buffer limit configuration.")
	//lint:ignore ST1005 Redis 7.0's wording
	ErrValue = errors.New("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
)

// Set applies a value of client-output-buffer-limit as CONFIG SET takes it: groups of four
// words "class hard soft soft-seconds", separated by single spaces (as Redis splits the
// value: two spaces in a row make an empty word). Classes the value does not name keep their
// limits; a class named twice takes the last. The value is checked whole before anything
// changes, so an error leaves l as it was. An empty value changes nothing.
func (l *Limits) Set(value string) error {
	if value == "" {
		return nil
	}
	return l.SetArgs(strings.Split(value, " "))
}

// SetArgs is Set for words already split, as a config file's line gives them.
func (l *Limits) SetArgs(args []string) error {
	if len(args)%4 != 0 {
		return ErrArgs
	}
	next := *l
	for i := 0; i < len(args); i += 4 {
		class, ok := classByName(args[i])
		if !ok {
			return ErrClass
		}
		hard, err1 := ParseBytes(args[i+1])
		soft, err2 := ParseBytes(args[i+2])
		secs, err3 := parseSeconds(args[i+3])
		if err1 != nil || err2 != nil || err3 != nil {
			return ErrValue
		}
		next[class] = Limit{Hard: hard, Soft: soft, SoftSeconds: secs}
	}
	*l = next
	return nil
}

// String formats the limits as CONFIG GET shows them: every class, its limits in bytes,
// "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60".
func (l Limits) String() string {
	var b []byte
	for c := range NumClasses {
		if c > 0 {
			b = append(b, ' ')
		}
		b = append(b, c.String()...)
		b = append(b, ' ')
		b = strconv.AppendUint(b, l[c].Hard, 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, l[c].Soft, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, l[c].SoftSeconds, 10)
	}
	return string(b)
}

// A Line is one class's line of a rewritten config file (without the setting's name), and
// whether it differs from the default.
type Line struct {
	Text    string // "replica 256mb 64mb 60"
	Changed bool
}

// Lines returns the config-file lines CONFIG REWRITE writes for l, one per class in Redis's
// order, sizes in the largest unit that divides them (gb, mb, kb), as Redis writes them. Redis
// puts them in place of the setting's lines already in the file, in this order, and appends
// those left over only if they differ from def.
func (l Limits) Lines(def Limits) []Line {
	out := make([]Line, 0, NumClasses)
	for c := range NumClasses {
		text := c.rewriteName() + " " + FormatBytes(l[c].Hard) + " " + FormatBytes(l[c].Soft) + " " + strconv.FormatInt(l[c].SoftSeconds, 10)
		out = append(out, Line{Text: text, Changed: l[c] != def[c]})
	}
	return out
}

// ParseBytes parses a size as Redis's memtoull does: digits, then optionally a unit in any
// case: b, k (1000), kb (1024), m (1000²), mb (1024²), g (1000³), gb (1024³). No digits at all
// read as 0, as in Redis ("mb" is 0). Unlike Redis, which wraps such values around, a size
// that does not fit in 64 bits is an error.
func ParseBytes(s string) (uint64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	var mul uint64
	switch strings.ToLower(s[i:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1 << 10
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1 << 20
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1 << 30
	default:
		return 0, ErrValue
	}
	if i == 0 {
		return 0, nil
	}
	if i >= 128 { // Redis copies the digits into a 128-byte buffer
		return 0, ErrValue
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil || n > ^uint64(0)/mul {
		return 0, ErrValue
	}
	return n * mul, nil
}

// FormatBytes writes a size as Redis's CONFIG REWRITE does: in gb, mb or kb when one of them
// divides it, else in bytes.
func FormatBytes(n uint64) string {
	switch {
	case n != 0 && n%(1<<30) == 0:
		return strconv.FormatUint(n>>30, 10) + "gb"
	case n != 0 && n%(1<<20) == 0:
		return strconv.FormatUint(n>>20, 10) + "mb"
	case n != 0 && n%(1<<10) == 0:
		return strconv.FormatUint(n>>10, 10) + "kb"
	}
	return strconv.FormatUint(n, 10)
}

// parseSeconds parses soft-seconds as Redis reads it with strtoll: optional leading blanks, an
// optional sign, digits; the empty string is 0. Negative values are refused, as in Redis, and
// so are values past 2³¹-1, which Redis truncates into an int.
func parseSeconds(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	if t != "" && t[0] == '+' {
		t = t[1:]
		if t != "" && (t[0] == '+' || t[0] == '-') {
			return 0, ErrValue
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > 1<<31-1 {
		return 0, ErrValue
	}
	return n, nil
}

// Over reports whether a client of this limit's class with used bytes of unwritten output is
// to be closed, as Redis's checkClientOutputBufferLimits decides: at once at the hard limit;
// at the soft limit once it has been reached continuously for more than SoftSeconds. since
// holds the unix second at which the client was first seen at or over the soft limit (0 while
// it is under it); Over updates it. now returns the current unix second; it is called only when
// the soft limit is reached. Over is safe for concurrent use on one since.
func (l Limit) Over(used int64, now func() int64, since *atomic.Int64) bool {
	u := uint64(max(used, 0))
	hard := l.Hard != 0 && u >= l.Hard
	if l.Soft != 0 && u >= l.Soft {
		t := now()
		first := since.Load()
		if first == 0 {
			since.CompareAndSwap(0, t) // first seen: not yet
		} else if t-first > l.SoftSeconds {
			return true
		}
	} else if since.Load() != 0 {
		since.Store(0)
	}
	return hard
}

// Off reports whether the limit limits nothing (0 0 0, the normal class's default).
func (l Limit) Off() bool { return l.Hard == 0 && l.Soft == 0 }
