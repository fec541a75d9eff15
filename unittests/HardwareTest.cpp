//===- HardwareTest.cpp - --precision auto's choice from the hardware ----===//

#include "mp/Session/Hardware.h"
#include "mprt/mprt.h"

#include <gtest/gtest.h>

using namespace mp;

namespace {

HardwareInfo cpuWith(uint32_t features) {
  HardwareInfo hardware;
  hardware.cpuFeatures = features;
  return hardware;
}

HardwareInfo gpuOf(int major, int minor) {
  HardwareInfo hardware = cpuWith(MPRT_CPU_AVX512_BF16);
  GpuProperties gpu;
  gpu.name = "test GPU";
  gpu.computeMajor = major;
  gpu.computeMinor = minor;
  gpu.multiprocessors = 100;
  gpu.totalBytes = uint64_t(16) << 30;
  hardware.gpu = gpu;
  return hardware;
}

TEST(Hardware, CpuWithBf16UnitsTrainsInBf16) {
  PrecisionChoice amx = choosePrecision(
      cpuWith(MPRT_CPU_AMX_BF16 | MPRT_CPU_AVX512_BF16 | MPRT_CPU_AVX512_FP16),
      Device::Cpu);
  EXPECT_EQ(amx.precision, FloatPrecision::BF16);
  EXPECT_EQ(amx.line(), "precision auto -> bf16: AMX-BF16 present");
  EXPECT_FALSE(amx.tf32);
  PrecisionChoice avx =
      choosePrecision(cpuWith(MPRT_CPU_AVX512_BF16), Device::Cpu);
  EXPECT_EQ(avx.line(), "precision auto -> bf16: AVX512-BF16 present");
}

TEST(Hardware, CpuWithF16UnitsOnlyTrainsInF16) {
  PrecisionChoice choice = choosePrecision(
      cpuWith(MPRT_CPU_AVX512_FP16 | MPRT_CPU_AVX512_VNNI), Device::Cpu);
  EXPECT_EQ(choice.precision, FloatPrecision::F16);
  EXPECT_NE(choice.reason.find("dynamic loss scaling"), std::string::npos);
}

TEST(Hardware, CpuWithoutUnitsStaysF32) {
  PrecisionChoice choice = choosePrecision(
      cpuWith(MPRT_CPU_AVX2 | MPRT_CPU_F16C | MPRT_CPU_AVX512_VNNI),
      Device::Cpu);
  EXPECT_EQ(choice.precision, FloatPrecision::F32);
  EXPECT_EQ(choice.line(), "precision auto -> f32: no bf16 or f16 units "
                           "(AVX512-BF16, AMX-BF16, AVX512-FP16 absent)");
}

TEST(Hardware, GpuChoiceFollowsComputeCapability) {
  PrecisionChoice hopper = choosePrecision(gpuOf(9, 0), Device::Cuda);
  EXPECT_EQ(hopper.precision, FloatPrecision::BF16);
  EXPECT_TRUE(hopper.tf32);
  EXPECT_EQ(hopper.line(), "precision auto -> bf16: sm_90 (test GPU) has bf16 "
                           "tensor cores; TF32 for the f32 products");
  PrecisionChoice ampere = choosePrecision(gpuOf(8, 0), Device::Cuda);
  EXPECT_EQ(ampere.precision, FloatPrecision::BF16);
  PrecisionChoice turing = choosePrecision(gpuOf(7, 5), Device::Cuda);
  EXPECT_EQ(turing.precision, FloatPrecision::F16);
  EXPECT_FALSE(turing.tf32);
  PrecisionChoice pascal = choosePrecision(gpuOf(6, 1), Device::Cuda);
  EXPECT_EQ(pascal.precision, FloatPrecision::F32);
  // The CPU decides for --device cpu even where a GPU is present.
  EXPECT_EQ(choosePrecision(gpuOf(6, 1), Device::Cpu).precision,
            FloatPrecision::BF16);
}

TEST(Hardware, Tf32NeedsAnAmpereGpu) {
  std::string error;
  EXPECT_FALSE(checkTf32(cpuWith(MPRT_CPU_AVX512_BF16), Device::Cpu, error));
  EXPECT_NE(error.find("the CPU has no TF32"), std::string::npos) << error;
  EXPECT_FALSE(checkTf32(gpuOf(7, 5), Device::Cuda, error));
  EXPECT_NE(error.find("sm_80 or newer; this one is sm_75"), std::string::npos)
      << error;
  EXPECT_TRUE(checkTf32(gpuOf(8, 6), Device::Cuda, error));
}

TEST(Hardware, ReportNamesEachPrecisionsPath) {
  std::string cpuOnly = describeHardware(detectCpu());
  for (const char *line :
       {"cpu: features ", "  TF32: none on the CPU", "    f32  ", "    bf16 ",
        "    f16  ", "    int8 ", "  --device cpu: precision auto -> "})
    EXPECT_NE(cpuOnly.find(line), std::string::npos) << line << "\n" << cpuOnly;
  EXPECT_NE(cpuOnly.find("gpu: none"), std::string::npos) << cpuOnly;
  std::string withGpu = describeHardware(gpuOf(7, 0));
  EXPECT_NE(withGpu.find("gpu: sm_70 (test GPU), 100 multiprocessors, 16.0 "
                         "GiB"),
            std::string::npos)
      << withGpu;
  EXPECT_NE(withGpu.find("  bf16 tensor cores (sm_80+): no"),
            std::string::npos);
  EXPECT_NE(withGpu.find("  --device cuda: precision auto -> f16: "),
            std::string::npos);
}

} // namespace
