	.text
	.globl	ProcessPrng
ProcessPrng:
	# BOOL ProcessPrng(PBYTE data, SIZE_T len): advapi32's RtlGenRandom
	# (SystemFunction036) takes the same first two arguments (rcx, rdx).
	jmp	*__imp_SystemFunction036(%rip)
	.globl	DllMain
DllMain:
	movl	$1, %eax
	ret
