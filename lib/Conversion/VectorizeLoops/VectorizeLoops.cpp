//===- VectorizeLoops.cpp - affine vectorization of unit-stride loops -----===//
//
// Upstream's affine-super-vectorize takes an access such as %a[2 * %i] for
// contiguous along %i and loads 16 consecutive elements instead of every
// second one (llvm/llvm-project#177756): stride-2 convolutions and pools
// compute wrong numbers. This pass runs the same vectorizer, but only on the
// parallel loops whose every access either does not depend on the loop's
// induction variable or moves by exactly one element per iteration along a
// single dimension. Every other loop stays scalar and correct.
//
//===----------------------------------------------------------------------===//

#include "mp/Conversion/Passes.h"

#include "mlir/Analysis/FlatLinearValueConstraints.h"
#include "mlir/Dialect/Affine/Analysis/AffineAnalysis.h"
#include "mlir/Dialect/Affine/Analysis/LoopAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineValueMap.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPVECTORIZELOOPS
#include "mp/Conversion/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// True when \p access advances by exactly one element per step of \p iv
/// along the memref's innermost, unit-stride dimension and no other, or is a
/// read that ignores \p iv (a broadcast). A write that ignores the iv can only
/// sit in a loop of one trip (isLoopParallel accepts those), and the vectorizer
/// would make it an invalid broadcasting vector.transfer_write.
bool isContiguousOrInvariant(Operation *access, Value iv) {
  affine::AffineValueMap map;
  affine::MemRefAccess(access).getAccessMap(&map);
  ArrayRef<Value> operands = map.getOperands();
  const auto *position = llvm::find(operands, iv);
  if (position == operands.end())
    return isa<affine::AffineReadOpInterface>(access);
  unsigned ivPosition = position - operands.begin();
  bool ivIsDim = ivPosition < map.getNumDims();

  // LLVM packs a vector of i1 into bits where a memref of i1 holds a byte
  // per element: a vector load or store of one reads and writes the wrong
  // elements (the split inf checks' flags).
  Type element =
      cast<MemRefType>(affine::MemRefAccess(access).memref.getType())
          .getElementType();
  if (element.isIntOrFloat() && element.getIntOrFloatBitWidth() < 8)
    return false;

  // Only the innermost dimension, with unit stride in memory, makes the
  // vector one contiguous load or store; the vectorizer would turn other
  // dimensions into slow element-wise transfers.
  auto memref = cast<MemRefType>(affine::MemRefAccess(access).memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  unsigned last = map.getNumResults() - 1;
  if (map.getNumResults() == 0 ||
      failed(memref.getStridesAndOffset(strides, offset)) ||
      strides.back() != 1)
    return false;

  for (unsigned result = 0, e = map.getNumResults(); result < e; ++result) {
    AffineExpr expr = map.getResult(result);
    bool usesIv = ivIsDim
                      ? expr.isFunctionOfDim(ivPosition)
                      : expr.isFunctionOfSymbol(ivPosition - map.getNumDims());
    if (!usesIv)
      continue;
    if (result != last)
      return false;
    SmallVector<int64_t, 8> flat;
    if (failed(getFlattenedAffineExpr(expr, map.getNumDims(),
                                      map.getNumSymbols(), &flat)))
      return false;
    // Layout: dims, symbols, locals (floordiv/mod terms), constant. A local
    // term built from the iv is not a unit stride.
    bool hasLocals = flat.size() != map.getNumDims() + map.getNumSymbols() + 1;
    return !hasLocals && flat[ivPosition] == 1;
  }
  // The iv is an operand that no result uses: invariant after all.
  return isa<affine::AffineReadOpInterface>(access);
}

struct VectorizeLoopsPass
    : public mp::impl::MPVectorizeLoopsBase<VectorizeLoopsPass> {
  using MPVectorizeLoopsBase::MPVectorizeLoopsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (vectorSize <= 0) {
      func.emitError() << "mp-vectorize-loops: vector-size must be positive, "
                          "got "
                       << static_cast<int64_t>(vectorSize);
      return signalPassFailure();
    }

    llvm::DenseSet<Operation *> candidates;
    func.walk([&](affine::AffineForOp loop) {
      // A loop shorter than one vector would run only its masked tail,
      // which is slower than the scalar loop.
      std::optional<uint64_t> trips = affine::getConstantTripCount(loop);
      if ((trips && *trips < static_cast<uint64_t>(vectorSize)) ||
          !affine::isLoopParallel(loop))
        return;
      Value iv = loop.getInductionVar();
      WalkResult accesses = loop.getBody()->walk([&](Operation *op) {
        if (!isa<affine::AffineReadOpInterface, affine::AffineWriteOpInterface>(
                op))
          return WalkResult::advance();
        return isContiguousOrInvariant(op, iv) ? WalkResult::advance()
                                               : WalkResult::interrupt();
      });
      if (!accesses.wasInterrupted())
        candidates.insert(loop);
    });
    if (candidates.empty())
      return;
    affine::vectorizeAffineLoops(func, candidates, {vectorSize},
                                 /*fastestVaryingPattern=*/{});
  }
};

} // namespace
