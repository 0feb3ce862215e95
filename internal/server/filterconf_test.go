package server

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/filterconf"
	"github.com/bloomd/bloom/internal/resp"
)

// infoOf returns the fields of a BF.INFO or CF.INFO reply (RESP2: label, value, ...).
func infoOf(t testing.TB, c *rawClient, cmd, key string) map[string]resp.Value {
	t.Helper()
	v := c.do(cmd, key)
	if v.IsError() || len(v.Elems)%2 != 0 {
		t.Fatalf("%s %s: %v", cmd, key, v)
	}
	out := map[string]resp.Value{}
	for i := 0; i < len(v.Elems); i += 2 {
		out[v.Elems[i].Text()] = v.Elems[i+1]
	}
	return out
}

// debugRatio returns the error rate of a Bloom filter's first sub-filter, from BF.DEBUG.
func debugRatio(t testing.TB, c *rawClient, key string) string {
	t.Helper()
	v := c.do("BF.DEBUG", key)
	if len(v.Elems) < 2 {
		t.Fatalf("BF.DEBUG %s: %v", key, v)
	}
	_, r, ok := strings.Cut(v.Elems[1].Text(), "ratio:")
	if !ok {
		t.Fatalf("BF.DEBUG %s: no ratio in %q", key, v.Elems[1].Text())
	}
	return strings.Fields(r)[0]
}

// The CONFIG SET errors of Redis 8: its "CONFIG SET failed (possibly related to argument '%s')
// - %s" around RedisBloom v8.0.0's messages (src/config.c, setIntegerValue and setFloatValue).
func TestFilterSettingsConfig(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	v := c.do("CONFIG", "GET", "bf-*")
	got := map[string]string{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		got[v.Elems[i].Text()] = v.Elems[i+1].Text()
	}
	want := map[string]string{"bf-error-rate": "0.01", "bf-initial-size": "100", "bf-expansion-factor": "2", "bf-max-filter-bytes": "0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("CONFIG GET bf-*: %v, want %v", got, want)
	}
	if v := c.do("CONFIG", "GET", "cf-*"); len(v.Elems) != 12 {
		t.Errorf("CONFIG GET cf-*: %v, want 6 settings", v)
	}
	setErr := func(name, value string) string {
		return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + value
	}
	for _, tc := range []struct{ name, value, want string }{
		{"bf-error-rate", "1", setErr("bf-error-rate", "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)")},
		{"bf-error-rate", "x", setErr("bf-error-rate", "Invalid value for `bf-error-rate`")},
		{"bf-initial-size", "0", setErr("bf-initial-size", "Value for `bf-initial-size` must be in the range [1, 1073741824]")},
		{"bf-expansion-factor", "32769", setErr("bf-expansion-factor", "Value for `bf-expansion-factor` must be in the range [0, 32768]")},
		{"cf-bucket-size", "256", setErr("cf-bucket-size", "Value for `cf-bucket-size` must be in the range [1, 255]")},
		{"cf-initial-size", "3", setErr("cf-initial-size", "Value for `cf-initial-size` must be in the range [4, 1073741824]")},
		{"cf-max-iterations", "65536", setErr("cf-max-iterations", "Value for `cf-max-iterations` must be in the range [1, 65535]")},
		{"cf-expansion-factor", "-1", setErr("cf-expansion-factor", "Value for `cf-expansion-factor` must be in the range [0, 32768]")},
		{"cf-max-expansions", "0", setErr("cf-max-expansions", "Value for `cf-max-expansions` must be in the range [1, 65536]")},
		{"bf-max-filter-bytes", "lots", setErr("bf-max-filter-bytes", "argument must be a memory value")},
		{"bf-error-rate", "0.5", "OK"},
		{"bf-max-filter-bytes", "1mb", "OK"},
	} {
		if v := c.do("CONFIG", "SET", tc.name, tc.value); v.Text() != tc.want {
			t.Errorf("CONFIG SET %s %s: %q, want %q", tc.name, tc.value, v.Text(), tc.want)
		}
	}
	// Redis 8 lowers an error rate above 0.25 to 0.25.
	if v := c.do("CONFIG", "GET", "bf-error-rate"); len(v.Elems) != 2 || v.Elems[1].Text() != "0.25" {
		t.Errorf("CONFIG GET bf-error-rate after setting 0.5: %v", v)
	}
	if v := c.do("CONFIG", "GET", "bf-max-filter-bytes"); len(v.Elems) != 2 || v.Elems[1].Text() != "1048576" {
		t.Errorf("CONFIG GET bf-max-filter-bytes after setting 1mb: %v", v)
	}
	// All or nothing: the second setting's error leaves the first unchanged.
	c.do("CONFIG", "SET", "cf-initial-size", "100")
	if v := c.do("CONFIG", "SET", "cf-max-iterations", "7", "cf-bucket-size", "51"); v.Text() != setErr("cf-bucket-size", "Value for `cf-bucket-size` must be in the range [1, 50]") {
		t.Errorf("CONFIG SET cf-bucket-size 51 with cf-initial-size 100: %q", v.Text())
	}
	if v := c.do("CONFIG", "GET", "cf-max-iterations"); v.Elems[1].Text() != "20" {
		t.Errorf("a refused CONFIG SET changed cf-max-iterations to %v", v.Elems[1])
	}
	if got := infoField(t, c, "bloom", "bf_error_rate"); got != "0.25" {
		t.Errorf("INFO bloom bf_error_rate = %q, want 0.25", got)
	}
	if got := infoField(t, c, "bloom", "bf_max_filter_bytes"); got != "1048576" {
		t.Errorf("INFO bloom bf_max_filter_bytes = %q", got)
	}
}

func TestFilterSettingsParse(t *testing.T) {
	conf := "bf-error-rate 0.001\ncf-bucket-size 4\nloadmodule /opt/redis/redisbloom.so INITIAL_SIZE 400 CF_MAX_EXPANSIONS 64\nloadmodule /opt/other.so X 1\n"
	c := DefaultConfig()
	if err := ParseConfig(strings.NewReader(conf), "test.conf", &c); err != nil {
		t.Fatal(err)
	}
	f := c.filterSettings()
	if f.BFErrorRate != 0.001 || f.BFInitialSize != 400 || f.CFBucketSize != 4 || f.CFMaxExpansions != 64 {
		t.Errorf("parsed %+v", *f)
	}
	if len(c.ignored) != 1 || c.ignored[0].name != "loadmodule" {
		t.Errorf("another module's loadmodule line: warnings %v", c.ignored)
	}
	for _, bad := range []struct{ conf, want string }{
		{"bf-initial-size 0\n", "test.conf line 1: bf-initial-size: Value for `bf-initial-size` must be in the range [1, 1073741824]"},
		{"loadmodule redisbloom.so ERROR_RATE 2\n", "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)"},
		{"loadmodule redisbloom.so ERROR_RATE\n", "come in pairs"},
		{"loadmodule redisbloom.so FOO 1\n", `not "FOO"`},
	} {
		c := DefaultConfig()
		err := ParseConfig(strings.NewReader(bad.conf), "test.conf", &c)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error with %q", bad.conf, err, bad.want)
		}
	}
	c, _, err := ParseArgs([]string{"--bf-expansion-factor", "0", "--cf-max-filter-bytes", "64kb", "--loadmodule", "/x/redisbloom.so", "ERROR_RATE", "0.002"})
	if err != nil {
		t.Fatal(err)
	}
	if f := c.filterSettings(); f.BFExpansion != 0 || f.CFMaxBytes != 64<<10 || f.BFErrorRate != 0.002 {
		t.Errorf("command line: %+v", *f)
	}
	if _, _, err := ParseArgs([]string{"--cf-max-expansions", "0"}); err == nil || !strings.Contains(err.Error(), "[1, 65536]") {
		t.Errorf("--cf-max-expansions 0: %v", err)
	}
}

// TestFilterSettingsApply changes the settings at run time and checks that the filters made
// afterwards take them, with a command's own options winning, and that filters made before
// keep theirs.
func TestFilterSettingsApply(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	c.do("BF.ADD", "old", "a")
	c.do("CF.ADD", "cfold", "a")
	if v := c.do("CONFIG", "SET", "bf-initial-size", "1000", "bf-error-rate", "0.001", "bf-expansion-factor", "4",
		"cf-initial-size", "2000", "cf-bucket-size", "4", "cf-max-iterations", "30", "cf-expansion-factor", "2"); v.Text() != "OK" {
		t.Fatalf("CONFIG SET: %v", v)
	}
	c.do("BF.ADD", "old", "b")
	c.do("BF.ADD", "new", "a")
	c.do("BF.MADD", "madd", "a", "b")
	c.do("BF.INSERT", "ins", "CAPACITY", "50", "ITEMS", "a")
	c.do("BF.INSERT", "insns", "NONSCALING", "ITEMS", "a")
	c.do("BF.RESERVE", "res", "0.01", "10")
	c.do("BF.RESERVE", "resexp", "0.01", "10", "EXPANSION", "3")
	for _, tc := range []struct {
		key       string
		capacity  int64
		expansion string
		ratio     string
	}{
		// A scaling filter's first sub-filter has half the error rate (RedisBloom's tightening).
		{"old", 100, "2", "0.005"}, {"new", 1000, "4", "0.0005"}, {"madd", 1000, "4", "0.0005"},
		{"ins", 50, "4", "0.0005"}, {"insns", 1000, "", "0.001"}, {"res", 10, "4", "0.005"}, {"resexp", 10, "3", "0.005"},
	} {
		info := infoOf(t, c, "BF.INFO", tc.key)
		exp := info["Expansion rate"]
		if info["Capacity"].Int != tc.capacity || exp.Text() != tc.expansion || exp.Null != (tc.expansion == "") {
			t.Errorf("%s: BF.INFO %v, want capacity %d expansion %q", tc.key, info, tc.capacity, tc.expansion)
		}
		if r := debugRatio(t, c, tc.key); r != tc.ratio {
			t.Errorf("%s: error rate %s, want %s", tc.key, r, tc.ratio)
		}
	}
	// bf-expansion-factor 0 makes non-scaling filters, unless the command names an expansion.
	c.do("CONFIG", "SET", "bf-expansion-factor", "0")
	c.do("BF.ADD", "ns", "a")
	c.do("BF.RESERVE", "nsres", "0.01", "10")
	c.do("BF.INSERT", "nsexp", "EXPANSION", "3", "ITEMS", "a")
	for key, want := range map[string]string{"ns": "", "nsres": "", "nsexp": "3"} {
		exp := infoOf(t, c, "BF.INFO", key)["Expansion rate"]
		if exp.Text() != want || exp.Null != (want == "") {
			t.Errorf("%s with bf-expansion-factor 0: expansion %v, want %q", key, exp, want)
		}
	}
	c.do("CF.ADD", "cfold", "b")
	c.do("CF.ADD", "cfnew", "a")
	c.do("CF.INSERT", "cfins", "CAPACITY", "100", "ITEMS", "a")
	c.do("CF.RESERVE", "cfres", "1000")
	c.do("CF.RESERVE", "cfres2", "1000", "BUCKETSIZE", "2", "MAXITERATIONS", "5", "EXPANSION", "0")
	for _, tc := range []struct {
		key                                     string
		buckets, bucketSize, expansion, maxIter int64
	}{
		{"cfold", 512, 2, 1, 20}, {"cfnew", 512, 4, 2, 30}, {"cfins", 32, 4, 2, 30},
		{"cfres", 256, 4, 2, 30}, {"cfres2", 512, 2, 0, 5},
	} {
		info := infoOf(t, c, "CF.INFO", tc.key)
		if info["Number of buckets"].Int != tc.buckets || info["Bucket size"].Int != tc.bucketSize ||
			info["Expansion rate"].Int != tc.expansion || info["Max iterations"].Int != tc.maxIter {
			t.Errorf("%s: CF.INFO %v, want %+v", tc.key, info, tc)
		}
	}
	if v := c.do("CF.INSERT", "cfsmall", "CAPACITY", "7", "ITEMS", "a"); v.Text() != "Capacity must be at least (BucketSize * 2)" {
		t.Errorf("CF.INSERT CAPACITY 7 with cf-bucket-size 4: %v", v)
	}
	// cf-max-expansions is checked at each insertion, as in Redis 8.
	c.do("CONFIG", "SET", "cf-max-expansions", "1")
	if v := c.do("CF.ADD", "cfold", "c"); v.Text() != "Maximum expansions reached" {
		t.Errorf("CF.ADD with cf-max-expansions 1: %v", v)
	}
}

// TestFilterSizeLimit checks bf-max-filter-bytes and cf-max-filter-bytes on creation and on
// growth: the refused add gets the error, the filter keeps what it held and answers for it.
func TestFilterSizeLimit(t *testing.T) {
	s := startServer(t, nil)
	c := dial(t, s.addr())
	c.do("BF.RESERVE", "big", "0.001", "100000") // made before the limit: kept and usable
	c.do("CONFIG", "SET", "bf-max-filter-bytes", "4096", "cf-max-filter-bytes", "4096")
	if v := c.do("BF.ADD", "big", "x"); v.Int != 1 {
		t.Errorf("adding to a filter made before the limit: %v", v)
	}
	wantPrefix := "ERR operation exceeds bloom object memory limit: the filter would be created with "
	for _, cmd := range [][]string{
		{"BF.RESERVE", "r", "0.001", "100000"},
		{"BF.ADD", "r", "x"}, // but with bf-initial-size 100000
		{"BF.INSERT", "r", "CAPACITY", "100000", "ITEMS", "x"},
	} {
		if cmd[0] == "BF.ADD" {
			c.do("CONFIG", "SET", "bf-initial-size", "100000")
		}
		v := c.do(cmd...)
		if !strings.HasPrefix(v.Text(), wantPrefix) || !strings.HasSuffix(v.Text(), "bytes, bf-max-filter-bytes is 4096") {
			t.Errorf("%v: %q, want %q...", cmd, v.Text(), wantPrefix)
		}
		if cmd[0] == "BF.ADD" {
			c.do("CONFIG", "SET", "bf-initial-size", "100")
		}
	}
	if v := c.do("EXISTS", "r"); v.Int != 0 {
		t.Errorf("a refused filter exists")
	}
	// Growth: add until refused.
	c.do("BF.RESERVE", "g", "0.01", "100")
	maxCap := c.do("BF.INFO", "g", "MAXSCALEDCAPACITY")
	added, refused := 0, ""
	for i := range 100000 {
		v := c.do("BF.ADD", "g", strconv.Itoa(i))
		if v.IsError() {
			refused = v.Text()
			break
		}
		added += int(v.Int)
	}
	if !strings.HasPrefix(refused, "ERR operation exceeds bloom object memory limit: the filter would grow to ") {
		t.Fatalf("growth past the limit: %q after %d items", refused, added)
	}
	info := infoOf(t, c, "BF.INFO", "g")
	if info["Number of items inserted"].Int != int64(added) || info["Size"].Int > 4096 {
		t.Errorf("after the refusal: BF.INFO %v, want %d items and size at most 4096", info, added)
	}
	if len(maxCap.Elems) != 1 || maxCap.Elems[0].Int != info["Capacity"].Int {
		t.Errorf("BF.INFO g MAXSCALEDCAPACITY = %v, the filter stopped at capacity %d", maxCap, info["Capacity"].Int)
	}
	for i := range added {
		if v := c.do("BF.EXISTS", "g", strconv.Itoa(i)); v.Int != 1 {
			t.Fatalf("item %d lost after the refusal", i)
		}
	}
	// In BF.MADD, an item present answers 0; a new one needs the growth and gets the error
	// (or 0, if it is a false positive); none is added.
	v := c.do("BF.MADD", "g", "0", "new-a", "new-b")
	if len(v.Elems) != 3 || v.Elems[0].Int != 0 {
		t.Errorf("BF.MADD on the full filter: %v", v)
	}
	for _, e := range v.Elems[1:] {
		if !e.IsError() && e.Int != 0 || e.IsError() && !strings.HasPrefix(e.Text(), "ERR operation exceeds bloom object memory limit") {
			t.Errorf("BF.MADD of a new item on the full filter: %v", e)
		}
	}
	if n := infoOf(t, c, "BF.INFO", "g")["Number of items inserted"].Int; n != int64(added) {
		t.Errorf("BF.MADD on the full filter added items: %d, want %d", n, added)
	}
	if got := infoField(t, c, "bloom", "bf_max_filter_bytes_refusals"); got == "0" || got == "" {
		t.Errorf("INFO bloom bf_max_filter_bytes_refusals = %q", got)
	}
	// A filter dumped elsewhere is refused when loaded over the limit.
	dump := c.do("BF.SCANDUMP", "big", "0")
	if v := c.do("BF.LOADCHUNK", "copy", "1", string(dump.Elems[1].Str)); !strings.HasPrefix(v.Text(), wantPrefix) {
		t.Errorf("BF.LOADCHUNK of a filter over the limit: %q", v.Text())
	}
	// No limit: MAXSCALEDCAPACITY is nil.
	c.do("CONFIG", "SET", "bf-max-filter-bytes", "0")
	if v := c.do("BF.INFO", "g", "MAXSCALEDCAPACITY"); len(v.Elems) != 1 || !v.Elems[0].Null {
		t.Errorf("BF.INFO MAXSCALEDCAPACITY without a limit: %v", v)
	}
	if v := c.do("BF.ADD", "g", "after-the-limit"); v.Int != 1 {
		t.Errorf("BF.ADD once the limit is off: %v", v)
	}

	// Cuckoo filters.
	cfPrefix := "ERR operation exceeds cuckoo object memory limit: the filter would "
	if v := c.do("CF.RESERVE", "cbig", "100000"); !strings.HasPrefix(v.Text(), cfPrefix+"be created with ") {
		t.Errorf("CF.RESERVE over the limit: %q", v.Text())
	}
	c.do("CF.RESERVE", "cg", "1024")
	cAdded, cRefused := 0, ""
	for i := range 100000 {
		v := c.do("CF.ADD", "cg", strconv.Itoa(i))
		if v.IsError() {
			cRefused = v.Text()
			break
		}
		cAdded++
	}
	if !strings.HasPrefix(cRefused, cfPrefix+"grow to ") || !strings.HasSuffix(cRefused, "cf-max-filter-bytes is 4096") {
		t.Fatalf("cuckoo growth past the limit: %q after %d items", cRefused, cAdded)
	}
	cinfo := infoOf(t, c, "CF.INFO", "cg")
	if cinfo["Number of items inserted"].Int != int64(cAdded) {
		t.Errorf("after the refusal: CF.INFO %v, want %d items", cinfo, cAdded)
	}
	for i := range cAdded {
		if v := c.do("CF.EXISTS", "cg", strconv.Itoa(i)); v.Int != 1 {
			t.Fatalf("cuckoo item %d lost after the refusal", i)
		}
	}
	if got := infoField(t, c, "bloom", "cf_max_filter_bytes_refusals"); got == "0" || got == "" {
		t.Errorf("INFO bloom cf_max_filter_bytes_refusals = %q", got)
	}
	// A CF.LOADCHUNK header of a filter over the limit is refused too.
	c.do("CONFIG", "SET", "cf-max-filter-bytes", "0")
	c.do("CF.RESERVE", "cbig", "100000")
	c.do("CF.ADD", "cbig", "x") // an empty filter dumps nothing
	header := c.do("CF.SCANDUMP", "cbig", "0")
	c.do("CONFIG", "SET", "cf-max-filter-bytes", "4096")
	if v := c.do("CF.LOADCHUNK", "ccopy", "1", string(header.Elems[1].Str)); !strings.HasPrefix(v.Text(), cfPrefix+"be created with ") {
		t.Errorf("CF.LOADCHUNK of a filter over the limit: %q", v.Text())
	}
}

// TestFilterSettingsReplay makes filters on the fly under non-default settings, then restarts
// on the same files with the defaults and a size limit smaller than the filters: the log's
// records name every parameter, so the filters come back identical, and loading is not refused.
func TestFilterSettingsReplay(t *testing.T) {
	dir := t.TempDir()
	custom := func(c *Config) {
		c.AppendOnly = true
		c.Filters = &filterconf.Settings{BFErrorRate: 0.001, BFInitialSize: 500, BFExpansion: 3,
			CFInitialSize: 4000, CFBucketSize: 4, CFMaxIterations: 50, CFExpansion: 2, CFMaxExpansions: 32}
	}
	s := startDurable(t, dir, custom)
	c := dial(t, s.addr())
	fill := func(c *rawClient) {
		for i := range 2000 { // several sub-filters each
			c.do("BF.ADD", "bf", strconv.Itoa(i))
			c.do("CF.ADD", "cf", strconv.Itoa(i))
		}
		c.do("BF.MADD", "madd", "a", "b")
		c.do("BF.INSERT", "ins", "ERROR", "0.05", "ITEMS", "a")
		c.do("BF.RESERVE", "res", "0.01", "10")
		c.do("CONFIG", "SET", "bf-expansion-factor", "0")
		c.do("BF.RESERVE", "resns", "0.01", "10")
		c.do("BF.ADD", "addns", "a")
		c.do("CF.INSERT", "cfins", "ITEMS", "a")
		c.do("CF.RESERVE", "cfres", "100")
	}
	fill(c)
	dumps := func(c *rawClient) map[string]string {
		out := map[string]string{}
		for _, k := range []string{"bf", "madd", "ins", "res", "resns", "addns"} {
			out[k] = fmt.Sprint(infoOf(t, c, "BF.INFO", k)) + fmt.Sprintf("%x", scandump(t, c, k))
		}
		for _, k := range []string{"cf", "cfins", "cfres"} {
			out[k] = fmt.Sprint(infoOf(t, c, "CF.INFO", k)) + fmt.Sprintf("%x", cfDumpAll(t, c, k))
		}
		return out
	}
	before := dumps(c)
	stopDurable(t, s, false)

	s2 := startDurable(t, dir, func(c *Config) {
		c.AppendOnly = true
		c.Filters = &filterconf.Settings{BFErrorRate: 0.01, BFInitialSize: 100, BFExpansion: 2, BFMaxBytes: 1024,
			CFInitialSize: 1024, CFBucketSize: 2, CFMaxIterations: 20, CFExpansion: 1, CFMaxExpansions: 1, CFMaxBytes: 1024}
	})
	c2 := dial(t, s2.addr())
	after := dumps(c2)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s differs after replay with other defaults:\nbefore %.300s\nafter  %.300s", k, v, after[k])
		}
	}
	stopDurable(t, s2, false)
}

// cfDumpAll returns a cuckoo filter's whole CF.SCANDUMP.
func cfDumpAll(t testing.TB, c *rawClient, key string) []byte {
	t.Helper()
	var out bytes.Buffer
	for it := int64(0); ; {
		v := c.do("CF.SCANDUMP", key, strconv.FormatInt(it, 10))
		if len(v.Elems) != 2 {
			t.Fatalf("CF.SCANDUMP: %v", v)
		}
		it = v.Elems[0].Int
		if it == 0 {
			return out.Bytes()
		}
		out.Write(v.Elems[1].Str)
	}
}

// TestFilterSettingsReplica makes filters on the fly on a primary whose settings differ from
// its replica's, before and after the replica connects (full sync and stream); the replica, with
// a size limit smaller than the filters, still ends with the same filters.
func TestFilterSettingsReplica(t *testing.T) {
	ps, p := startReplServer(t)
	rs, r := startReplServer(t)
	p.do("CONFIG", "SET", "bf-initial-size", "300", "bf-error-rate", "0.002", "bf-expansion-factor", "5",
		"cf-initial-size", "600", "cf-bucket-size", "3", "cf-max-iterations", "40", "cf-expansion-factor", "4")
	r.do("CONFIG", "SET", "bf-max-filter-bytes", "1024", "cf-max-filter-bytes", "1024", "cf-max-expansions", "1")
	p.do("BF.ADD", "before", "a")
	p.do("CF.ADD", "cfbefore", "a")
	if v := r.do("REPLICAOF", "127.0.0.1", portOf(ps)); v.Text() != "OK" {
		t.Fatalf("REPLICAOF: %v", v)
	}
	waitSynced(t, p, r)
	for i := range 3000 {
		p.do("BF.ADD", "after", strconv.Itoa(i))
		p.do("CF.ADD", "cfafter", strconv.Itoa(i))
	}
	p.do("BF.RESERVE", "res", "0.01", "10")
	if v := p.do("WAIT", "1", "5000"); v.Int != 1 {
		t.Fatalf("WAIT: %v", v)
	}
	for _, k := range []string{"before", "after", "res"} {
		pi, ri := fmt.Sprint(infoOf(t, p, "BF.INFO", k)), fmt.Sprint(infoOf(t, r, "BF.INFO", k))
		if pi != ri || !bytes.Equal(scandump(t, p, k), scandump(t, r, k)) {
			t.Errorf("%s: primary %s, replica %s (or the bits differ)", k, pi, ri)
		}
	}
	for _, k := range []string{"cfbefore", "cfafter"} {
		pi, ri := fmt.Sprint(infoOf(t, p, "CF.INFO", k)), fmt.Sprint(infoOf(t, r, "CF.INFO", k))
		if pi != ri || !bytes.Equal(cfDumpAll(t, p, k), cfDumpAll(t, r, k)) {
			t.Errorf("%s: primary %s, replica %s (or the slots differ)", k, pi, ri)
		}
	}
	if n := infoOf(t, r, "BF.INFO", "after")["Number of filters"].Int; n < 2 {
		t.Errorf("the test's filter did not grow (%d sub-filters)", n)
	}
	_ = rs
}

// TestFilterSettingsOldRecords replays a log whose records leave parameters open, as bloomd
// wrote them before these settings existed (BF.ADD creating a filter, BF.RESERVE without
// EXPANSION, CF.ADD, CF.RESERVE without options), on a server with other settings: they make
// the filters RedisBloom's built-in values made, which is what that bloomd made.
func TestFilterSettingsOldRecords(t *testing.T) {
	dir := t.TempDir()
	s := startDurable(t, dir, func(c *Config) { c.AppendOnly = true })
	for _, rec := range [][]string{
		{"BF.ADD", "bf", "a"}, {"BF.MADD", "madd", "a", "b"}, {"BF.INSERT", "ins", "CAPACITY", "50", "ITEMS", "a"},
		{"BF.RESERVE", "res", "0.01", "10"}, {"CF.ADD", "cf", "a"}, {"CF.RESERVE", "cfres", "1000"},
	} {
		argv := make([][]byte, len(rec))
		for i, a := range rec {
			argv[i] = []byte(a)
		}
		if wait := s.journal.Append(argv); wait != nil {
			if err := wait(); err != nil {
				t.Fatal(err)
			}
		}
	}
	stopDurable(t, s, false)
	s2 := startDurable(t, dir, func(c *Config) {
		c.AppendOnly = true
		c.Filters = &filterconf.Settings{BFErrorRate: 0.2, BFInitialSize: 7, BFExpansion: 0,
			CFInitialSize: 64, CFBucketSize: 8, CFMaxIterations: 3, CFExpansion: 0, CFMaxExpansions: 1}
	})
	c := dial(t, s2.addr())
	for key, want := range map[string][2]int64{"bf": {100, 2}, "madd": {100, 2}, "ins": {50, 2}, "res": {10, 2}} {
		info := infoOf(t, c, "BF.INFO", key)
		if info["Capacity"].Int != want[0] || info["Expansion rate"].Int != want[1] {
			t.Errorf("%s replayed: BF.INFO %v, want capacity %d expansion %d", key, info, want[0], want[1])
		}
	}
	if r := debugRatio(t, c, "bf"); r != "0.005" {
		t.Errorf("bf replayed with error rate %s, want RedisBloom's 0.01 (0.005 in its first sub-filter)", r)
	}
	for key, buckets := range map[string]int64{"cf": 512, "cfres": 512} {
		info := infoOf(t, c, "CF.INFO", key)
		if info["Number of buckets"].Int != buckets || info["Bucket size"].Int != 2 || info["Max iterations"].Int != 20 || info["Expansion rate"].Int != 1 {
			t.Errorf("%s replayed: CF.INFO %v, want RedisBloom's defaults", key, info)
		}
	}
	// A client's command on the same server takes the settings in force.
	c.do("BF.ADD", "now", "a")
	if info := infoOf(t, c, "BF.INFO", "now"); info["Capacity"].Int != 7 || !info["Expansion rate"].Null {
		t.Errorf("BF.ADD after the replay: %v, want capacity 7, non-scaling", info)
	}
}
