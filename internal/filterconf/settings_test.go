package filterconf

import (
	"strings"
	"testing"
)

// The error texts below are RedisBloom v8.0.0's (src/config.c: setIntegerValue and
// setFloatValue, "Invalid value for `%s`", "Value for `%s` must be in the range [%lld, %lld]"
// and "(%f, %f)"), with the ranges of its rm_config table and the bucket size and initial size
// bounding each other as its setIntegerValue makes them.
func TestSet(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		prepare     map[string]string // set first, in any order that is valid
		wantErr     string
		wantGet     string
	}{
		{name: "bf-error-rate", value: "0.001", wantGet: "0.001"},
		{name: "bf-error-rate", value: "1e-4", wantGet: "0.0001"},
		{name: "bf-error-rate", value: "0.5", wantGet: "0.25"}, // BF_ERROR_RATE_CAP
		{name: "bf-error-rate", value: "0", wantErr: "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)"},
		{name: "bf-error-rate", value: "1", wantErr: "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)"},
		{name: "bf-error-rate", value: "-0.1", wantErr: "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)"},
		{name: "bf-error-rate", value: "inf", wantErr: "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)"},
		{name: "bf-error-rate", value: "abc", wantErr: "Invalid value for `bf-error-rate`"},
		{name: "bf-error-rate", value: " 0.1", wantErr: "Invalid value for `bf-error-rate`"},
		{name: "bf-error-rate", value: "nan", wantErr: "Invalid value for `bf-error-rate`"},
		{name: "bf-error-rate", value: "1e-400", wantErr: "Invalid value for `bf-error-rate`"},
		{name: "bf-initial-size", value: "1", wantGet: "1"},
		{name: "bf-initial-size", value: "1073741824", wantGet: "1073741824"},
		{name: "bf-initial-size", value: "0", wantErr: "Value for `bf-initial-size` must be in the range [1, 1073741824]"},
		{name: "bf-initial-size", value: "1073741825", wantErr: "Value for `bf-initial-size` must be in the range [1, 1073741824]"},
		{name: "bf-initial-size", value: "1.5", wantErr: "Invalid value for `bf-initial-size`"},
		{name: "bf-initial-size", value: "99999999999999999999", wantErr: "Invalid value for `bf-initial-size`"},
		{name: "bf-expansion-factor", value: "0", wantGet: "0"},
		{name: "bf-expansion-factor", value: "32768", wantGet: "32768"},
		{name: "bf-expansion-factor", value: "32769", wantErr: "Value for `bf-expansion-factor` must be in the range [0, 32768]"},
		{name: "bf-expansion-factor", value: "-1", wantErr: "Value for `bf-expansion-factor` must be in the range [0, 32768]"},
		{name: "cf-bucket-size", value: "255", wantGet: "255"},
		{name: "cf-bucket-size", value: "0", wantErr: "Value for `cf-bucket-size` must be in the range [1, 255]"},
		{name: "cf-bucket-size", value: "256", wantErr: "Value for `cf-bucket-size` must be in the range [1, 255]"},
		{name: "cf-bucket-size", value: "51", prepare: map[string]string{"cf-initial-size": "100"},
			wantErr: "Value for `cf-bucket-size` must be in the range [1, 50]"},
		{name: "cf-initial-size", value: "4", wantGet: "4"},
		{name: "cf-initial-size", value: "3", wantErr: "Value for `cf-initial-size` must be in the range [4, 1073741824]"},
		{name: "cf-initial-size", value: "19", prepare: map[string]string{"cf-bucket-size": "10"},
			wantErr: "Value for `cf-initial-size` must be in the range [20, 1073741824]"},
		{name: "cf-initial-size", value: "1073741825", wantErr: "Value for `cf-initial-size` must be in the range [4, 1073741824]"},
		{name: "cf-max-iterations", value: "65535", wantGet: "65535"},
		{name: "cf-max-iterations", value: "0", wantErr: "Value for `cf-max-iterations` must be in the range [1, 65535]"},
		{name: "cf-max-iterations", value: "65536", wantErr: "Value for `cf-max-iterations` must be in the range [1, 65535]"},
		{name: "cf-expansion-factor", value: "0", wantGet: "0"},
		{name: "cf-expansion-factor", value: "32769", wantErr: "Value for `cf-expansion-factor` must be in the range [0, 32768]"},
		{name: "cf-max-expansions", value: "65536", wantGet: "65536"},
		{name: "cf-max-expansions", value: "0", wantErr: "Value for `cf-max-expansions` must be in the range [1, 65536]"},
		{name: "cf-max-expansions", value: "65537", wantErr: "Value for `cf-max-expansions` must be in the range [1, 65536]"},
		{name: "CF-MAX-EXPANSIONS", value: "64", wantGet: "64"},
	} {
		s := Default()
		for n, v := range tc.prepare {
			if err := Find(n).Set(&s, v); err != nil {
				t.Fatalf("preparing %s %s: %v", n, v, err)
			}
		}
		before := s
		p := Find(tc.name)
		if p == nil {
			t.Fatalf("Find(%q) = nil", tc.name)
		}
		err := p.Set(&s, tc.value)
		switch {
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%s %q: error %v, want %q", tc.name, tc.value, err, tc.wantErr)
		case tc.wantErr != "" && s != before:
			t.Errorf("%s %q: refused, but the settings changed: %+v", tc.name, tc.value, s)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s %q: %v", tc.name, tc.value, err)
		case tc.wantErr == "" && p.Get(&s) != tc.wantGet:
			t.Errorf("%s %q: Get = %q, want %q", tc.name, tc.value, p.Get(&s), tc.wantGet)
		}
	}
}

func TestDefault(t *testing.T) {
	s := Default()
	want := map[string]string{"bf-error-rate": "0.01", "bf-initial-size": "100", "bf-expansion-factor": "2",
		"cf-initial-size": "1024", "cf-bucket-size": "2", "cf-max-iterations": "20", "cf-expansion-factor": "1",
		"cf-max-expansions": "32"}
	if len(Params) != len(want) {
		t.Fatalf("%d settings, want %d", len(Params), len(want))
	}
	for _, p := range Params {
		if got := p.Get(&s); got != want[p.Name] {
			t.Errorf("default %s = %q, want %q", p.Name, got, want[p.Name])
		}
	}
	if s.BFMaxBytes != 0 || s.CFMaxBytes != 0 {
		t.Errorf("size limits on by default: %+v", s)
	}
	for legacy, name := range LegacyNames {
		if Find(name) == nil {
			t.Errorf("legacy %s names unknown setting %s", legacy, name)
		}
	}
	var l Live
	if *l.Load() != s {
		t.Errorf("zero Live holds %+v, want the defaults", *l.Load())
	}
}

func TestValidate(t *testing.T) {
	d := Default()
	if err := d.Validate(); err != nil {
		t.Errorf("Default: %v", err)
	}
	for _, tc := range []struct {
		change func(s *Settings)
		want   string
	}{
		{func(s *Settings) { s.BFErrorRate = 0 }, "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)"},
		{func(s *Settings) { s.BFErrorRate = 0.5 }, "Value for `bf-error-rate` must be in the range (0.000000, 0.250000]"},
		{func(s *Settings) { s.CFBucketSize = 600 }, "Value for `cf-bucket-size` must be in the range [1, 255]"},
		{func(s *Settings) { s.CFInitialSize = 2 }, "Value for `cf-bucket-size` must be in the range [1, 1]"},
		{func(s *Settings) { s.CFMaxExpansions = 0 }, "Value for `cf-max-expansions` must be in the range [1, 65536]"},
		{func(s *Settings) { s.BFMaxBytes = -1 }, "bf-max-filter-bytes and cf-max-filter-bytes must not be negative"},
	} {
		s := Default()
		tc.change(&s)
		if err := s.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: Validate = %v, want %q", s, err, tc.want)
		}
	}
}

func TestCheckSize(t *testing.T) {
	s := Default()
	if err := s.CheckBloom(1<<40, false); err != nil {
		t.Errorf("no limit: %v", err)
	}
	s.BFMaxBytes, s.CFMaxBytes = 1000, 2000
	if err := s.CheckBloom(1000, true); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	err := s.CheckBloom(1001, true)
	want := "ERR operation exceeds bloom object memory limit: the filter would grow to 1001 bytes, bf-max-filter-bytes is 1000"
	if err == nil || err.Error() != want {
		t.Errorf("growth past the limit: %v, want %q", err, want)
	}
	err = s.CheckCuckoo(5000, false)
	want = "ERR operation exceeds cuckoo object memory limit: the filter would be created with 5000 bytes, cf-max-filter-bytes is 2000"
	if err == nil || err.Error() != want {
		t.Errorf("new cuckoo filter past the limit: %v, want %q", err, want)
	}
	var l Live
	l.Refused(err)
	l.Refused(s.CheckBloom(2000, false))
	l.Refused(nil)
	if b, c := l.RefusedCounts(); b != 1 || c != 1 {
		t.Errorf("refusals counted: bloom %d, cuckoo %d; want 1, 1", b, c)
	}
}

// FuzzSet checks that no value makes a setting panic, and that an accepted value is in the
// setting's range and reads back as a value the setting accepts again unchanged.
func FuzzSet(f *testing.F) {
	for _, v := range []string{"0.01", "1e-3", "0x1p-4", "100", "-1", "65536", "", " 1", "1_0", "nan", "inf", "0.9"} {
		f.Add(uint8(0), v)
	}
	f.Fuzz(func(t *testing.T, which uint8, v string) {
		p := Params[int(which)%len(Params)]
		s := Default()
		if err := p.Set(&s, v); err != nil {
			if !strings.Contains(err.Error(), "`"+p.Name+"`") {
				t.Fatalf("%s %q: error %q does not name the setting", p.Name, v, err)
			}
			return
		}
		if !(s.BFErrorRate > 0 && s.BFErrorRate <= BFErrorRateCap) || s.CFInitialSize < 2*s.CFBucketSize {
			t.Fatalf("%s %q accepted out of range: %+v", p.Name, v, s)
		}
		again := s
		if err := p.Set(&again, p.Get(&s)); err != nil || again != s {
			t.Fatalf("%s %q: Get %q does not set the same value: %v", p.Name, v, p.Get(&s), err)
		}
	})
}
