/*
 * bcryptprimitives.dll for Wine 8 (Debian 12's), which lacks it: Go's
 * Windows runtime (1.22 and later) takes its random bytes from this DLL's
 * ProcessPrng, present on every Windows 10 and 11, and stops at start-up
 * without it. The Wine smoke test (tests/windows) copies this into its
 * prefix's system32; nothing that pilotdesk ships contains it.
 *
 * ProcessPrng fills the buffer from RtlGenRandom (advapi32's
 * SystemFunction036), which Wine has; like Windows', it always succeeds.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
	while (length > 0) {
		ULONG n = length > 0x40000000 ? 0x40000000 : (ULONG)length;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		length -= n;
	}
	return TRUE;
}
