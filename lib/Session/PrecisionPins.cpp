//===- PrecisionPins.cpp - keep chosen ops of a model in f32 --------------===//

#include "mp/Session/PrecisionPins.h"

#include "mp/Support/IRUtils.h"
#include "mp/Transforms/AttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringRef.h"

namespace mp {

bool pinOpsToF32(mlir::ModuleOp module,
                 const std::vector<std::string> &locations,
                 std::string &error) {
  using namespace mlir;
  auto pin = mlir::mp::FloatPrecisionAttr::get(module.getContext(),
                                               mlir::mp::FloatPrecision::F32);
  for (const std::string &wanted : locations) {
    llvm::StringRef text(wanted);
    // "LINE:COL" matches in any file; "FILE:LINE:COL" in that file only.
    bool anyFile = text.count(':') == 1;
    int pinned = 0;
    module.walk([&](Operation *op) {
      if (isa<func::FuncOp, ModuleOp>(op) ||
          op->hasTrait<OpTrait::IsTerminator>() || op->getNumResults() == 0)
        return;
      std::string at = mlir::mp::locationText(op->getLoc());
      llvm::StringRef here(at);
      if (here == text || (anyFile && here.ends_with(text) &&
                           here.drop_back(text.size()).ends_with(":"))) {
        op->setAttr(mlir::mp::kPrecisionAttrName, pin);
        ++pinned;
      }
    });
    if (!pinned) {
      error = "--keep-f32 " + wanted +
              ": no op of the model is at that location (give FILE:LINE:COL "
              "or LINE:COL as --check-numerics prints it)";
      return false;
    }
  }
  return true;
}

} // namespace mp
