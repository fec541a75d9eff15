//===- DataParallel.cpp - gradients averaged over MPI ranks ---------------===//
//
// Data-parallel training: every rank runs the same step on its shard of a
// global batch; the gradient function's gradients are packed into one flat
// f32 buffer, summed over the ranks by one mpi.allreduce and divided by the
// number of ranks, and found_inf is reduced with MAX, so that every rank
// applies the same update and skips the same steps.
//
//===----------------------------------------------------------------------===//

#include "mp/Transforms/AttrNames.h"
#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/InliningUtils.h"

#include <limits>

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPDATAPARALLEL
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

/// The other processes of the job: an all-reduce changes what they see, so
/// it is never dead and never reordered with another collective.
struct Communication : SideEffects::Resource::Base<Communication> {
  StringRef getName() final { return "mpi-communication"; }
};

struct AllReduceEffects
    : MemoryEffectOpInterface::ExternalModel<AllReduceEffects,
                                             mpi::AllReduceOp> {
  void
  getEffects(Operation *op,
             SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
                 &effects) const {
    auto reduce = cast<mpi::AllReduceOp>(op);
    effects.emplace_back(MemoryEffects::Read::get(),
                         &reduce.getSendbufMutable(),
                         SideEffects::DefaultResource::get());
    effects.emplace_back(MemoryEffects::Write::get(),
                         &reduce.getRecvbufMutable(),
                         SideEffects::DefaultResource::get());
    effects.emplace_back(MemoryEffects::Write::get(), Communication::get());
  }
};

/// MPI ops may be inlined: the gradient function and the training step
/// that holds the all-reduce are inlined into the session's entry, where
/// the parameters' updates can be seen to happen in place (a call that
/// stays would read and write anything).
struct CollectivesInliner : DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};

/// `flat`, a 1-D tensor, reduced over the ranks with `op` into a new buffer
/// (send and receive buffers differ, as MPI requires).
Value allReduce(OpBuilder &b, Location loc, Value flat,
                mpi::MPI_ReductionOpEnum op) {
  auto type = cast<RankedTensorType>(flat.getType());
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  Value send = bufferization::ToBufferOp::create(b, loc, memrefType, flat,
                                                 /*readOnly=*/true);
  Value receive = memref::AllocOp::create(b, loc, memrefType);
  Value comm =
      mpi::CommWorldOp::create(b, loc, mpi::CommType::get(b.getContext()));
  mpi::AllReduceOp::create(b, loc, Type(), send, receive, op, comm);
  return bufferization::ToTensorOp::create(b, loc, type, receive,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

struct DataParallelPass : mp::impl::MPDataParallelBase<DataParallelPass> {
  using MPDataParallelBase::MPDataParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks < 1) {
      emitError(module.getLoc())
          << "mp-data-parallel: ranks must be at least 1, got "
          << static_cast<int64_t>(ranks);
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> gradients;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(kGradientOfAttrName) && !func.isExternal())
        gradients.push_back(func);
    if (gradients.empty()) {
      emitError(module.getLoc())
          << "mp-data-parallel: no gradient function (marked '"
          << kGradientOfAttrName << "'); run --mp-autodiff first";
      return signalPassFailure();
    }
    // The MPI ABI the lowering emits (MPICH's handles and constants).
    MLIRContext *context = module.getContext();
    Builder attrs(context);
    module->setAttr(
        DLTIDialect::kMapAttrName,
        MapAttr::get(context, {DataLayoutEntryAttr::get(
                                  attrs.getStringAttr("MPI:Implementation"),
                                  attrs.getStringAttr("MPICH"))}));
    for (func::FuncOp func : gradients)
      if (failed(reduce(func)))
        return signalPassFailure();
  }

  /// The offsets of the gradients at \p grads in the flat buffer, their
  /// total in \p total; fails (reported) for a gradient that is not a
  /// statically shaped f32 tensor.
  static FailureOr<SmallVector<int64_t>>
  gradientOffsets(func::FuncOp func, func::ReturnOp ret,
                  ArrayRef<unsigned> grads, int64_t &total) {
    SmallVector<int64_t> offsets;
    total = 0;
    for (unsigned i : grads) {
      auto type = dyn_cast<RankedTensorType>(ret.getOperand(i).getType());
      if (!type || !type.hasStaticShape() || !type.getElementType().isF32())
        return func.emitError()
               << "mp-data-parallel: gradient result " << i << " is "
               << ret.getOperand(i).getType()
               << "; all-reduced gradients must be statically shaped f32 "
                  "tensors";
      offsets.push_back(total);
      total += type.getNumElements();
    }
    return offsets;
  }

  /// The loss (the first result, an f32 scalar) rides along, so that every
  /// rank reports the global batch's mean loss.
  static bool lossRidesAlong(func::FuncOp func) {
    return func.getNumResults() > 0 && func.getResultTypes()[0].isF32() &&
           !func.getResultAttr(0, kGradAttrName);
  }

  /// One flat tensor of the gradients (and the loss when \p withLoss).
  /// One tensor.concat rather than insert_slices into an empty tensor:
  /// empty-tensor elimination would have the gradients computed in place
  /// into strided views of the flat buffer, which the affine analyses of
  /// the CPU lowering do not take.
  static Value pack(OpBuilder &b, Location loc, func::ReturnOp ret,
                    ArrayRef<unsigned> grads, bool withLoss) {
    SmallVector<Value> rows;
    for (unsigned i : grads)
      rows.push_back(flatten(b, loc, ret.getOperand(i)));
    if (withLoss)
      rows.push_back(tensor::FromElementsOp::create(
          b, loc, RankedTensorType::get({1}, b.getF32Type()),
          ret.getOperand(0)));
    if (rows.size() == 1)
      return rows.front();
    return tensor::ConcatOp::create(b, loc, /*dim=*/0, rows).getResult();
  }

  /// MPI reduces no i1: the found_inf flag at result \p foundInf as an
  /// i32, MAX over the ranks.
  static void reduceFoundInf(OpBuilder &b, Location loc, func::ReturnOp ret,
                             unsigned foundInf) {
    Value flag = arith::ExtUIOp::create(b, loc, b.getI32Type(),
                                        ret.getOperand(foundInf));
    Value one = tensor::FromElementsOp::create(
        b, loc, RankedTensorType::get({1}, b.getI32Type()), flag);
    Value any = allReduce(b, loc, one, mpi::MPI_ReductionOpEnum::MPI_MAX);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value anyFlag = tensor::ExtractOp::create(b, loc, any, zero);
    ret.setOperand(foundInf, arith::CmpIOp::create(
                                 b, loc, arith::CmpIPredicate::ne, anyFlag,
                                 arith::ConstantIntOp::create(b, loc, 0, 32)));
  }

  /// Each gradient's mean read straight from the sum, element by element
  /// at its offset (a generic with an offset map, not a view of the flat
  /// buffer: the affine analyses of the CPU lowering take no strided
  /// views), as a tensor of its own shape; the loss's mean when
  /// \p withLoss.
  void unpackMeans(OpBuilder &b, Location loc, func::ReturnOp ret, Value sum,
                   ArrayRef<unsigned> grads, ArrayRef<int64_t> offsets,
                   bool withLoss, int64_t lossOffset) {
    Value n = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(static_cast<float>(ranks)));
    for (auto [i, offset] : llvm::zip(grads, offsets)) {
      auto type = cast<RankedTensorType>(ret.getOperand(i).getType());
      ret.setOperand(i, meanAt(b, loc, sum, offset, type, n));
      ++numReduced;
    }
    if (!withLoss)
      return;
    Value at = arith::ConstantIndexOp::create(b, loc, lossOffset);
    Value loss = tensor::ExtractOp::create(b, loc, sum, ValueRange{at});
    ret.setOperand(0, arith::DivFOp::create(b, loc, loss, n));
  }

  LogicalResult reduce(func::FuncOp func) {
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    SmallVector<unsigned> grads;
    std::optional<unsigned> foundInf;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      if (func.getResultAttr(i, kGradAttrName))
        grads.push_back(i);
      if (func.getResultAttr(i, kFoundInfAttrName))
        foundInf = i;
    }
    if (grads.empty())
      return func.emitError() << "mp-data-parallel: the gradient function "
                                 "returns no gradient ('"
                              << kGradAttrName << "' results)";
    OpBuilder b(ret);
    Location loc = ret.getLoc();
    int64_t total = 0;
    FailureOr<SmallVector<int64_t>> offsets =
        gradientOffsets(func, ret, grads, total);
    if (failed(offsets))
      return failure();
    bool withLoss = lossRidesAlong(func);
    int64_t lossOffset = total;
    if (withLoss)
      ++total;
    // MPI counts elements in an int (one call; buckets are not built).
    if (total > std::numeric_limits<int32_t>::max())
      return func.emitError()
             << "mp-data-parallel: " << total
             << " gradient elements exceed one MPI all-reduce (2^31 - 1)";
    Value flat = pack(b, loc, ret, grads, withLoss);
    Value sum = allReduce(b, loc, flat, mpi::MPI_ReductionOpEnum::MPI_SUM);
    unpackMeans(b, loc, ret, sum, grads, *offsets, withLoss, lossOffset);
    if (foundInf)
      reduceFoundInf(b, loc, ret, *foundInf);
    return success();
  }

  /// `v` as a 1-D tensor (a rank-0 tensor becomes one element).
  static Value flatten(OpBuilder &b, Location loc, Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() == 1)
      return v;
    auto flatType =
        RankedTensorType::get({type.getNumElements()}, type.getElementType());
    if (type.getRank() == 0)
      return tensor::ExpandShapeOp::create(b, loc, flatType, v,
                                           ArrayRef<ReassociationIndices>{});
    ReassociationIndices all;
    for (int64_t d = 0; d < type.getRank(); ++d)
      all.push_back(d);
    return tensor::CollapseShapeOp::create(b, loc, v,
                                           ArrayRef<ReassociationIndices>{all});
  }

  /// sum[offset + i] / n for each element i of `type` (row-major).
  static Value meanAt(OpBuilder &b, Location loc, Value sum, int64_t offset,
                      RankedTensorType type, Value n) {
    unsigned rank = type.getRank();
    AffineExpr index = b.getAffineConstantExpr(offset);
    int64_t stride = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      index = index + b.getAffineDimExpr(d) * stride;
      stride *= type.getDimSize(d);
    }
    MLIRContext *context = b.getContext();
    SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, index, context),
                                   b.getMultiDimIdentityMap(rank)};
    return linalg::GenericOp::create(
               b, loc, TypeRange{type}, ValueRange{sum},
               ValueRange{tensor::EmptyOp::create(b, loc, type.getShape(),
                                                  type.getElementType())},
               maps,
               SmallVector<utils::IteratorType>(rank,
                                                utils::IteratorType::parallel),
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 linalg::YieldOp::create(
                     nb, nl,
                     ValueRange{arith::DivFOp::create(nb, nl, args[0], n)});
               })
        .getResult(0);
  }
};

} // namespace

void mlir::mp::registerCollectiveInterfaces(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, mpi::MPIDialect *dialect) {
    mpi::AllReduceOp::attachInterface<AllReduceEffects>(*context);
    dialect->addInterfaces<CollectivesInliner>();
  });
}
