package cli

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// FuzzReadFilter: a filter file is whatever a user points the command at. Every input is either
// refused with an error (and no filter) or read into a filter that info, test and every output
// format handle without a panic. The seed corpus in testdata/fuzz/FuzzReadFilter holds small
// files of every kind and format that bloom build writes, and damaged ones.
func FuzzReadFilter(f *testing.F) {
	for _, name := range []string{"guava/ints.guava", "guava/longs.guava"} {
		b, err := os.ReadFile(testdata(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(formatGuava), b)
		f.Add(uint8(formatAuto), b)
	}
	f.Add(uint8(formatAuto), []byte(nativeMagic))
	f.Add(uint8(formatAuto), []byte(redisBloomMagic))
	f.Add(uint8(formatAuto), []byte{0x1f, 0x8b, 8, 0})
	f.Fuzz(func(t *testing.T, from uint8, data []byte) {
		ff := fileFormat(int(from) % len(formatNames))
		got, err := readFilter("-", ff, bytes.NewReader(data))
		if err != nil {
			if got != nil || err.Error() == "" {
				t.Fatalf("refused with %v, but returned %v", err, got)
			}
			return
		}
		if got == nil {
			t.Fatal("no filter and no error")
		}
		_ = got.describe()
		_ = got.testMany(nil, [][]byte{[]byte("alice@example.com"), nil})
		for _, to := range []fileFormat{formatNative, formatGuava, formatRedisBloom} {
			if write, err := got.encoder(to); err == nil {
				if err := write(io.Discard); err != nil {
					t.Fatalf("read as %s, but writing it as %s failed: %v", ff, to, err)
				}
			}
		}
	})
}
