#include "textflag.h"

// murmur16x8: murmur3 x64_128 with seed 0 (Guava64's hash) of eight 16-byte keys at once, four
// keys per AVX2 register, in two sets (A: keys 0-3 in Y0/Y1, B: keys 4-7 in Y2/Y3) whose steps
// alternate so that the multiplications of one hide the latency of the other. Written by hand
// because Go does not vectorise; it is checked against murmur3.Sum128 by TestHashGroup and
// FuzzHashGroup. AVX2 has no 64-bit multiplication, so a·c mod 2^64 is built from three 32-bit
// ones: lo(a)·lo(c) + (hi(a)·lo(c) + lo(a)·hi(c))<<32. It uses AX-DX and X0-X13/Y0-Y13, which
// assembly may clobber; X15, which Go's internal ABI keeps zero, is not touched.

// MUL sets r = x·c mod 2^64 for the constant c whose 32-bit halves are clo and chi; x is kept.
#define MUL(x, r, t1, t2, clo, chi) \
	VPMULUDQ clo, x, r; \
	VPSRLQ $32, x, t1; \
	VPMULUDQ clo, t1, t1; \
	VPMULUDQ chi, x, t2; \
	VPADDQ t1, t2, t1; \
	VPSLLQ $32, t1, t1; \
	VPADDQ t1, r, r

// ROTL rotates x left by n bits.
#define ROTL(x, n, t) \
	VPSLLQ $n, x, t; \
	VPSRLQ $(64-n), x, x; \
	VPOR t, x, x

// TIMES5ADD sets x = x·5 + k.
#define TIMES5ADD(x, t, k) \
	VPSLLQ $2, x, t; \
	VPADDQ t, x, x; \
	VPADDQ k, x, x

// XORSHR33 sets x ^= x >> 33.
#define XORSHR33(x, t) \
	VPSRLQ $33, x, t; \
	VPXOR t, x, x

// func murmur16x8(keys *[8]*byte, h1, h2 *[8]uint64)
TEXT ·murmur16x8(SB), NOSPLIT, $0-24
	MOVQ keys+0(FP), AX
	MOVQ h1+8(FP), BX
	MOVQ h2+16(FP), CX

	// Set A: keys 0-3, (k1, k2) into Y0, Y1. Set B: keys 4-7 into Y2, Y3.
	MOVQ 0(AX), DX
	VMOVDQU (DX), X10
	MOVQ 8(AX), DX
	VMOVDQU (DX), X11
	MOVQ 16(AX), DX
	VMOVDQU (DX), X12
	MOVQ 24(AX), DX
	VMOVDQU (DX), X13
	VPUNPCKLQDQ X11, X10, X0
	VPUNPCKHQDQ X11, X10, X1
	VPUNPCKLQDQ X13, X12, X4
	VPUNPCKHQDQ X13, X12, X5
	VINSERTI128 $1, X4, Y0, Y0
	VINSERTI128 $1, X5, Y1, Y1

	MOVQ 32(AX), DX
	VMOVDQU (DX), X10
	MOVQ 40(AX), DX
	VMOVDQU (DX), X11
	MOVQ 48(AX), DX
	VMOVDQU (DX), X12
	MOVQ 56(AX), DX
	VMOVDQU (DX), X13
	VPUNPCKLQDQ X11, X10, X2
	VPUNPCKHQDQ X11, X10, X3
	VPUNPCKLQDQ X13, X12, X4
	VPUNPCKHQDQ X13, X12, X5
	VINSERTI128 $1, X4, Y2, Y2
	VINSERTI128 $1, X5, Y3, Y3

	// h1 = rotl(rotl(k1·c1, 31)·c2, 27)·5 + 0x52dce729
	MUL(Y0, Y4, Y5, Y6, c1lo<>(SB), c1hi<>(SB))
	MUL(Y2, Y7, Y8, Y9, c1lo<>(SB), c1hi<>(SB))
	ROTL(Y4, 31, Y5)
	ROTL(Y7, 31, Y8)
	MUL(Y4, Y0, Y5, Y6, c2lo<>(SB), c2hi<>(SB))
	MUL(Y7, Y2, Y8, Y9, c2lo<>(SB), c2hi<>(SB))
	ROTL(Y0, 27, Y5)
	ROTL(Y2, 27, Y8)
	TIMES5ADD(Y0, Y5, add1<>(SB))
	TIMES5ADD(Y2, Y8, add1<>(SB))

	// h2 = (rotl(rotl(k2·c2, 33)·c1, 31) + h1)·5 + 0x38495ab5
	MUL(Y1, Y4, Y5, Y6, c2lo<>(SB), c2hi<>(SB))
	MUL(Y3, Y7, Y8, Y9, c2lo<>(SB), c2hi<>(SB))
	ROTL(Y4, 33, Y5)
	ROTL(Y7, 33, Y8)
	MUL(Y4, Y1, Y5, Y6, c1lo<>(SB), c1hi<>(SB))
	MUL(Y7, Y3, Y8, Y9, c1lo<>(SB), c1hi<>(SB))
	ROTL(Y1, 31, Y5)
	ROTL(Y3, 31, Y8)
	VPADDQ Y0, Y1, Y1
	VPADDQ Y2, Y3, Y3
	TIMES5ADD(Y1, Y5, add2<>(SB))
	TIMES5ADD(Y3, Y8, add2<>(SB))

	// The length, then h1 += h2, h2 += h1.
	VPXOR len16<>(SB), Y0, Y0
	VPXOR len16<>(SB), Y1, Y1
	VPXOR len16<>(SB), Y2, Y2
	VPXOR len16<>(SB), Y3, Y3
	VPADDQ Y1, Y0, Y0
	VPADDQ Y3, Y2, Y2
	VPADDQ Y0, Y1, Y1
	VPADDQ Y2, Y3, Y3

	// fmix64 of h1 and h2: x ^= x>>33; x *= f1; x ^= x>>33; x *= f2; x ^= x>>33.
	XORSHR33(Y0, Y5)
	XORSHR33(Y2, Y8)
	MUL(Y0, Y4, Y5, Y6, f1lo<>(SB), f1hi<>(SB))
	MUL(Y2, Y7, Y8, Y9, f1lo<>(SB), f1hi<>(SB))
	XORSHR33(Y4, Y5)
	XORSHR33(Y7, Y8)
	MUL(Y4, Y0, Y5, Y6, f2lo<>(SB), f2hi<>(SB))
	MUL(Y7, Y2, Y8, Y9, f2lo<>(SB), f2hi<>(SB))
	XORSHR33(Y0, Y5)
	XORSHR33(Y2, Y8)

	XORSHR33(Y1, Y5)
	XORSHR33(Y3, Y8)
	MUL(Y1, Y4, Y5, Y6, f1lo<>(SB), f1hi<>(SB))
	MUL(Y3, Y7, Y8, Y9, f1lo<>(SB), f1hi<>(SB))
	XORSHR33(Y4, Y5)
	XORSHR33(Y7, Y8)
	MUL(Y4, Y1, Y5, Y6, f2lo<>(SB), f2hi<>(SB))
	MUL(Y7, Y3, Y8, Y9, f2lo<>(SB), f2hi<>(SB))
	XORSHR33(Y1, Y5)
	XORSHR33(Y3, Y8)

	// h1 += h2, h2 += h1.
	VPADDQ Y1, Y0, Y0
	VPADDQ Y3, Y2, Y2
	VPADDQ Y0, Y1, Y1
	VPADDQ Y2, Y3, Y3

	VMOVDQU Y0, 0(BX)
	VMOVDQU Y2, 32(BX)
	VMOVDQU Y1, 0(CX)
	VMOVDQU Y3, 32(CX)
	VZEROUPPER
	RET

// The constants, each in the four 64-bit lanes of a register.
#define LANES(name, v) \
	DATA name+0(SB)/8, v; \
	DATA name+8(SB)/8, v; \
	DATA name+16(SB)/8, v; \
	DATA name+24(SB)/8, v; \
	GLOBL name(SB), RODATA|NOPTR, $32

LANES(c1lo<>, $0x114253d5)
LANES(c1hi<>, $0x87c37b91)
LANES(c2lo<>, $0x2745937f)
LANES(c2hi<>, $0x4cf5ad43)
LANES(f1lo<>, $0xed558ccd)
LANES(f1hi<>, $0xff51afd7)
LANES(f2lo<>, $0x1a85ec53)
LANES(f2hi<>, $0xc4ceb9fe)
LANES(add1<>, $0x52dce729)
LANES(add2<>, $0x38495ab5)
LANES(len16<>, $16)
