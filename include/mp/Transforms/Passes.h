//===- Passes.h - mp mixed-precision passes ---------------------*- C++ -*-===//

#ifndef MP_TRANSFORMS_PASSES_H
#define MP_TRANSFORMS_PASSES_H

#include "mp/Dialect/MP/IR/MPDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace mp {

#define GEN_PASS_DECL
#include "mp/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mp/Transforms/Passes.h.inc"

/// Declares what mpi.allreduce reads and writes (its send and receive
/// buffers, and the communication), which upstream leaves unknown and
/// buffer deallocation refuses, and lets the inliner inline mpi ops (a
/// step that stays a call cannot update its parameters in place):
/// --mp-data-parallel's steps need both.
void registerCollectiveInterfaces(DialectRegistry &registry);

} // namespace mp
} // namespace mlir

#endif // MP_TRANSFORMS_PASSES_H
