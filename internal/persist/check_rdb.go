package persist

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/bloomd/bloom/internal/rdb"
)

// checkRDB is CheckLog for a Redis RDB file: it reads the file whole, checksum included, and
// says what it holds and whether bloomd loads it. There is nothing to fix in it: damage is
// reported with its offset and ErrDamaged.
func checkRDB(f File, path string, size int64, out io.Writer) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	rd, err := rdb.NewReader(bufio.NewReaderSize(f, 1<<20), &rdb.ReaderOptions{Size: size, SkipUnsupported: true})
	if err != nil {
		fmt.Fprintf(out, "%s: a Redis RDB file that bloomd does not read: %v\n", path, err)
		return ErrDamaged
	}
	var keys, strs, filters, cuckoos, hashes, otherDB int
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Fprintf(out, "%s: a Redis RDB file (version %d), damaged after %s: %v\n", path, rd.Version(), count(keys, "key"), err)
			fmt.Fprintf(out, "bloomd will not load it; --fix does not repair RDB files (redis-check-rdb %s says more).\n", path)
			return ErrDamaged
		}
		keys++
		switch {
		case e.DB != 0:
			otherDB++
		case e.Kind == rdb.KindString:
			strs++
		case e.Kind == rdb.KindBloom:
			filters++
		case e.Kind == rdb.KindCuckoo:
			cuckoos++
		case e.Kind == rdb.KindHash:
			hashes++
		}
	}
	fmt.Fprintf(out, "%s: a Redis RDB file (version %d), %s, checksum OK: %s, %s, %s, %s",
		path, rd.Version(), count(int64(rd.Offset()), "byte"), count(strs, "string"), count(hashes, "hash"), count(filters, "Bloom filter"), count(cuckoos, "cuckoo filter"))
	sk := map[string]int{}
	for k, n := range rd.Skipped() {
		sk[k] = n
	}
	if otherDB > 0 {
		sk["keys of other databases than 0"] += otherDB
	}
	if len(sk) > 0 {
		fmt.Fprintf(out, "; of types bloomd does not hold: %s.\n", describeSkipped(sk))
		fmt.Fprintf(out, "bloomd loads it as its snapshot only with rdb-skip-unknown-types yes, without those")
	} else {
		fmt.Fprintf(out, ".\nbloomd loads it as its snapshot")
	}
	fmt.Fprintf(out, " (from a dbfilename ending in .rdb, or as dump.rdb where it has no files of its own); check-aof checks bloomd's own logs.\n")
	return nil
}
