//===- PrecisionPins.cpp - keep chosen ops of a model in f32 --------------===//

#include "mp/Session/PrecisionPins.h"

#include "mp/Support/IRUtils.h"
#include "mp/Transforms/AttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"

#include <algorithm>

namespace mp {

using namespace mlir;

namespace {

/// "FILE:LINE:COL" split into FILE and ":LINE:COL" ("" and all of it for
/// "LINE:COL").
std::pair<llvm::StringRef, llvm::StringRef> splitLocation(llvm::StringRef at) {
  size_t col = at.rfind(':');
  size_t line = col == llvm::StringRef::npos ? col : at.rfind(':', col - 1);
  if (line == llvm::StringRef::npos)
    return {"", at};
  return {at.take_front(line), at.drop_front(line)};
}

/// The ops of `module`'s functions that produce values and stand at
/// `wanted`: "FILE:LINE:COL" (FILE spelled as in the model, or another
/// path to the same file: a run resumed with another spelling of the
/// model's path finds its pins), or "LINE:COL" in any file.
std::vector<Operation *> opsAt(ModuleOp module, llvm::StringRef wanted) {
  bool anyFile = wanted.count(':') == 1;
  auto [wantedFile, wantedLineCol] = splitLocation(wanted);
  std::vector<Operation *> found;
  module.walk([&](Operation *op) {
    if (isa<func::FuncOp, ModuleOp>(op) ||
        op->hasTrait<OpTrait::IsTerminator>() || op->getNumResults() == 0)
      return;
    std::string at = mlir::mp::fileLocationText(op->getLoc());
    llvm::StringRef here(at);
    auto [file, lineCol] = splitLocation(here);
    if (here == wanted ||
        (anyFile && here.ends_with(wanted) &&
         here.drop_back(wanted.size()).ends_with(":")) ||
        (!anyFile && lineCol == wantedLineCol &&
         llvm::sys::fs::equivalent(file, wantedFile)))
      found.push_back(op);
  });
  return found;
}

} // namespace

bool pinOpsToF32(ModuleOp module, const std::vector<std::string> &locations,
                 std::string &error) {
  auto pin = mlir::mp::FloatPrecisionAttr::get(module.getContext(),
                                               mlir::mp::FloatPrecision::F32);
  for (const std::string &wanted : locations) {
    std::vector<Operation *> ops = opsAt(module, wanted);
    if (ops.empty()) {
      error = "--keep-f32 " + wanted +
              ": no op of the model is at that location (give FILE:LINE:COL "
              "or LINE:COL as --check-numerics prints it)";
      return false;
    }
    for (Operation *op : ops)
      op->setAttr(mlir::mp::kPrecisionAttrName, pin);
  }
  return true;
}

std::vector<std::string> userLocations(ModuleOp module,
                                       const std::string &location) {
  llvm::SmallPtrSet<Operation *, 8> readers;
  for (Operation *op : opsAt(module, location))
    for (Operation *user : op->getUsers())
      if (!user->hasTrait<OpTrait::IsTerminator>() &&
          user->getNumResults() != 0)
        readers.insert(user);
  // Use lists are in no particular order: walk the module for its own.
  std::vector<std::string> users;
  module.walk([&](Operation *op) {
    if (!readers.contains(op))
      return;
    std::string at = mlir::mp::fileLocationText(op->getLoc());
    if (!at.empty() && at != location &&
        std::find(users.begin(), users.end(), at) == users.end())
      users.push_back(at);
  });
  return users;
}

} // namespace mp
