//===- GpuParallelLoopsFirst.cpp - parallel loops outermost for the GPU ---===//
//
// convert-linalg-to-parallel-loops makes an scf.parallel only of the
// parallel loops that come before the first reduction loop; a generic whose
// reduction loop is outermost (a column sum, such as a bias gradient
// summed over the batch) becomes a serial loop around a parallel one, which
// --mp-gpu-map-parallel-loops can only run as one GPU thread. Moving the
// parallel loops first (upstream's generic interchange) gives one thread
// per output element, each summing its column; the sum's order per element
// is unchanged, so the result is too.
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPGPUPARALLELLOOPSFIRST
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// The interchange that puts the parallel loops first, keeping the order
/// within each kind; empty when they already are.
SmallVector<unsigned> parallelFirst(linalg::GenericOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> order;
  for (auto [i, kind] : llvm::enumerate(iterators))
    if (kind == utils::IteratorType::parallel)
      order.push_back(i);
  unsigned numParallel = order.size();
  for (auto [i, kind] : llvm::enumerate(iterators))
    if (kind != utils::IteratorType::parallel)
      order.push_back(i);
  if (numParallel == 0 ||
      llvm::equal(order, llvm::seq<unsigned>(0, iterators.size())))
    return {};
  return order;
}

struct GpuParallelLoopsFirstPass
    : public mp::impl::MPGpuParallelLoopsFirstBase<GpuParallelLoopsFirstPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!parallelFirst(op).empty())
        generics.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : generics) {
      rewriter.setInsertionPoint(op);
      if (succeeded(
              linalg::interchangeGenericOp(rewriter, op, parallelFirst(op))))
        ++numInterchanged;
    }
  }
};

} // namespace
