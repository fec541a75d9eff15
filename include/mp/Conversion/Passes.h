//===- Passes.h - mp conversion passes --------------------------*- C++ -*-===//

#ifndef MP_CONVERSION_PASSES_H
#define MP_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "mp/Dialect/MP/IR/MPDialect.h"

namespace mlir {
namespace mp {

/// Which runtime library computes matrix products
/// (--mp-contractions-to-runtime{runtime=...}).
enum class ContractionRuntime { Cpu, Cuda };

#define GEN_PASS_DECL
#include "mp/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mp/Conversion/Passes.h.inc"

} // namespace mp
} // namespace mlir

#endif // MP_CONVERSION_PASSES_H
