//===- InitAll.h - register mp's dialects and passes ------------*- C++ -*-===//
//
// One place for tools and framework lowering stacks to register everything
// mp provides.
//
//===----------------------------------------------------------------------===//

#ifndef MP_INITALL_H
#define MP_INITALL_H

#include "mp/Conversion/Passes.h"
#include "mp/Dialect/MP/IR/MPDialect.h"
#include "mp/Lowering/Passes.h"
#include "mp/Transforms/PassAliases.h"
#include "mp/Transforms/Passes.h"
#include "mp/Transforms/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"

namespace mlir {
namespace mp {

/// Adds the mp dialect, and the interfaces mp gives upstream ops, to
/// `registry`.
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<MPDialect>();
  registerCollectiveInterfaces(registry);
}

/// Registers every mp pass and pipeline with the global pass registry, so
/// they can be named on a command line or in a textual pipeline, and the
/// names passes had before #49 as aliases.
inline void registerAllPasses() {
  registerMPConversionPasses();
  registerMPLoweringPasses();
  registerMPTransformsPasses();
  registerMPPipelines();
  registerMPPassAliases();
}

} // namespace mp
} // namespace mlir

#endif // MP_INITALL_H
