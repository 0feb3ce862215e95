package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// A key on a server is one of three kinds of filter for bloom test and bloom info: a Bloom
// filter of RedisBloom's BF.* commands (TYPE MBbloom--, in bloomd or Redis with RedisBloom), a
// cuckoo filter of its CF.* commands (MBbloomCF), or a plain string of bits written with SETBIT,
// whose parameters only the flags can give (plain.go). TYPE tells them apart.
const (
	typeBloom  = "MBbloom--"
	typeCuckoo = "MBbloomCF"
)

// keyType returns the TYPE of t's key, or an error saying why it holds no filter.
func keyType(ctx context.Context, c *redis.Client, t redisTarget) (string, error) {
	typ, err := c.Type(ctx, t.key).Result()
	if err != nil {
		return "", serverError(t, err)
	}
	switch typ {
	case typeBloom, typeCuckoo, "string":
		return typ, nil
	case "none":
		return "", fmt.Errorf("%s holds no filter: the key does not exist", t.display)
	}
	return "", fmt.Errorf("%s holds a Redis %s, not a filter", t.display, typ)
}

// plainOnly is the error for a plain key's flags given with a key that holds a RedisBloom filter.
func plainOnly(t redisTarget, typ string) error {
	return fmt.Errorf("%s is a RedisBloom %s filter (TYPE %s), which knows its own parameters; --m, --k, --scheme, --bit-order and --rule describe a plain string of bits: drop them", t.display, moduleKind(typ), typ)
}

// needPlainFlags is the error for a plain string given without its parameters.
func needPlainFlags(t redisTarget, what string) error {
	return fmt.Errorf("%s is a plain Redis string; %s it as a string of bits written with SETBIT, its parameters must be given: --m --k --scheme --bit-order, or --rule spring-helper -n N -p P", t.display, what)
}

func moduleKind(typ string) string {
	if typ == typeCuckoo {
		return "cuckoo"
	}
	return "Bloom"
}

// moduleTest returns a testMany for a RedisBloom filter of type typ: BF.MEXISTS or CF.MEXISTS,
// one round trip per batch.
func moduleTest(ctx context.Context, c *redis.Client, t redisTarget, typ string) func(dst []bool, keys [][]byte) ([]bool, error) {
	name := "BF.MEXISTS"
	if typ == typeCuckoo {
		name = "CF.MEXISTS"
	}
	return func(dst []bool, keys [][]byte) ([]bool, error) {
		args := make([]any, 0, 2+len(keys))
		args = append(args, name, t.key)
		for _, k := range keys {
			args = append(args, k)
		}
		v, err := c.Do(ctx, args...).Slice()
		if err != nil {
			return dst, serverError(t, err)
		}
		if len(v) != len(keys) {
			return dst, fmt.Errorf("%s answered %s for %d items with %d values", t.addr, name, len(keys), len(v))
		}
		for _, x := range v {
			switch x := x.(type) {
			case int64: // RESP2, and RedisBloom 2.6 in RESP3
				dst = append(dst, x != 0)
			case bool: // RESP3 booleans, as later RedisBloom versions answer
				dst = append(dst, x)
			default:
				return dst, fmt.Errorf("%s answered %s with a %T, not 0 or 1", t.addr, name, x)
			}
		}
		return dst, nil
	}
}

// A moduleInfo is what BF.INFO or CF.INFO says of a filter, in the order the server said it.
type moduleInfo struct {
	typ    string // MBbloom-- or MBbloomCF
	fields []infoField
}

// An infoField is one field of BF.INFO or CF.INFO; a nil value is the server's null (RedisBloom
// gives a non-scaling filter's expansion rate as null).
type infoField struct {
	name  string
	value *int64
}

// moduleInfoOf asks the server for BF.INFO or CF.INFO of t's key.
func moduleInfoOf(ctx context.Context, c *redis.Client, t redisTarget, typ string) (*moduleInfo, error) {
	name := "BF.INFO"
	if typ == typeCuckoo {
		name = "CF.INFO"
	}
	v, err := c.Do(ctx, name, t.key).Result()
	if err != nil {
		return nil, serverError(t, err)
	}
	info := &moduleInfo{typ: typ}
	add := func(k, val any) error {
		ks, ok := k.(string)
		f := infoField{name: ks}
		switch val := val.(type) {
		case int64:
			f.value = &val
		case nil:
		default:
			ok = false
		}
		if !ok {
			return fmt.Errorf("%s answered %s with a field %v = %v (%T), not a name and a number", t.addr, name, k, val, val)
		}
		info.fields = append(info.fields, f)
		return nil
	}
	switch v := v.(type) {
	case []any: // RESP2: name, value, name, value, ...
		if len(v)%2 != 0 {
			return nil, fmt.Errorf("%s answered %s with %d values, not pairs", t.addr, name, len(v))
		}
		for i := 0; i < len(v); i += 2 {
			if err := add(v[i], v[i+1]); err != nil {
				return nil, err
			}
		}
	case map[any]any: // RESP3: a map, in no order; RedisBloom's order is kept
		for _, k := range []string{"Capacity", "Size", "Number of buckets", "Number of filters", "Number of items inserted",
			"Number of items deleted", "Bucket size", "Expansion rate", "Max iterations"} {
			if val, ok := v[k]; ok {
				if err := add(k, val); err != nil {
					return nil, err
				}
			}
		}
	default:
		return nil, fmt.Errorf("%s answered %s with a %T, not a list of fields", t.addr, name, v)
	}
	return info, nil
}

// print writes the fields as bloom info prints a file's description, one "name: value" a line,
// under the server's own field names, which RedisBloom's documentation explains.
func (m *moduleInfo) print(w io.Writer, t redisTarget) {
	kind := "RedisBloom Bloom filter (BF.INFO)"
	if m.typ == typeCuckoo {
		kind = "RedisBloom cuckoo filter (CF.INFO)"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "key:\t%s\n", t.display)
	fmt.Fprintf(tw, "type:\t%s, TYPE %s\n", kind, m.typ)
	for _, f := range m.fields {
		var v string
		switch {
		case f.value == nil && f.name == "Expansion rate":
			v = "none (non-scaling)"
		case f.value == nil:
			v = "null"
		case *f.value < 0:
			v = fmt.Sprint(*f.value)
		case f.name == "Size":
			v = fmt.Sprintf("%s bytes (%s)", group(uint64(*f.value)), bloom.FormatBytes(uint64(*f.value)))
		default:
			v = group(uint64(*f.value))
		}
		fmt.Fprintf(tw, "%s:\t%s\n", f.name, v)
	}
	tw.Flush()
}

// writeJSON writes the fields as one JSON object: the URL, the TYPE and the server's fields by
// their names (null where the server said null).
func (m *moduleInfo) writeJSON(w io.Writer, t redisTarget) error {
	fields := map[string]*int64{}
	for _, f := range m.fields {
		fields[f.name] = f.value
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		URL    string            `json:"url"`
		Type   string            `json:"type"`
		Fields map[string]*int64 `json:"info"`
	}{t.display, m.typ, fields})
}

// A redisKey is a redis:// key that bloom test or bloom info reads: its connection, its TYPE
// (a RedisBloom filter's, or "string"), and for a plain string the parameters the flags gave.
type redisKey struct {
	t      redisTarget
	c      *redis.Client
	typ    string
	params redisfilter.PlainParams
}

// openRedisKey connects to the key arg names and checks that the plain-key flags fit what it
// holds: given only with a redis:// URL, not with a RedisBloom filter. The caller closes k.c.
func openRedisKey(ctx context.Context, rf *remoteFlags, pf *plainFlags, arg string) (*redisKey, error) {
	if !isRedisURL(arg) {
		return nil, fmt.Errorf("--m, --k, --scheme, --bit-order and --rule describe a plain Redis key; give a redis:// URL instead of %s", quote(arg))
	}
	t, err := parseRedisURL(arg)
	if err != nil {
		return nil, err
	}
	k := &redisKey{t: t}
	if pf.given() {
		if k.params, err = pf.params(); err != nil {
			return nil, err
		}
	}
	if k.c, err = rf.connect(ctx, t); err != nil {
		return nil, err
	}
	if k.typ, err = keyType(ctx, k.c, t); err != nil {
		k.c.Close()
		return nil, err
	}
	if k.typ != "string" && pf.given() {
		k.c.Close()
		return nil, plainOnly(t, k.typ)
	}
	return k, nil
}
