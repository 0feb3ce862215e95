package persist

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrDamaged reports a log that CheckLog found damaged and did not fix.
var ErrDamaged = errors.New("persist: the log is damaged")

// CheckLog verifies the log file at path record by record and reports on out, as
// `bloomd check-aof [--fix] FILE` does. A good log reports its records. A torn last record is
// reported as bloomd would drop it on start. Damage in the middle is reported with its offset and
// the number of well-formed records found after it (those a repair loses); with fix, the bytes
// from the last good record before the damage (or the torn one) on are copied to a new file
// beside the log, FILE.removed-from-OFFSET (never over an existing file), the log is truncated
// there, and the loss reported. A snapshot is recognised by its magic and checked whole, section
// by section; with fix a damaged one is replaced by one holding every intact key, the damaged
// file kept as FILE.damaged (see checkSnapshot). It returns ErrDamaged for damage it did not fix;
// a torn tail alone is not an error.
func CheckLog(path string, fix bool, out io.Writer) error {
	return checkLog(OSFS{}, path, fix, out)
}

func checkLog(fsys FS, path string, fix bool, out io.Writer) error {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	size := fi.Size()
	var magic [8]byte
	n, _ := f.ReadAt(magic[:], 0)
	switch {
	case string(magic[:n]) == snapMagic:
		return checkSnapshot(f, path, size, fix, out)
	case size >= 9 && magicOf(magic[:n]) == "rdb":
		return checkRDB(f, path, size, out)
	}
	sc, err := NewLogScanner(f, size, path)
	var ce *CorruptError
	if errors.As(err, &ce) {
		fmt.Fprintf(out, "%s: %s\n", path, ce.Reason)
		fmt.Fprintf(out, "The header is damaged: this is not a log bloomd can read (nor a snapshot), and --fix cannot repair it.\n")
		return ErrDamaged
	}
	if err != nil {
		return err
	}
	for sc.Next() {
	}
	if err := sc.Err(); err != nil && !errors.As(err, &ce) {
		return err
	}
	good := sc.Records()
	if sc.Torn() == nil && ce == nil {
		fmt.Fprintf(out, "%s: log %d, %s, %s: OK\n", path, sc.Header().Seq, count(good, "record"), count(size, "byte"))
		return nil
	}
	var cut int64
	if t := sc.Torn(); t != nil {
		cut = t.Offset
		fmt.Fprintf(out, "%s: %s, then a torn record at byte offset %d: %s (%s).\n", path, count(good, "good record"), t.Offset, t.Reason, count(t.Bytes, "byte"))
		fmt.Fprintf(out, "This is what a crash in the middle of a write leaves; bloomd drops it when it starts.\n")
		if !fix {
			return nil
		}
	} else {
		cut = ce.Offset
		lost, err := countRecordsAfter(f, cut+1, size)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %s, then damage at byte offset %d: %s.\n", path, count(good, "good record"), ce.Offset, ce.Reason)
		fmt.Fprintf(out, "Those %s hold the damaged record and %s after it; a repair loses %s.\n",
			count(size-cut, "byte"), count(lost, "more well-formed record"), count(lost+1, "record"))
		if !fix {
			fmt.Fprintf(out, "To truncate the log at byte offset %d (keeping %s), run again with --fix.\n", cut, count(good, "good record"))
			return ErrDamaged
		}
		fmt.Fprintf(out, "Records lost: %d (the damaged record and %d after it).\n", lost+1, lost)
	}
	if cut < logHeaderSize {
		cut = 0 // a torn header: an empty file, which bloomd recreates
	}
	// The bytes cut go to a new file beside the log first, so that nothing is lost for good.
	saved := newName(path, fmt.Sprintf(".removed-from-%d", cut))
	if err := writeNew(saved, io.NewSectionReader(f, cut, size-cut)); err != nil {
		return err
	}
	w, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	defer w.Close()
	if err := w.Truncate(cut); err != nil {
		return fmt.Errorf("persist: truncating %s: %w", path, err)
	}
	if err := w.Sync(); err != nil {
		return fmt.Errorf("persist: truncating %s: %w", path, err)
	}
	fmt.Fprintf(out, "Truncated %s to %s (%s removed, kept in %s). It now holds %s.\n", path, count(cut, "byte"), count(size-cut, "byte"), saved, count(good, "record"))
	return nil
}

// count returns "1 record" or "n records" (the plural of the phrase's last word).
func count[N int | int64](n N, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "sh") {
		return fmt.Sprintf("%d %ses", n, what) // hashes
	}
	return fmt.Sprintf("%d %ss", n, what)
}
