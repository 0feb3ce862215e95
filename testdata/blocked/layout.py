#!/usr/bin/env python3
"""An independent implementation of the blocked filter's layout, as documented in blocked.go.

It prints the words (index:little-endian hex) a key sets in an empty filter; the expected values
of TestBlockedGoldenLayout come from it. The murmur3 x64_128 hashes (seed 0) of the keys are
given literally (h1, h2 as Guava's MURMUR128_MITZ_64 reads them; "hello" is the well-known
cbd8a7b341bd9b02 5b1e906a48ae1d19), so this needs nothing beyond Python 3.
"""

C = [1, 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f, 0x165667b19e3779f9,
     0xd6e8feb86659fd93, 0xa0761d6478bd642f, 0xe7037ed1a0b428db, 0x8ebc6af09c88c6e3]
HASHES = {
    "hello": (14688674573012802306, 6565844092913065241),
    "": (0, 0),
    "0123456789abcdef": (5467490433528156583, 9782763267945859290),
    "bloom": (2814144645387978802, 15719424553552160519),
}


def layout(key, m, k, sectors):
    h1, h2 = HASHES[key]
    block = (h1 * (m // 512)) >> 64
    w = {1: 3, 2: 2, 4: 1, 8: 0}[sectors]
    b = k // sectors
    words = {}
    for s in range(sectors):
        x = (h2 * C[s]) % 2**64
        word = 8 * block + s * (8 // sectors) + (x >> (64 - w) if w else 0)
        mask = 0
        for i in range(b):
            mask |= 1 << ((x >> (64 - w - 6 * (i + 1))) & 63)
        words[word] = words.get(word, 0) | mask
    return " ".join("%d:%s" % (i, words[i].to_bytes(8, "little").hex()) for i in sorted(words))


for args in [("hello", 512000, 4, 1), ("hello", 512000, 6, 2), ("hello", 512000, 8, 4),
             ("hello", 512000, 8, 8), ("", 3584, 6, 2), ("0123456789abcdef", 3584, 6, 2),
             ("bloom", 512 * 131075, 20, 2)]:
    print(repr(args), layout(*args))
