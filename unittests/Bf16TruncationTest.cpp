//===- Bf16TruncationTest.cpp - the __truncsfbf2 compiled code gets ------===//
//
// defineBf16Truncation (JitEntry.h) gives compiled code the f32 -> bf16
// rounding LLVM calls on CPUs without AVX512-BF16. Run through the
// session's own JIT (compileModule) on bit patterns, against a reference
// that picks the nearer of the two neighbouring bf16 values, ties to even.
//
//===----------------------------------------------------------------------===//

#include "mp/Session/JitEntry.h"

#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace {

// The declaration is what LLVM's code generator would call; the pass adds
// the body.
const char *kModule = R"mlir(
llvm.func @__truncsfbf2(f32) -> bf16
llvm.func @round_to_bf16(%x: f32) -> i32 {
  %r = llvm.call @__truncsfbf2(%x) : (f32) -> bf16
  %b = llvm.bitcast %r : bf16 to i16
  %w = llvm.zext %b : i16 to i32
  llvm.return %w : i32
}
)mlir";

float fromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// The bf16 nearest to `bits` (ties to even); for NaN any quiet NaN.
uint32_t reference(uint32_t bits) {
  uint32_t sign = bits & 0x80000000u, magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return 0x7fc0; // checked as "a quiet NaN", not bit for bit
  uint32_t low = magnitude & 0xffff0000u, high = low + 0x10000u;
  double x = fromBits(magnitude), lowValue = fromBits(low);
  // Beyond the largest bf16 the next value up is 2^128 (it rounds to inf).
  double highValue =
      high >= 0x7f800000u ? std::ldexp(1.0, 128) : double(fromBits(high));
  uint32_t chosen;
  if (x - lowValue < highValue - x)
    chosen = low;
  else if (x - lowValue > highValue - x)
    chosen = high;
  else
    chosen = (low >> 16) & 1 ? high : low;
  if (magnitude == 0x7f800000u)
    chosen = magnitude;
  return (sign | chosen) >> 16;
}

TEST(Bf16Truncation, RoundsToNearestEvenThroughTheJit) {
  std::unique_ptr<mlir::MLIRContext> context = mp::createSessionContext();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kModule, context.get());
  ASSERT_TRUE(module);
  std::string error;
  std::unique_ptr<mlir::ExecutionEngine> engine =
      mp::compileModule(*module, nullptr, error);
  ASSERT_TRUE(engine) << error;
  auto address = engine->lookup("round_to_bf16");
  ASSERT_TRUE(static_cast<bool>(address));
  auto round = reinterpret_cast<uint32_t (*)(float)>(*address);

  std::vector<uint32_t> inputs = {
      0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u,
      0x3f808000u, // 1 + 2^-8: a tie, stays at the even 1.0
      0x3f818000u, // a tie above an odd value: rounds up
      0x3f808001u, // just above a tie: rounds up
      0x00000001u, 0x00008000u, 0x00018000u, // subnormals and their ties
      0x7f7fffffu, 0x7f7f8000u,              // overflow to inf
      0x7f800000u, 0xff800000u,              // infinities
      0x7f800001u, 0xffc00000u, 0x7fffffffu, // NaNs, signalling and quiet
  };
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i)
    inputs.push_back(rng());

  for (uint32_t bits : inputs) {
    uint32_t got = round(fromBits(bits));
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
      EXPECT_EQ(got & 0x7f80u, 0x7f80u) << std::hex << bits;
      EXPECT_NE(got & 0x0040u, 0u) << "not a quiet NaN: " << std::hex << bits;
      continue;
    }
    ASSERT_EQ(got, reference(bits)) << "input bits " << std::hex << bits;
  }
}

} // namespace
