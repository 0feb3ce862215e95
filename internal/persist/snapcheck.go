package persist

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/value"
	"github.com/bloomd/bloom/redisbloom"
)

// Checking and salvaging a snapshot: `bloomd check-aof [--fix] FILE` on a file that starts with
// the snapshot's magic. The check reads every section and verifies it as loading does (every
// checksum, size and filter header), without loading any bits into memory: it holds one piece
// (at most 16 MiB) at a time. Past a damaged section it looks for the next intact one, byte by
// byte: a section header whose checksum holds, followed by a section that verifies whole. The
// sections are self-contained, so a repair copies every intact one as it is, behind the same
// header (the logs that follow the snapshot still apply), and ends the file with a new end
// section.

// A snapSection is an intact section of a snapshot: bytes [off, end).
type snapSection struct {
	off, end int64
	kind     byte
	key      []byte
	count    uint64 // the end section's count of keys
}

// A snapDamage is a stretch of bytes [off, end) that holds no intact section: from a section
// that fails to verify to the next intact one, or to the end of the file.
type snapDamage struct {
	off, end int64
	at       int64 // where in the failing section the damage is
	reason   string
	key      []byte // the failing section's key, when its header and key are intact
	keyKnown bool
}

// A snapScan is what scanSnapshot found in a snapshot.
type snapScan struct {
	header   SnapshotHeader
	version  uint32
	hdrErr   *CorruptError // the snapshot's header is damaged: nothing else was read
	sections []snapSection // intact key sections, in order
	end      *snapSection  // the end section, if intact and last
	damage   []snapDamage
}

// ok reports whether the snapshot loads: no damage, and an end section that counts its keys.
func (s *snapScan) ok() bool {
	return s.hdrErr == nil && len(s.damage) == 0 && s.end != nil && s.end.count == uint64(len(s.sections))
}

// scanSnapshot verifies the snapshot of size bytes in r section by section.
func scanSnapshot(r io.ReaderAt, size int64, name string) *snapScan {
	s := &snapScan{}
	var hb [snapHeaderSize]byte
	le := binary.LittleEndian
	if size < snapHeaderSize {
		s.hdrErr = corrupt(name, 0, "file of %d bytes is shorter than a snapshot header", size)
		return s
	}
	if _, err := r.ReadAt(hb[:], 0); err != nil {
		s.hdrErr = corrupt(name, 0, "cannot read the header: %v", err)
		return s
	}
	switch {
	case string(hb[:8]) != snapMagic:
		s.hdrErr = corrupt(name, 0, "not a bloomd snapshot (bad magic)")
	case le.Uint32(hb[40:]) != crc(hb[:40]):
		s.hdrErr = corrupt(name, 0, "snapshot header checksum mismatch")
	case le.Uint32(hb[8:]) != snapVersion && le.Uint32(hb[8:]) != snapVersion1:
		s.hdrErr = corrupt(name, 0, "unsupported snapshot version %d", le.Uint32(hb[8:]))
	}
	if s.hdrErr != nil {
		return s
	}
	s.version = le.Uint32(hb[8:])
	s.header = SnapshotHeader{Lineage: le.Uint64(hb[16:]), LogSeq: le.Uint64(hb[24:]), Created: int64(le.Uint64(hb[32:]))}
	v := &sectionVerifier{r: r, size: size, name: name, sparse: s.version == snapVersion}
	for off := int64(snapHeaderSize); off < size; {
		sec, err := v.verify(off)
		switch {
		case err == nil && sec.kind == kindEnd:
			s.end = &sec
			if sec.end != size {
				s.damage = append(s.damage, snapDamage{off: sec.end, end: size, at: sec.end,
					reason: fmt.Sprintf("%d bytes after the end of the snapshot", size-sec.end)})
			} else if sec.count != uint64(len(s.sections)) && len(s.damage) == 0 {
				s.damage = append(s.damage, snapDamage{off: sec.off, end: sec.end, at: sec.off,
					reason: fmt.Sprintf("the end section counts %d keys, the file holds %d", sec.count, len(s.sections))})
			}
			return s
		case err == nil:
			s.sections = append(s.sections, sec)
			off = sec.end
			continue
		}
		d := snapDamage{off: off, end: size, at: err.Offset, reason: err.Reason, key: sec.key, keyKnown: sec.key != nil}
		next := v.next(off + 1)
		if next >= 0 {
			d.end = next
		}
		s.damage = append(s.damage, d)
		if next < 0 {
			return s
		}
		off = next
	}
	s.damage = append(s.damage, snapDamage{off: size, end: size, at: size, reason: "snapshot cut short: the end section is missing"})
	return s
}

// A sectionVerifier checks sections of one snapshot as ReadSnapshot does, without loading bits.
type sectionVerifier struct {
	r      io.ReaderAt
	size   int64
	name   string
	sparse bool
	buf    []byte // one piece, reused
	br     *bufio.Reader
}

// errHeaderChecked stops redisbloom.LoadHeader once it has checked a header, before it
// allocates the bits.
var errHeaderChecked = errors.New("header checked")

// verify checks the section at off. On damage it returns the section's key if its header and
// key were intact, and the damage as a *CorruptError.
func (v *sectionVerifier) verify(off int64) (snapSection, *CorruptError) {
	sec := snapSection{off: off}
	if v.br == nil {
		v.br = bufio.NewReaderSize(nil, 64<<10)
	}
	v.br.Reset(io.NewSectionReader(v.r, off, v.size-off))
	d := &snapReader{r: v.br, size: v.size, off: off, name: v.name}
	fail := func(err error) (snapSection, *CorruptError) {
		var ce *CorruptError
		if errors.As(err, &ce) {
			return sec, ce
		}
		return sec, corrupt(v.name, off, "%v", err)
	}
	le := binary.LittleEndian
	var h [sectionSize]byte
	if v.size-off < sectionSize {
		return fail(corrupt(v.name, off, "snapshot cut short: %d bytes where a section header (or the end) should be", v.size-off))
	}
	if err := d.read(h[:]); err != nil {
		return fail(err)
	}
	if le.Uint32(h[28:]) != crc(h[:28]) {
		return fail(corrupt(v.name, off, "section header checksum mismatch"))
	}
	kind := h[0]
	keyLen, metaLen := int64(le.Uint32(h[4:])), int64(le.Uint32(h[8:]))
	data := le.Uint64(h[20:])
	sec.kind = kind
	if kind == kindEnd {
		if keyLen != 0 || metaLen != 0 || h[1]|h[2]|h[3] != 0 {
			return fail(corrupt(v.name, off, "malformed end section"))
		}
		sec.count, sec.end = data, d.off
		return sec, nil
	}
	rest := v.size - d.off
	switch {
	case kind != kindFilter && kind != kindString && kind != kindCuckoo && kind != kindHash || h[1]|h[2]|h[3] != 0:
		return fail(corrupt(v.name, off, "unknown section kind %d", kind))
	case keyLen+metaLen+4 > rest || keyLen > maxKeyOrValue || metaLen > maxKeyOrValue:
		return fail(corrupt(v.name, off, "key of %d bytes and value of %d do not fit in the %d bytes left", keyLen, metaLen, rest))
	case kind == kindFilter && metaLen > redisbloom.MaxHeaderSize:
		return fail(corrupt(v.name, off, "filter header of %d bytes (limit %d)", metaLen, redisbloom.MaxHeaderSize))
	}
	body := make([]byte, keyLen+metaLen+4)
	if err := d.read(body); err != nil {
		return fail(err)
	}
	key, meta := body[:keyLen:keyLen], body[keyLen:keyLen+metaLen]
	if le.Uint32(body[keyLen+metaLen:]) != crc(body[:keyLen+metaLen]) {
		return fail(corrupt(v.name, off, "key and header checksum mismatch"))
	}
	sec.key = key
	var pieces []uint64 // the pieces' sizes, in order
	plain := !v.sparse
	switch kind {
	case kindString:
		if data != 0 {
			return fail(corrupt(v.name, off, "a string with %d bytes of bits", data))
		}
	case kindHash:
		if data != 0 {
			return fail(corrupt(v.name, off, "a hash with %d bytes of bits", data))
		}
		hv, err := value.DecodeHash(meta, value.DefaultLimits)
		if err == nil && hv.Len() == 0 {
			err = errors.New("a hash with no fields")
		}
		if err != nil {
			return fail(corrupt(v.name, off, "%v", err))
		}
	case kindCuckoo:
		info, err := redisbloom.ParseCFHeader(meta)
		if err != nil {
			return fail(corrupt(v.name, off, "%v", err))
		}
		if le.Uint64(meta[24:]) != uint64(info.Filters) {
			return fail(corrupt(v.name, off, "%d sub-filters", le.Uint64(meta[24:])))
		}
		if info.Bytes != data || data > uint64(v.size-d.off) {
			return fail(corrupt(v.name, off, "%d bytes of slots declared, %d in the header, %d bytes left in the file", data, info.Bytes, v.size-d.off))
		}
		for _, s := range cuckooSubBytes(info) {
			for o := uint64(0); o < s; o += pieceSize {
				pieces = append(pieces, min(pieceSize, s-o))
			}
		}
		if data+4*uint64(len(pieces)) > uint64(v.size-d.off) {
			return fail(corrupt(v.name, off, "%d bytes of slots do not fit in the %d bytes left", data, v.size-d.off))
		}
		plain = true
	case kindFilter:
		sizes, err := linkBytes(meta)
		if err != nil {
			return fail(corrupt(v.name, off, "%v", err))
		}
		var total, least uint64
		for _, s := range sizes {
			total += s
			for o := uint64(0); o < s && least <= uint64(v.size); o += pieceSize {
				n := min(pieceSize, s-o)
				if plain {
					least += n + 4
				} else {
					least += bitmapBytes(n) + 4
				}
				pieces = append(pieces, n)
			}
		}
		if total != data || least > uint64(v.size-d.off) {
			return fail(corrupt(v.name, off, "%d bytes of bits declared, %d in the filter header, %d bytes left in the file", data, total, v.size-d.off))
		}
		if _, err := redisbloom.LoadHeader(meta, &redisbloom.Options{Reserve: func(uint64) error { return errHeaderChecked }}); !errors.Is(err, errHeaderChecked) {
			return fail(corrupt(v.name, off, "%v", err))
		}
	}
	for _, n := range pieces {
		at := d.off
		stored := n
		var sum uint32
		if !plain {
			bm := make([]byte, bitmapBytes(n))
			if err := d.read(bm); err != nil {
				return fail(err)
			}
			blocks := (n + blockSize - 1) / blockSize
			stored = 0
			for i := range blocks {
				if bm[i/8]&(1<<(i%8)) != 0 {
					stored += min(blockSize, n-i*blockSize)
				}
			}
			if blocks%8 != 0 && bm[len(bm)-1]>>(blocks%8) != 0 {
				return fail(corrupt(v.name, at, "bits set past the last block of a piece"))
			}
			sum = crc(bm)
		}
		if stored+4 > uint64(v.size-d.off) {
			return fail(corrupt(v.name, at, "a piece of %d stored bytes, %d bytes left in the file", stored, v.size-d.off))
		}
		if uint64(cap(v.buf)) < stored+4 {
			v.buf = make([]byte, stored+4)
		}
		p := v.buf[:stored+4]
		if err := d.read(p); err != nil {
			return fail(err)
		}
		if le.Uint32(p[stored:]) != crcUpdate(sum, p[:stored]) {
			return fail(corrupt(v.name, at, "bits checksum mismatch"))
		}
	}
	sec.end = d.off
	return sec, nil
}

// next returns the offset of the first intact section (or end section) at or after from, or -1.
func (v *sectionVerifier) next(from int64) int64 {
	const window = 1 << 20
	buf := make([]byte, window+sectionSize)
	le := binary.LittleEndian
	for base := from; base+sectionSize <= v.size; base += window {
		n, err := v.r.ReadAt(buf[:min(int64(len(buf)), v.size-base)], base)
		if n < sectionSize && err != nil {
			return -1
		}
		for i := 0; i+sectionSize <= n && i < window; i++ {
			h := buf[i : i+sectionSize]
			if k := h[0]; k != kindFilter && k != kindString && k != kindCuckoo && k != kindHash && k != kindEnd || h[1]|h[2]|h[3] != 0 {
				continue
			}
			if le.Uint32(h[28:]) != crc(h[:28]) {
				continue
			}
			if _, err := v.verify(base + int64(i)); err == nil {
				return base + int64(i)
			}
		}
	}
	return -1
}

// cuckooSubBytes returns the slot bytes of each sub-filter of a cuckoo filter that info
// describes (checked by redisbloom.ParseCFHeader): sub-filter i has buckets·expansion^i
// buckets of BucketSize slots, as bloom.NewCuckooFromInfo makes them.
func cuckooSubBytes(info bloom.CuckooInfo) []uint64 {
	out := make([]uint64, info.Filters)
	b := info.Buckets
	for i := range out {
		if i > 0 && info.Expansion > 1 {
			b *= uint64(info.Expansion)
		}
		out[i] = b * uint64(info.BucketSize)
	}
	return out
}

// checkSnapshot reports on the snapshot at path, as `bloomd check-aof [--fix] FILE` does: its
// header, keys and size when it is intact; otherwise every damaged stretch with the key it held
// (when known) and the intact keys around it. With fix, a damaged snapshot is replaced by one
// that holds every intact key, the damaged file kept beside it under a new name.
func checkSnapshot(f File, path string, size int64, fix bool, out io.Writer) error {
	s := scanSnapshot(f, size, path)
	if s.hdrErr != nil {
		fmt.Fprintf(out, "%s: a bloomd snapshot whose header is damaged: %s.\n", path, s.hdrErr.Reason)
		fmt.Fprintf(out, "Without its header the snapshot cannot be tied to the logs after it, and --fix cannot repair it: restore it from a backup, or move it and the logs away to start empty.\n")
		return ErrDamaged
	}
	var filters, cuckoos, strs, hashes int
	for _, sec := range s.sections {
		switch sec.kind {
		case kindFilter:
			filters++
		case kindCuckoo:
			cuckoos++
		case kindHash:
			hashes++
		default:
			strs++
		}
	}
	var parts []string
	for _, k := range []struct {
		n    int
		what string
	}{{filters, "Bloom filter"}, {cuckoos, "cuckoo filter"}, {strs, "string"}, {hashes, "hash"}} {
		if k.n > 0 {
			parts = append(parts, count(k.n, k.what))
		}
	}
	kinds := strings.Join(parts, ", ")
	if kinds == "" {
		kinds = "none"
	}
	created := time.UnixMilli(s.header.Created).UTC().Format("2006-01-02 15:04:05 UTC")
	fmt.Fprintf(out, "%s: a bloomd snapshot (format %d, taken %s, followed by log %d), %s.\n", path, s.version, created, s.header.LogSeq, count(size, "byte"))
	if s.ok() {
		fmt.Fprintf(out, "%s (%s), every checksum right: OK\n", count(len(s.sections), "key"), kinds)
		return nil
	}
	var lost []string
	unknown := 0
	for _, d := range s.damage {
		if d.end == d.off {
			fmt.Fprintf(out, "The file ends at byte offset %d without its end section: %s.\n", d.off, d.reason)
			continue
		}
		what := "(its key cannot be read)"
		switch {
		case d.keyKnown:
			what = fmt.Sprintf("(key %q)", clip(d.key))
			lost = append(lost, fmt.Sprintf("%q", clip(d.key)))
		case s.end != nil && d.off >= s.end.off:
			what = "(the end of the snapshot)"
		default:
			unknown++
		}
		intact := 0
		for _, sec := range s.sections {
			if sec.off >= d.end {
				intact++
			}
		}
		fmt.Fprintf(out, "Damage in the section at byte offset %d %s, at byte offset %d: %s. The %s from %d to the next intact section are lost; %s follow.\n",
			d.off, what, d.at, d.reason, count(d.end-d.off, "byte"), d.off, count(intact, "intact key"))
	}
	loss := strings.Join(lost, ", ")
	if unknown > 0 {
		loss = strings.TrimPrefix(loss+", and the keys of "+count(unknown, "section")+" too damaged to read", ", and ")
	}
	if loss == "" {
		loss = "no key"
	}
	fmt.Fprintf(out, "Intact: %s (%s). Lost: %s.\n", count(len(s.sections), "key"), kinds, loss)
	if !fix {
		fmt.Fprintf(out, "To write a snapshot of the intact keys (the damaged file is kept beside it), run again with --fix.\n")
		return ErrDamaged
	}
	backup, err := salvageSnapshot(f, path, s)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Wrote %s with the %s; the damaged file is kept as %s.\n", path, count(len(s.sections), "intact key"), backup)
	if len(lost) > 0 || unknown > 0 {
		fmt.Fprintf(out, "The logs after the snapshot still apply; those of their records that touch a lost key make it again with only what they add. Delete such keys once bloomd has started, or restore them from a backup or a replica.\n")
	}
	return nil
}

// salvageSnapshot replaces the snapshot at path with its header, its intact sections as they
// are and an end section counting them. The damaged file stays as a new name beside it (a hard
// link, or a copy where the file system has none), returned; no existing file is overwritten.
func salvageSnapshot(f File, path string, s *snapScan) (string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "temp-salvage-*-"+base) // removed by bloomd's start if left behind
	if err != nil {
		return "", fmt.Errorf("persist: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	w := bufio.NewWriterSize(tmp, 1<<20)
	if _, err := io.Copy(w, io.NewSectionReader(f, 0, snapHeaderSize)); err != nil {
		return "", fmt.Errorf("persist: %w", err)
	}
	for _, sec := range s.sections {
		if _, err := io.Copy(w, io.NewSectionReader(f, sec.off, sec.end-sec.off)); err != nil {
			return "", fmt.Errorf("persist: reading %s: %w", path, err)
		}
	}
	w.Write(appendSection(nil, kindEnd, 0, 0, 0, uint64(len(s.sections))))
	if err := w.Flush(); err != nil {
		return "", fmt.Errorf("persist: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("persist: syncing %s: %w", tmp.Name(), err)
	}
	backup, err := keepAside(f, path, ".damaged")
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("persist: %w", err)
	}
	if err := (OSFS{}).SyncDir(dir); err != nil {
		return "", fmt.Errorf("persist: syncing dir %s: %w", dir, err)
	}
	return backup, nil
}

// newName returns path+suffix, or path+suffix+".2", ".3", ... : the first name no file has.
func newName(path, suffix string) string {
	name := path + suffix
	for i := 2; ; i++ {
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			return name
		}
		name = fmt.Sprintf("%s%s.%d", path, suffix, i)
	}
}

// keepAside keeps the file at path (open as f) under a new name beside it, path+suffix (see
// newName), as a hard link or, where links fail, a copy; it returns the name.
func keepAside(f File, path, suffix string) (string, error) {
	for {
		name := newName(path, suffix)
		err := os.Link(path, name)
		if err == nil {
			return name, nil
		}
		if errors.Is(err, os.ErrExist) {
			continue // made meanwhile: the next name
		}
		fi, serr := f.Stat()
		if serr != nil {
			return "", fmt.Errorf("persist: %w", serr)
		}
		return name, writeNew(name, io.NewSectionReader(f, 0, fi.Size()))
	}
}

// writeNew writes r to a new file name (never an existing one) and syncs it.
func writeNew(name string, r io.Reader) error {
	w, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("persist: %w", err)
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		os.Remove(name)
		return fmt.Errorf("persist: writing %s: %w", name, err)
	}
	if err := w.Sync(); err != nil {
		w.Close()
		os.Remove(name)
		return fmt.Errorf("persist: syncing %s: %w", name, err)
	}
	return w.Close()
}
