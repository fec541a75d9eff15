//===- image.h - The kernels of a PTX, cubin or fatbin image ----*- C++ -*-===//
//
// The driver stand-in runs no code, but it checks launches against what the
// loaded image declares: the kernel names, their parameters and launch
// bounds. This reads them from PTX text, from a cubin (ELF) and from the
// uncompressed entries of a fatbin.
//
//===----------------------------------------------------------------------===//

#ifndef MP_CUDA_STANDIN_IMAGE_H
#define MP_CUDA_STANDIN_IMAGE_H

#include <cuda.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mp::standin {

/// The compute capability the stand-in's one device has (sm_90).
constexpr int kDeviceArch = 90;

struct KernelParam {
  std::string name;
  uint32_t size = 0;
  /// PTX `.ptr`: the parameter is a pointer the kernel may dereference.
  bool pointer = false;
  /// The kernel body reads the parameter (an unused `allocated` pointer of a
  /// memref descriptor may hold anything, e.g. MLIR's 0xdeadbeef).
  bool used = false;
};

struct Kernel {
  /// False for a cubin whose parameter table could not be read.
  bool paramsKnown = false;
  std::vector<KernelParam> params;
  /// `.maxntid` / `.reqntid` (0: not given).
  uint32_t maxThreads[3] = {0, 0, 0};
  uint32_t reqThreads[3] = {0, 0, 0};
};

struct Image {
  /// What loading the image returns; `log` is the JIT error log then.
  CUresult result = CUDA_SUCCESS;
  std::string log;
  /// "PTX", "cubin" or "fatbin".
  const char *kind = "PTX";
  std::map<std::string, Kernel> kernels;
  /// Some entry was compressed: any kernel name is accepted then, and its
  /// parameters are unknown.
  bool anyName = false;
};

/// Reads the image cuModuleLoadData(Ex) is given: a fatbin (magic
/// 0xBA55ED50), a cubin (ELF) or NUL-terminated PTX text.
Image readImage(const void *data);

/// Reads PTX text of `size` bytes (NUL bytes end it early).
Image readPtx(const char *text, size_t size);

} // namespace mp::standin

#endif // MP_CUDA_STANDIN_IMAGE_H
