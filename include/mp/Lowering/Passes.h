//===- Passes.h - mp lowering transforms ------------------------*- C++ -*-===//
//
// The passes --mp-lower-cpu and --mp-lower-gpu run on loops and buffers
// (include/mp/Lowering/Passes.td).
//
//===----------------------------------------------------------------------===//

#ifndef MP_LOWERING_PASSES_H
#define MP_LOWERING_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mp/Dialect/MP/IR/MPDialect.h"

namespace mlir {
namespace mp {

#define GEN_PASS_DECL
#include "mp/Lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mp/Lowering/Passes.h.inc"

/// The C++ names of --mp-split-reductions from when it was
/// mp-gpu-split-reductions (#49: it runs in the CPU pipeline too), for code
/// that builds pipelines with them (the installed package exports them;
/// mp itself uses the new names).
using MPGpuSplitReductionsOptions = MPSplitReductionsOptions;
inline std::unique_ptr<Pass> createMPGpuSplitReductions() {
  return createMPSplitReductions();
}
inline std::unique_ptr<Pass>
createMPGpuSplitReductions(MPSplitReductionsOptions options) {
  return createMPSplitReductions(std::move(options));
}

} // namespace mp
} // namespace mlir

#endif // MP_LOWERING_PASSES_H
