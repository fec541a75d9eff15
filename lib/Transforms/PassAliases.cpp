//===- PassAliases.cpp - passes' names from before #49 --------------------===//
//
// One table, old name -> new name. An alias is a registered pipeline, not a
// second registration of the pass: MLIR registers a pass under the one
// name its class returns.
//
//===----------------------------------------------------------------------===//

#include "mp/Transforms/PassAliases.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {
struct PassAlias {
  StringLiteral oldName;
  StringLiteral newName;
};
} // namespace

static constexpr PassAlias passAliases[] = {
    {"auto-mixed-precision", "mp-auto-mixed-precision"},
    {"convert-mp-to-upstream", "mp-convert-to-upstream"},
    // It runs in the CPU pipeline too.
    {"mp-gpu-split-reductions", "mp-split-reductions"},
};

/// Adds the pass `alias` now names to `pm` through the pass's own registry
/// entry, so that options, their errors and the nesting rules are exactly
/// those of the new name.
static LogicalResult
addAliasedPass(const PassAlias &alias, OpPassManager &pm, StringRef options,
               function_ref<LogicalResult(const Twine &)> onError) {
  const PassInfo *pass = PassInfo::lookup(alias.newName);
  if (!pass)
    return onError(Twine(alias.oldName) + " is an alias of " + alias.newName +
                   ", which is not registered");
  return pass->addToPipeline(pm, options, onError);
}

void mlir::mp::registerMPPassAliases() {
  for (const PassAlias &alias : passAliases) {
    registerPassPipeline(
        alias.oldName,
        ("alias of --" + alias.newName + " (takes its options)").str(),
        [alias](OpPassManager &pm, StringRef options,
                function_ref<LogicalResult(const Twine &)> onError) {
          return addAliasedPass(alias, pm, options, onError);
        },
        // The options are the new pass's: --help lists them under its name.
        [](function_ref<void(const detail::PassOptions &)>) {});
  }
}
