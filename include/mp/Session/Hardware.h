//===- Hardware.h - what the machine offers, and the precision it picks -*- C++
//
// `--precision auto`: the CPU's features (mprt_cpu_features: AVX512-BF16,
// AMX-BF16, AVX512-FP16, VNNI, AMX-INT8) or the GPU's compute capability
// choose the precision a session trains in: bf16 where the hardware has
// bf16 units (no loss scaling needed), else f16 with dynamic loss scaling
// where it has f16 units, else f32. `mp-run info` prints what was detected
// and what each precision runs on (docs/training.md).
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_HARDWARE_H
#define MP_SESSION_HARDWARE_H

#include "mp/Session/CudaDevice.h"
#include "mp/Session/Options.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mp {

/// What the machine offers for mixed precision.
struct HardwareInfo {
  uint32_t cpuFeatures = 0; // MPRT_CPU_* bits
  /// The GPU, when one was asked for and could be opened.
  std::optional<GpuProperties> gpu;
  /// Why there is no GPU (when one was asked for).
  std::string gpuMissing;
};

/// The CPU of this process (mprt_cpu_features, after MPRT_CPU_DISABLE).
HardwareInfo detectCpu();
/// The CPU and, when libmprt_cuda opens one, the GPU (else why not).
HardwareInfo detectHardware();

/// What `--precision auto` chose, and why.
struct PrecisionChoice {
  FloatPrecision precision = FloatPrecision::F32;
  /// f32 products on TF32 tensor cores by default (GPUs of sm_80 and
  /// newer).
  bool tf32 = false;
  std::string reason;
  /// "precision auto -> bf16: AVX512-BF16 present".
  std::string line() const;
};

/// Chooses for `device` from `hardware` (on Cuda, hardware.gpu must be set).
PrecisionChoice choosePrecision(const HardwareInfo &hardware, Device device);

/// Whether TF32 may run here: false with an error on the CPU (it has no
/// TF32) and on GPUs older than sm_80.
bool checkTf32(const HardwareInfo &hardware, Device device,
               std::string &error);

/// The report of `mp-run info`: the CPU's features and what each precision
/// runs on there (oneDNN's kernel, conversions), the GPU's (when
/// hardware.gpu is set, else why there is none), and what `--precision
/// auto` picks on each.
std::string describeHardware(const HardwareInfo &hardware);

} // namespace mp

#endif // MP_SESSION_HARDWARE_H
