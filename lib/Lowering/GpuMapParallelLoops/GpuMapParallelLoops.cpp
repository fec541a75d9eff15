//===- GpuMapParallelLoops.cpp - scf.parallel nests to a GPU grid ---------===//
//
// Every loop nest that linalg lowering left in a host function becomes one
// kernel: a parallel nest is collapsed to one dimension and tiled by the
// block size (blocks x threads, both along x, so that neighbouring threads
// touch neighbouring elements), and serial work (full reductions, scalar
// stores) becomes a one-thread kernel, so that no tensor element is touched
// by the host. Host buffers (allocas outside loops, such as the staging
// buffers of --mp-gpu-device-memory, and globals) stay host code.
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPGPUMAPPARALLELLOOPS
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// Whether \p memref is host memory that host code may touch: a stack
/// buffer of the host function (the staging buffers of
/// --mp-gpu-device-memory) or a global.
bool isHostBuffer(Value memref) {
  return memref.getDefiningOp<memref::AllocaOp>() ||
         memref.getDefiningOp<memref::GetGlobalOp>();
}

/// Loops and element accesses of \p func that no scf.parallel or scf.for
/// encloses, in program order. Accesses to host buffers stay host code.
void collectTopLevel(func::FuncOp func, SmallVectorImpl<Operation *> &ops) {
  func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op);
        load && isHostBuffer(load.getMemref()))
      return WalkResult::skip();
    if (auto store = dyn_cast<memref::StoreOp>(op);
        store && isHostBuffer(store.getMemref()))
      return WalkResult::skip();
    if (isa<scf::ParallelOp, scf::ForOp, memref::StoreOp, memref::LoadOp,
            memref::CopyOp>(op)) {
      ops.push_back(op);
      return WalkResult::skip();
    }
    return WalkResult::advance();
  });
}

gpu::ParallelLoopDimMappingAttr dimMapping(MLIRContext *context,
                                           gpu::Processor processor) {
  AffineMap id = AffineMap::getMultiDimIdentityMap(1, context);
  return gpu::ParallelLoopDimMappingAttr::get(context, processor, id, id);
}

/// Maps every dimension of \p loop to \p processor (only Sequential may
/// repeat).
LogicalResult mapAll(scf::ParallelOp loop, gpu::Processor processor) {
  SmallVector<gpu::ParallelLoopDimMappingAttr> mapping(
      loop.getNumLoops(), dimMapping(loop.getContext(), processor));
  return gpu::setMappingAttr(loop, mapping);
}

/// Replaces \p copy by an scf.parallel nest over its elements (one
/// iteration for rank 0).
void copyToLoops(IRRewriter &rewriter, memref::CopyOp copy) {
  Location loc = copy.getLoc();
  rewriter.setInsertionPoint(copy);
  auto type = cast<MemRefType>(copy.getSource().getType());
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    lbs.push_back(zero);
    steps.push_back(one);
    ubs.push_back(memref::DimOp::create(rewriter, loc, copy.getSource(), d));
  }
  if (type.getRank() == 0) {
    lbs.push_back(zero);
    ubs.push_back(one);
    steps.push_back(one);
  }
  bool scalar = type.getRank() == 0;
  scf::ParallelOp::create(
      rewriter, loc, lbs, ubs, steps,
      [&](OpBuilder &b, Location loc, ValueRange ivs) {
        ValueRange indices = scalar ? ValueRange() : ivs;
        Value v = memref::LoadOp::create(b, loc, copy.getSource(), indices);
        memref::StoreOp::create(b, loc, v, copy.getTarget(), indices);
      });
  rewriter.eraseOp(copy);
}

/// Replaces \p loop (no results) by an scf.for nest with the same body.
void parallelToFors(IRRewriter &rewriter, scf::ParallelOp loop) {
  rewriter.setInsertionPoint(loop);
  scf::LoopNest nest = scf::buildLoopNest(
      rewriter, loop.getLoc(), loop.getLowerBound(), loop.getUpperBound(),
      loop.getStep(), [](OpBuilder &, Location, ValueRange) {});
  Block *body = nest.loops.back().getBody();
  SmallVector<Value> ivs = llvm::map_to_vector(
      nest.loops, [](scf::ForOp f) { return f.getInductionVar(); });
  Operation *reduce = loop.getBody()->getTerminator();
  rewriter.inlineBlockBefore(loop.getBody(), body->getTerminator(), ivs);
  rewriter.eraseOp(reduce);
  rewriter.eraseOp(loop);
}

/// Buffer copies (from bufferization) become element loops.
void copiesToLoops(IRRewriter &rewriter, func::FuncOp func) {
  SmallVector<Operation *> topLevel;
  collectTopLevel(func, topLevel);
  for (Operation *op : topLevel)
    if (auto copy = dyn_cast<memref::CopyOp>(op))
      copyToLoops(rewriter, copy);
}

/// Serial work runs as a one-thread kernel rather than on the host: each
/// top-level op other than a parallel loop moves into an scf.parallel of
/// one iteration. Fails (reported) for one with results.
LogicalResult serialWorkToKernels(IRRewriter &rewriter, func::FuncOp func) {
  SmallVector<Operation *> topLevel;
  collectTopLevel(func, topLevel);
  for (Operation *op : topLevel) {
    if (isa<scf::ParallelOp>(op))
      continue;
    if (op->getNumResults() != 0)
      return op->emitError("mp-gpu-map-parallel-loops: host code would read "
                           "a tensor element or carry a value out of a "
                           "loop ('")
             << op->getName()
             << "'); the GPU path keeps element accesses in kernels";
    rewriter.setInsertionPoint(op);
    Location loc = op->getLoc();
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto serial = scf::ParallelOp::create(rewriter, loc, zero, one, one);
    op->moveBefore(serial.getBody()->getTerminator());
  }
  return success();
}

/// Each parallel nest becomes one dimension, so that a nest of any rank
/// fills blocks of threads.
void collapseTopLevelNests(IRRewriter &rewriter, func::FuncOp func) {
  SmallVector<Operation *> topLevel;
  collectTopLevel(func, topLevel);
  for (Operation *op : topLevel) {
    auto loop = cast<scf::ParallelOp>(op);
    if (loop.getNumLoops() <= 1)
      continue;
    std::vector<unsigned> all(loop.getNumLoops());
    for (unsigned i = 0; i < all.size(); ++i)
      all[i] = i;
    collapseParallelLoops(rewriter, loop, {all});
  }
}

/// The threads per block for \p loop: \p blockSize, or its trip count
/// when that is constant and smaller (at least 1).
int64_t blockTile(scf::ParallelOp loop, int64_t blockSize) {
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound()[0]);
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound()[0]);
  std::optional<int64_t> step = getConstantIntValue(loop.getStep()[0]);
  if (!lb || !ub || !step || *step <= 0)
    return blockSize;
  return std::max<int64_t>(
      1, std::min<int64_t>(blockSize, (*ub - *lb + *step - 1) / *step));
}

/// Parallel loops inside a thread's work (\p inner) run sequentially: as
/// scf.for nests (upstream convert-parallel-loops-to-gpu takes a
/// sequential scf.parallel only directly in the thread's body; under an
/// scf.for, as in a one-thread kernel of a column sum, it left the whole
/// nest on the host); those with results are mapped Sequential.
LogicalResult serializeNested(IRRewriter &rewriter, scf::ParallelOp inner) {
  SmallVector<scf::ParallelOp> nested;
  inner.getBody()->walk([&](scf::ParallelOp loop) { nested.push_back(loop); });
  for (scf::ParallelOp loop : nested) {
    if (loop.getNumResults() == 0) {
      parallelToFors(rewriter, loop);
      continue;
    }
    if (failed(mapAll(loop, gpu::Processor::Sequential)))
      return loop.emitError("mp-gpu-map-parallel-loops: cannot map loop");
  }
  return success();
}

/// Tiles \p loop into blocks and threads and maps it onto them.
LogicalResult mapToBlocksAndThreads(IRRewriter &rewriter, scf::ParallelOp loop,
                                    int64_t blockSize) {
  // Fixed-size inner loops with a bounds check: the block size stays a
  // constant the kernel can be compiled for.
  auto [outer, inner] = scf::tileParallelLoop(
      loop, {blockTile(loop, blockSize)}, /*noMinMaxBounds=*/true);
  if (failed(mapAll(outer, gpu::Processor::BlockX)) ||
      failed(mapAll(inner, gpu::Processor::ThreadX)))
    return outer.emitError("mp-gpu-map-parallel-loops: cannot map loop");
  return serializeNested(rewriter, inner);
}

struct MPGpuMapParallelLoops
    : public mp::impl::MPGpuMapParallelLoopsBase<MPGpuMapParallelLoops> {
  using Base::Base;

  void runOnOperation() override {
    if (blockSize < 1 || blockSize > 1024) {
      getOperation().emitError("mp-gpu-map-parallel-loops: block-size must "
                               "be in [1, 1024] (CUDA's threads per block), "
                               "got ")
          << static_cast<int64_t>(blockSize);
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && failed(mapFunction(func)))
        return signalPassFailure();
  }

  LogicalResult mapFunction(func::FuncOp func) {
    IRRewriter rewriter(func.getContext());
    copiesToLoops(rewriter, func);
    if (failed(serialWorkToKernels(rewriter, func)))
      return failure();
    collapseTopLevelNests(rewriter, func);

    // Fold the collapsed trip counts to constants where shapes are static
    // (no patterns: folding only), so that small nests get small blocks.
    if (failed(applyPatternsGreedily(func, FrozenRewritePatternSet())))
      return func.emitError("mp-gpu-map-parallel-loops: folding diverged");

    SmallVector<Operation *> topLevel;
    collectTopLevel(func, topLevel);
    for (Operation *op : topLevel)
      if (failed(mapToBlocksAndThreads(rewriter, cast<scf::ParallelOp>(op),
                                       blockSize)))
        return failure();
    return success();
  }
};

} // namespace
