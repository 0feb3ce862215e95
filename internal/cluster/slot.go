package cluster

// Slots is the number of hash slots a Redis Cluster divides its keys into.
const Slots = 16384

// crcTable is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no reflection, no final XOR),
// the checksum Redis Cluster hashes keys with, computed a byte at a time.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC16 returns the CRC-16/XMODEM checksum of b (CRC16("123456789") is 0x31c3).
func CRC16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crcTable[byte(c>>8)^x]
	}
	return c
}

// HashTag returns the part of key that decides its slot: what lies between the first '{' and
// the first '}' after it, when that is not empty; otherwise the whole key.
func HashTag(key []byte) []byte {
	for s, c := range key {
		if c != '{' {
			continue
		}
		for e := s + 1; e < len(key); e++ {
			if key[e] == '}' {
				if e == s+1 {
					return key // "{}" hashes the whole key
				}
				return key[s+1 : e]
			}
		}
		return key // no '}' after the first '{'
	}
	return key
}

// KeySlot returns the hash slot of key, as Redis Cluster computes it (CLUSTER KEYSLOT): the
// low 14 bits of the CRC-16 of its hash tag. It does not allocate.
func KeySlot(key []byte) int {
	return int(CRC16(HashTag(key)) & (Slots - 1))
}

// A SlotBitmap holds one bit per slot: slot i is bit i%8 of byte i/8, the layout of the cluster
// bus's slot maps.
type SlotBitmap [Slots / 8]byte

// Has reports whether slot i is set.
func (b *SlotBitmap) Has(i int) bool { return b[i>>3]&(1<<(i&7)) != 0 }

// Set sets slot i.
func (b *SlotBitmap) Set(i int) { b[i>>3] |= 1 << (i & 7) }

// Clear clears slot i.
func (b *SlotBitmap) Clear(i int) { b[i>>3] &^= 1 << (i & 7) }
