//===- Hardware.cpp - what the machine offers, and the precision it picks -===//

#include "mp/Session/Hardware.h"

#include "mprt/mprt.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace mp {

namespace {

bool has(const HardwareInfo &hardware, uint32_t bits) {
  return (hardware.cpuFeatures & bits) != 0;
}

/// "sm_90 (NVIDIA H100 80GB HBM3)".
std::string gpuName(const GpuProperties &gpu) {
  return "sm_" + std::to_string(gpu.computeMajor) +
         std::to_string(gpu.computeMinor) + " (" + gpu.name + ")";
}

PrecisionChoice chooseForCpu(const HardwareInfo &hardware) {
  PrecisionChoice choice;
  if (has(hardware, MPRT_CPU_AMX_BF16 | MPRT_CPU_AVX512_BF16)) {
    choice.precision = FloatPrecision::BF16;
    choice.reason = has(hardware, MPRT_CPU_AMX_BF16) ? "AMX-BF16 present"
                                                     : "AVX512-BF16 present";
  } else if (has(hardware, MPRT_CPU_AVX512_FP16)) {
    choice.precision = FloatPrecision::F16;
    choice.reason = "AVX512-FP16 present, no bf16 units (AVX512-BF16, "
                    "AMX-BF16); f16 with dynamic loss scaling";
  } else {
    choice.precision = FloatPrecision::F32;
    choice.reason = "no bf16 or f16 units (AVX512-BF16, AMX-BF16, "
                    "AVX512-FP16 absent)";
  }
  return choice;
}

PrecisionChoice chooseForGpu(const GpuProperties &gpu) {
  PrecisionChoice choice;
  if (gpu.computeMajor >= 8) {
    choice.precision = FloatPrecision::BF16;
    choice.tf32 = true;
    choice.reason = gpuName(gpu) +
                    " has bf16 tensor cores; TF32 for the f32 products";
  } else if (gpu.computeMajor == 7) {
    choice.precision = FloatPrecision::F16;
    choice.reason = gpuName(gpu) + " has f16 tensor cores but no bf16; f16 "
                                   "with dynamic loss scaling";
  } else {
    choice.precision = FloatPrecision::F32;
    choice.reason = gpuName(gpu) + " has no tensor cores (sm_70 and newer)";
  }
  return choice;
}

/// mprt_gemm_describe's text for one product type.
std::string cpuProducts(int32_t type) {
  char text[256];
  if (mprt_gemm_describe(type, text, sizeof(text)) != MPRT_OK)
    return std::string("unknown: ") + mprt_last_error();
  return text;
}

} // namespace

HardwareInfo detectCpu() {
  HardwareInfo hardware;
  hardware.cpuFeatures = mprt_cpu_features();
  return hardware;
}

HardwareInfo detectHardware() {
  HardwareInfo hardware = detectCpu();
  std::string error;
  GpuProperties properties;
  std::unique_ptr<CudaDevice> cuda = CudaDevice::open(error);
  if (cuda && cuda->properties(properties, error))
    hardware.gpu = properties;
  else
    hardware.gpuMissing = error;
  return hardware;
}

std::string PrecisionChoice::line() const {
  return "precision auto -> " +
         mlir::mp::stringifyFloatPrecision(precision).str() + ": " + reason;
}

PrecisionChoice choosePrecision(const HardwareInfo &hardware, Device device) {
  if (device == Device::Cuda && hardware.gpu)
    return chooseForGpu(*hardware.gpu);
  return chooseForCpu(hardware);
}

bool checkTf32(const HardwareInfo &hardware, Device device,
               std::string &error) {
  if (device == Device::Cpu) {
    error = "--tf32: the CPU has no TF32 (f32 products run in f32 on "
            "oneDNN's sgemm); drop --tf32 or use --device cuda";
    return false;
  }
  if (hardware.gpu && hardware.gpu->computeMajor < 8) {
    error = "--tf32 needs a GPU of sm_80 or newer; this one is " +
            gpuName(*hardware.gpu);
    return false;
  }
  return true;
}

namespace {

/// The CPU's units and what each precision's products run on.
void describeCpu(const HardwareInfo &hardware, llvm::raw_ostream &os) {
  auto yesNo = [&](uint32_t bits) { return has(hardware, bits) ? "yes" : "no"; };
  os << "cpu: features " << mprt_cpu_features_string() << "\n";
  os << "  bf16 units (AVX512-BF16, AMX-BF16): "
     << yesNo(MPRT_CPU_AVX512_BF16 | MPRT_CPU_AMX_BF16) << "\n";
  os << "  f16 units (AVX512-FP16): " << yesNo(MPRT_CPU_AVX512_FP16) << "\n";
  os << "  int8 dot products (AVX512-VNNI, AVX-VNNI, AMX-INT8): "
     << yesNo(MPRT_CPU_AVX512_VNNI | MPRT_CPU_AVX_VNNI | MPRT_CPU_AMX_INT8)
     << "\n";
  os << "  TF32: none on the CPU\n";
  os << "  products per precision (elementwise code is compiled loops that "
        "compute in f32 on converted values):\n";
  const std::pair<const char *, int32_t> products[] = {
      {"f32", MPRT_GEMM_F32},
      {"bf16", MPRT_GEMM_BF16},
      {"f16", MPRT_GEMM_F16},
      {"int8", MPRT_GEMM_S8}};
  for (const auto &[name, type] : products)
    os << llvm::format("    %-5s", name) << cpuProducts(type) << "\n";
  os << "  --device cpu: " << chooseForCpu(hardware).line() << "\n";
}

/// The GPU's tensor cores and what each precision's products run on.
void describeGpu(const GpuProperties &gpu, llvm::raw_ostream &os) {
  bool ampere = gpu.computeMajor >= 8, volta = gpu.computeMajor >= 7;
  os << "gpu: " << gpuName(gpu) << ", " << gpu.multiprocessors
     << " multiprocessors, "
     << llvm::format("%.1f", gpu.totalBytes / double(1ull << 30))
     << " GiB\n";
  os << "  bf16 tensor cores (sm_80+): " << (ampere ? "yes" : "no") << "\n";
  os << "  f16 tensor cores (sm_70+): " << (volta ? "yes" : "no") << "\n";
  os << "  TF32 (sm_80+): " << (ampere ? "yes" : "no") << "\n";
  os << "  products per precision (cuBLASLt, f32 accumulation; elementwise "
        "code is generated kernels):\n";
  os << "    f32  CUBLAS_COMPUTE_32F"
     << (ampere ? " (CUBLAS_COMPUTE_32F_FAST_TF32 with --tf32)" : "") << "\n";
  os << "    bf16 " << (ampere ? "tensor cores" : "no bf16 units: no kernel")
     << "\n";
  os << "    f16  " << (volta ? "tensor cores" : "no tensor cores") << "\n";
  os << "    int8 CUBLAS_COMPUTE_32I"
     << (gpu.computeMajor * 10 + gpu.computeMinor >= 75 ? " (tensor cores)"
                                                         : "")
     << "\n";
  os << "  --device cuda: " << chooseForGpu(gpu).line() << "\n";
}

} // namespace

std::string describeHardware(const HardwareInfo &hardware) {
  std::string text;
  llvm::raw_string_ostream os(text);
  describeCpu(hardware, os);
  if (!hardware.gpu) {
    os << "gpu: none"
       << (hardware.gpuMissing.empty() ? "" : " (" + hardware.gpuMissing + ")")
       << "\n";
    return text;
  }
  describeGpu(*hardware.gpu, os);
  return text;
}

} // namespace mp
