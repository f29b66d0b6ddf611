/* An AVX2-only CPU as every library in a process sees it: LD_PRELOAD this and CPUID faults
 * (Linux ARCH_SET_CPUID, on CPUs with the cpuid_fault flag); the handler runs the real
 * instruction and clears the AVX-512, AMX, AVX-VNNI and GFNI bits of leaf 7 before returning,
 * so oneDNN, OpenVINO, ONNX Runtime's MLAS, CTranslate2, PyTorch and numpy pick the kernels a
 * Zen 3 would. The instructions still exist (code that skips CPUID can use them) and the
 * micro-architecture is the host's: an ISA emulation, not a Zen 3.
 * Built and checked by socialgym_benchmarks/perf/isa.py. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <asm/prctl.h>

static int set_cpuid(int enabled) { return (int)syscall(SYS_arch_prctl, ARCH_SET_CPUID, enabled); }

static void on_fault(int sig, siginfo_t *info, void *context) {
    greg_t *regs = ((ucontext_t *)context)->uc_mcontext.gregs;
    const uint8_t *ip = (const uint8_t *)regs[REG_RIP];
    (void)info;
    if (ip[0] != 0x0f || ip[1] != 0xa2) {       /* a real fault: die of it as without us */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    uint32_t leaf = (uint32_t)regs[REG_RAX], sub = (uint32_t)regs[REG_RCX], a, b, c, d;
    set_cpuid(1);                                /* the flag is per thread: only this one */
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(leaf), "c"(sub));
    set_cpuid(0);
    if (leaf == 7 && sub == 0) {
        /* EBX: AVX512 F DQ IFMA PF ER CD BW VL; ECX: VBMI VBMI2 GFNI VNNI BITALG VPOPCNTDQ;
         * EDX: 4VNNIW 4FMAPS VP2INTERSECT AMX-BF16 AVX512-FP16 AMX-TILE AMX-INT8 */
        b &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 30) | (1u << 31));
        c &= ~((1u << 1) | (1u << 6) | (1u << 8) | (1u << 11) | (1u << 12) | (1u << 14));
        d &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25));
    } else if (leaf == 7 && sub == 1) {
        a &= ~((1u << 4) | (1u << 5));           /* AVX-VNNI, AVX512-BF16 */
    }
    regs[REG_RAX] = a; regs[REG_RBX] = b; regs[REG_RCX] = c; regs[REG_RDX] = d;
    regs[REG_RIP] += 2;                          /* past the two-byte CPUID */
}

__attribute__((constructor)) static void install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &action, 0);
    set_cpuid(0);                                /* fails (and masks nothing) without cpuid_fault */
}
