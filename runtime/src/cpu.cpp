//===- cpu.cpp - run-time CPU feature detection ---------------------------===//
//
// Kernels pick their code by what the running CPU has (the binary may run
// on machines older or newer than the one it was built on).
//
//===----------------------------------------------------------------------===//

#include "mprt/mprt.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

namespace {

uint64_t readXcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

uint32_t detect() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
    return 0;
  bool osxsave = ecx & (1u << 27);
  bool f16c = ecx & (1u << 29);
  uint64_t xcr0 = osxsave ? readXcr0() : 0;
  bool avxState = (xcr0 & 0x6) == 0x6;                  // SSE + AVX registers
  bool avx512State = avxState && (xcr0 & 0xe0) == 0xe0; // opmask, ZMM
  bool amxState = (xcr0 & 0x60000) == 0x60000;          // tile config, data
  uint32_t features = 0;
  if (avxState && f16c)
    features |= MPRT_CPU_F16C;
  if (__get_cpuid_max(0, nullptr) < 7)
    return features;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  if (avxState && (ebx & (1u << 5)))
    features |= MPRT_CPU_AVX2;
  if (avx512State && (ebx & (1u << 16))) {
    features |= MPRT_CPU_AVX512F;
    if (ecx & (1u << 11))
      features |= MPRT_CPU_AVX512_VNNI;
    if (edx & (1u << 23))
      features |= MPRT_CPU_AVX512_FP16;
  }
  if (amxState && (edx & (1u << 25)))
    features |= MPRT_CPU_AMX_INT8;
  if (amxState && (edx & (1u << 22)))
    features |= MPRT_CPU_AMX_BF16;
  unsigned maxSubleaf = eax;
  if (maxSubleaf >= 1) {
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    if (avxState && (eax & (1u << 4)))
      features |= MPRT_CPU_AVX_VNNI;
    if ((features & MPRT_CPU_AVX512F) && (eax & (1u << 5)))
      features |= MPRT_CPU_AVX512_BF16;
  }
  return features;
}

} // namespace
#else
namespace {
uint32_t detect() { return 0; }
} // namespace
#endif

namespace {

const struct {
  uint32_t bit;
  const char *name;
} featureNames[] = {{MPRT_CPU_AVX2, "avx2"},
                    {MPRT_CPU_F16C, "f16c"},
                    {MPRT_CPU_AVX512F, "avx512f"},
                    {MPRT_CPU_AVX512_VNNI, "avx512_vnni"},
                    {MPRT_CPU_AVX512_BF16, "avx512_bf16"},
                    {MPRT_CPU_AVX512_FP16, "avx512_fp16"},
                    {MPRT_CPU_AVX_VNNI, "avx_vnni"},
                    {MPRT_CPU_AMX_INT8, "amx_int8"},
                    {MPRT_CPU_AMX_BF16, "amx_bf16"}};

/// The features MPRT_CPU_DISABLE names (comma- or space-separated), to run
/// as a CPU without them would: kernels and precision choices follow.
uint32_t disabledFeatures() {
  const char *text = std::getenv("MPRT_CPU_DISABLE");
  if (!text)
    return 0;
  uint32_t mask = 0;
  std::string list(text);
  for (char &c : list)
    if (c == ',')
      c = ' ';
  size_t start = 0;
  while ((start = list.find_first_not_of(' ', start)) != std::string::npos) {
    size_t end = list.find(' ', start);
    std::string name = list.substr(start, end - start);
    bool known = false;
    for (const auto &entry : featureNames)
      if (name == entry.name) {
        mask |= entry.bit;
        known = true;
      }
    if (!known)
      std::fprintf(stderr,
                   "mprt: warning: MPRT_CPU_DISABLE names '%s', which is not "
                   "a feature mprt detects (%s)\n",
                   name.c_str(),
                   "avx2 f16c avx512f avx512_vnni avx512_bf16 avx512_fp16 "
                   "avx_vnni amx_int8 amx_bf16");
    start = end;
  }
  return mask;
}

} // namespace

extern "C" uint32_t mprt_cpu_features(void) {
  static const uint32_t features = [] {
    uint32_t f = detect() & ~disabledFeatures();
    // What builds on a disabled feature goes with it (kernels that use
    // AVX-512 BF16 instructions need AVX-512 itself, and so on).
    if (!(f & MPRT_CPU_AVX2))
      f &= ~(MPRT_CPU_AVX512F | MPRT_CPU_AVX_VNNI);
    if (!(f & MPRT_CPU_AVX512F))
      f &= ~(MPRT_CPU_AVX512_VNNI | MPRT_CPU_AVX512_BF16 |
             MPRT_CPU_AVX512_FP16 | MPRT_CPU_AMX_INT8 | MPRT_CPU_AMX_BF16);
    return f;
  }();
  return features;
}

extern "C" const char *mprt_cpu_features_string(void) {
  static const std::string text = [] {
    std::string out;
    for (const auto &entry : featureNames)
      if (mprt_cpu_features() & entry.bit)
        out += (out.empty() ? "" : " ") + std::string(entry.name);
    return out.empty() ? std::string("none") : out;
  }();
  return text.c_str();
}
