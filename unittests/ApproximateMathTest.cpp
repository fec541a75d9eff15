//===- ApproximateMathTest.cpp - polynomial exp, log, tanh, erf vs libm ---===//
//
// --mp-lower-cpu computes f32 exp, expm1, log, log1p, log2, tanh and erf
// with upstream's polynomial approximations (--mp-approximate-math) in
// vector registers. Each function, lowered by the session's own CPU
// pipeline and JIT, runs over a sweep of its domain and over random bit
// patterns, against the double-precision result rounded to f32. Its error
// in ulp (relative to the result's magnitude, or absolute where results
// cross zero) must stay within a bound close to libm's own, and the
// special values (infinities, NaN, overflow, underflow, zero) must be
// libm's.
//
//===----------------------------------------------------------------------===//

#include "mp/Session/JitEntry.h"
#include "mp/Transforms/Pipelines.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int64_t kLength = 4096;

/// `@apply_NAME(%in, %out)`: out = NAME(in), elementwise, on tensors as a
/// session's step holds them.
std::string moduleFor(const std::string &op) {
  std::string n = std::to_string(kLength);
  return "#map = affine_map<(d0) -> (d0)>\n"
         "func.func @apply(%in: memref<" +
         n + "xf32>, %out: memref<" + n +
         "xf32>) attributes {llvm.emit_c_interface} {\n"
         "  linalg.generic {indexing_maps = [#map, #map], iterator_types = "
         "[\"parallel\"]} ins(%in : memref<" +
         n +
         "xf32>) outs(%out : "
         "memref<" +
         n +
         "xf32>) {\n"
         "  ^bb0(%x: f32, %y: f32):\n"
         "    %r = math." +
         op +
         " %x : f32\n"
         "    linalg.yield %r : f32\n"
         "  }\n"
         "  return\n"
         "}\n";
}

struct Memref1D {
  float *allocated, *aligned;
  int64_t offset, size, stride;
};

/// The f32 function `op` as the CPU pipeline compiles it, applied to
/// `inputs` (any length).
class Compiled {
public:
  Compiled(const std::string &op, bool approximate) {
    context = mp::createSessionContext();
    module =
        mlir::parseSourceString<mlir::ModuleOp>(moduleFor(op), context.get());
    if (!module)
      return;
    mlir::PassManager pm(context.get());
    mlir::mp::LowerCpuOptions options;
    options.approximateMath = approximate;
    mlir::mp::buildLowerCpuPipeline(pm, options);
    if (mlir::failed(pm.run(*module)))
      return;
    // What the approximation removes: libm calls (or LLVM's exp, log and
    // tanh intrinsics, which become them).
    module->walk([&](mlir::Operation *inner) {
      if (auto call = llvm::dyn_cast<mlir::LLVM::CallOp>(inner))
        if (call.getCallee())
          libmCalls += *call.getCallee() != "apply";
      llvm::StringRef name = inner->getName().getStringRef();
      if (name.starts_with("llvm.intr.exp") ||
          name.starts_with("llvm.intr.log") || name == "llvm.intr.tanh")
        ++libmCalls;
    });
    std::string error;
    engine = mp::compileModule(*module, nullptr, error);
    if (!engine)
      return;
    auto address = engine->lookup("_mlir_ciface_apply");
    if (address)
      apply = reinterpret_cast<void (*)(Memref1D *, Memref1D *)>(*address);
  }

  bool ok() const { return apply != nullptr; }
  int libmCalls = 0;

  std::vector<float> run(const std::vector<float> &inputs) {
    std::vector<float> in(kLength), out(kLength), results;
    for (size_t first = 0; first < inputs.size(); first += kLength) {
      size_t count = std::min<size_t>(kLength, inputs.size() - first);
      std::fill(in.begin(), in.end(), 0.0f);
      std::copy_n(inputs.begin() + first, count, in.begin());
      Memref1D a{in.data(), in.data(), 0, kLength, 1};
      Memref1D b{out.data(), out.data(), 0, kLength, 1};
      apply(&a, &b);
      results.insert(results.end(), out.begin(), out.begin() + count);
    }
    return results;
  }

private:
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  void (*apply)(Memref1D *, Memref1D *) = nullptr;
};

float fromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// One f32 ulp at `value`'s magnitude (the smallest normal's below it).
double ulpAt(double value) {
  double magnitude =
      std::max(std::fabs(value), double(std::numeric_limits<float>::min()));
  int exponent;
  std::frexp(magnitude, &exponent);
  return std::ldexp(1.0, exponent - 24);
}

struct Case {
  const char *op;
  std::function<double(double)> reference;
  std::function<float(float)> libm;
  float low, high; // the sweep
  // Results that cross zero (tanh, erf, expm1, log1p, log near 1) are
  // measured against ulps of this floor instead of a vanishing result.
  double absoluteFloor;
  double maxUlp; // the bound the approximation must meet
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.op; }

/// Where results are finite and normal, the error in ulps of the larger of
/// |reference| and `floor`.
double ulpError(float got, double want, double floor) {
  return std::fabs(double(got) - want) /
         ulpAt(std::max(std::fabs(want), floor));
}

class ApproximateMath : public ::testing::TestWithParam<Case> {};

TEST_P(ApproximateMath, WithinBoundOfLibmAndSameSpecialValues) {
  const Case &c = GetParam();
  Compiled approximated(c.op, /*approximate=*/true);
  ASSERT_TRUE(approximated.ok()) << c.op << " did not compile";
  EXPECT_EQ(approximated.libmCalls, 0)
      << c.op << ": the approximation left libm calls";
  Compiled withLibm(c.op, /*approximate=*/false);
  ASSERT_TRUE(withLibm.ok()) << c.op << " did not compile with libm";
  EXPECT_GT(withLibm.libmCalls, 0) << c.op << ": nothing to approximate";

  std::vector<float> inputs;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> sweep(c.low, c.high);
  for (int i = 0; i < 200000; ++i)
    inputs.push_back(sweep(rng));
  for (int i = 0; i < 200000; ++i)
    inputs.push_back(fromBits(rng())); // every exponent, NaNs included
  const float inf = std::numeric_limits<float>::infinity();
  for (float special :
       {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf,
        std::numeric_limits<float>::quiet_NaN(),
        std::numeric_limits<float>::denorm_min(),
        std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
        -std::numeric_limits<float>::max(), 88.0f, 89.0f, -87.0f, -104.0f,
        20.0f, -20.0f, 9.0f, -9.0f})
    inputs.push_back(special);
  std::vector<float> got = approximated.run(inputs);

  double worst = 0, worstLibm = 0;
  float worstAt = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    float x = inputs[i];
    double want = c.reference(double(x));
    float libm = c.libm(x);
    // The special values: NaN where libm's is NaN, infinities and zeros
    // where libm's are, with libm's sign.
    if (std::isnan(libm)) {
      EXPECT_TRUE(std::isnan(got[i])) << c.op << "(" << x << ") = " << got[i];
      continue;
    }
    if (std::isinf(libm) || libm == 0.0f) {
      EXPECT_EQ(got[i], libm) << c.op << "(" << x << ")";
      continue;
    }
    ASSERT_TRUE(std::isfinite(got[i]))
        << c.op << "(" << x << ") = " << got[i] << ", libm " << libm;
    // Subnormal results (exp far below 0) are not held to ulps.
    if (std::fabs(want) < std::numeric_limits<float>::min())
      continue;
    double error = ulpError(got[i], want, c.absoluteFloor);
    if (error > worst) {
      worst = error;
      worstAt = x;
    }
    worstLibm = std::max(worstLibm, ulpError(libm, want, c.absoluteFloor));
  }
  std::printf("%-6s largest error %.2f ulp (at %.9g); libm's %.2f ulp\n", c.op,
              worst, worstAt, worstLibm);
  EXPECT_LE(worst, c.maxUlp) << c.op << " at " << worstAt;
}

INSTANTIATE_TEST_SUITE_P(
    Functions, ApproximateMath,
    ::testing::Values(
        Case{"exp", [](double x) { return std::exp(x); },
             [](float x) { return std::exp(x); }, -87.0f, 88.0f, 0.0, 1.5},
        Case{"expm1", [](double x) { return std::expm1(x); },
             [](float x) { return std::expm1(x); }, -20.0f, 20.0f, 0.0, 3.0},
        Case{"log", [](double x) { return std::log(x); },
             [](float x) { return std::log(x); }, 1e-30f, 1e30f, 1.0, 1.5},
        Case{"log1p", [](double x) { return std::log1p(x); },
             [](float x) { return std::log1p(x); }, -0.99f, 100.0f, 0.0, 2.5},
        Case{"log2", [](double x) { return std::log2(x); },
             [](float x) { return std::log2(x); }, 1e-30f, 1e30f, 1.0, 1.5},
        Case{"tanh", [](double x) { return std::tanh(x); },
             [](float x) { return std::tanh(x); }, -10.0f, 10.0f, 0.0, 5.0},
        Case{"erf", [](double x) { return std::erf(x); },
             [](float x) { return std::erf(x); }, -5.0f, 5.0f, 0.0, 5.0}),
    [](const ::testing::TestParamInfo<Case> &info) {
      return std::string(info.param.op);
    });

} // namespace
