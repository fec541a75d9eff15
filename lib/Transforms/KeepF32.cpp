//===- KeepF32.cpp - pin the ops at given source locations to f32 ---------===//
//
// How mp-run --keep-f32 and a session's precision repair keep an op in f32
// that the model does not pin: by the source location --mp-check-numerics
// reports (FILE:LINE:COL, or the module path / ONNX node name of a named
// location; see opsAtLocation), which survives autodiff and the AMP rewrite.
//
//===----------------------------------------------------------------------===//

#include "mp/Transforms/Passes.h"

#include "mp/Support/IRUtils.h"
#include "mp/Transforms/AttrNames.h"

namespace mlir {
namespace mp {
#define GEN_PASS_DEF_MPKEEPF32
#include "mp/Transforms/Passes.h.inc"
} // namespace mp
} // namespace mlir

using namespace mlir;
using namespace mlir::mp;

namespace {

struct MPKeepF32Pass : mlir::mp::impl::MPKeepF32Base<MPKeepF32Pass> {
  using MPKeepF32Base::MPKeepF32Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto pin = FloatPrecisionAttr::get(&getContext(), FloatPrecision::F32);
    for (const std::string &wanted : locations) {
      std::vector<Operation *> ops = opsAtLocation(module, wanted);
      if (ops.empty()) {
        module.emitError()
            << "--keep-f32 " << wanted
            << ": no op of the model is at that location or in that module "
               "(give FILE:LINE:COL, LINE:COL, a module path or node name, "
               "or NAME at FILE:LINE:COL, as --check-numerics and the "
               "precision report print them)";
        return signalPassFailure();
      }
      for (Operation *op : ops)
        op->setAttr(kPrecisionAttrName, pin);
    }
  }
};

} // namespace
