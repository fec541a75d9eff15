//===- ConvolutionsToGemm.cpp - 2-D convolutions as im2col + product ------===//
//
// A convolution lowered to loops runs scalar code over a 7-deep nest; as an
// im2col copy followed by a matrix product, the product goes to the runtime's
// GEMM (--mp-contractions-to-runtime: oneDNN on the CPU, in f32, bf16 or s8)
// like any matmul. Upstream's im2col rewrite does the work; this pass picks
// the convolutions it applies to.
//
//===----------------------------------------------------------------------===//

#include "mp/Lowering/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPCONVOLUTIONSTOGEMM
#include "mp/Lowering/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;

namespace {

/// Static shapes only: the im2col buffer is sized from them.
bool hasStaticShapes(linalg::LinalgOp op) {
  return llvm::all_of(op->getOperandTypes(), [](Type type) {
    auto shaped = dyn_cast<RankedTensorType>(type);
    return shaped && shaped.hasStaticShape();
  });
}

struct ConvolutionsToGemmPass
    : public mp::impl::MPConvolutionsToGemmBase<ConvolutionsToGemmPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> convolutions;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isa<linalg::Conv2DNchwFchwOp, linalg::Conv2DNhwcHwcfOp,
              linalg::Conv2DNhwcFhwcOp>(op) &&
          op.hasPureTensorSemantics() && hasStaticShapes(op))
        convolutions.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : convolutions) {
      rewriter.setInsertionPoint(op);
      FailureOr<std::pair<Operation *, Operation *>> rewritten =
          TypeSwitch<Operation *,
                     FailureOr<std::pair<Operation *, Operation *>>>(op)
              .Case([&](linalg::Conv2DNchwFchwOp conv) {
                return linalg::rewriteInIm2Col(rewriter, conv);
              })
              .Case([&](linalg::Conv2DNhwcHwcfOp conv) {
                return linalg::rewriteInIm2Col(rewriter, conv);
              })
              .Case([&](linalg::Conv2DNhwcFhwcOp conv) {
                return linalg::rewriteInIm2Col(rewriter, conv);
              });
      // A convolution upstream cannot rewrite (strides it does not handle)
      // stays as it is and becomes loops.
      if (succeeded(rewritten))
        ++numConvolutionsRewritten;
    }
  }
};

} // namespace
