//===- PrecisionPins.cpp - keep chosen ops of a model in f32 --------------===//

#include "mp/Session/PrecisionPins.h"

#include "mp/Support/IRUtils.h"
#include "mp/Transforms/AttrNames.h"

#include "mp/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>

namespace mp {

using namespace mlir;

bool pinOpsToF32(ModuleOp module, const std::vector<std::string> &locations,
                 std::string &error) {
  mlir::mp::MPKeepF32Options options;
  options.locations.assign(locations.begin(), locations.end());
  PassManager pm(module.getContext());
  pm.addPass(mlir::mp::createMPKeepF32(options));
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
    error += diag.str();
    return success();
  });
  return succeeded(pm.run(module));
}

std::vector<std::string> userLocations(ModuleOp module,
                                       const std::string &location) {
  llvm::SmallPtrSet<Operation *, 8> readers;
  for (Operation *op : mlir::mp::opsAtLocation(module, location))
    for (Operation *user : op->getUsers())
      if (!user->hasTrait<OpTrait::IsTerminator>() &&
          user->getNumResults() != 0)
        readers.insert(user);
  // Use lists are in no particular order: walk the module for its own.
  std::vector<std::string> users;
  module.walk([&](Operation *op) {
    if (!readers.contains(op))
      return;
    std::string at = mlir::mp::keepF32Location(op->getLoc());
    if (!at.empty() && at != location &&
        std::find(users.begin(), users.end(), at) == users.end())
      users.push_back(at);
  });
  return users;
}

} // namespace mp
