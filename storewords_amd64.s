#include "textflag.h"

// func storeWords(dst []uint64, src []byte)
//
// dst[i] = the little-endian word at src[8*i:], for every i < len(dst), with one plain aligned
// 8-byte MOVQ per word: on amd64 each such store is atomic (readers see the old or the new word,
// never a mix), but it needs no LOCK and no fence, unlike atomic.StoreUint64's XCHGQ.
TEXT ·storeWords(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	CMPQ CX, $4
	JB   tail
loop4:
	MOVQ 0(SI), AX
	MOVQ 8(SI), BX
	MOVQ 16(SI), DX
	MOVQ 24(SI), R8
	MOVQ AX, 0(DI)
	MOVQ BX, 8(DI)
	MOVQ DX, 16(DI)
	MOVQ R8, 24(DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $4, CX
	CMPQ CX, $4
	JAE  loop4
tail:
	TESTQ CX, CX
	JEQ   done
loop1:
	MOVQ (SI), AX
	MOVQ AX, (DI)
	ADDQ $8, SI
	ADDQ $8, DI
	DECQ CX
	JNE  loop1
done:
	RET
