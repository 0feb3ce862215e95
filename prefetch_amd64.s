#include "textflag.h"

// func prefetchWords(words []uint64, idx []uint64)
TEXT ·prefetchWords(SB), NOSPLIT, $0-48
	MOVQ words_base+0(FP), AX
	MOVQ idx_base+24(FP), BX
	MOVQ idx_len+32(FP), CX
	TESTQ CX, CX
	JEQ done
loop:
	MOVQ (BX), DX
	PREFETCHT0 (AX)(DX*8)
	ADDQ $8, BX
	DECQ CX
	JNE loop
done:
	RET
