//===- ContractionsToRuntime.h - products to runtime GEMMs ------*- C++ -*-===//
//
// The rewrites of --mp-contractions-to-runtime, for compilers that run them
// in pipelines of their own: plan the products' operands over a module
// (planContractions), rewrite each product with the patterns
// (populateContractionsToRuntimePatterns), then erase the copies the calls
// read around (eraseCopiesReadAround). The calls go to the functions of
// RuntimeCalls.h.
//
//===----------------------------------------------------------------------===//

#ifndef MP_CONVERSION_CONTRACTIONSTORUNTIME_H
#define MP_CONVERSION_CONTRACTIONSTORUNTIME_H

#include "mp/Conversion/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <array>
#include <cstdint>

namespace mlir {
namespace mp {

/// What the rewrites did (the pass's statistics).
struct ContractionCounts {
  int64_t calls = 0, rounded = 0, biased = 0, dequantized = 0,
          absMaxPartials = 0, overwritten = 0, transposedResults = 0,
          headSplits = 0, headMerges = 0, transposedOperands = 0;
};

/// The facts about products' operands that need the whole module: made by
/// planContractions before any product is rewritten, read and updated by
/// the patterns, finished by eraseCopiesReadAround.
struct ContractionPlan {
  ContractionRuntime runtime = ContractionRuntime::Cpu;
  /// The products, in the order the pass rewrites them (a walk).
  SmallVector<Operation *> products;
  /// Per product, the matrices its A and B operands are transposed copies
  /// of (null where an operand is read as it is); the call reads those
  /// with the operand's transpose flag flipped.
  llvm::DenseMap<Operation *, std::array<Value, 2>> transposedSources;
  /// The transposed copies some product may read around.
  llvm::SetVector<Operation *> transposedCopies;
  /// Attention's head splits (runtime=cpu): each collapsed copy products
  /// read, to its swap; each swap, to the deallocations of its source and
  /// its copy; the swaps some call has read in place.
  llvm::DenseMap<Value, Operation *> headSources;
  llvm::MapVector<Operation *, std::pair<Operation *, Operation *>>
      headSplits;
  llvm::DenseSet<Operation *> splitsReadInPlace;
  ContractionCounts counts;
};

/// Finds the products under \p root that become calls and plans their
/// operands.
ContractionPlan planContractions(Operation *root, ContractionRuntime runtime);

/// The pattern that replaces a planned product, with the results it fuses
/// (rounding, bias and what follows it, dequantization and its max |x|
/// partials, a zero fill, attention's head merge), by one runtime call.
/// \p plan must outlive the patterns.
void populateContractionsToRuntimePatterns(RewritePatternSet &patterns,
                                           ContractionPlan &plan);

/// Erases the transposed copies and head splits that no product reads any
/// more, with their buffers (moving a head split's source's deallocation
/// to where its copy's was).
void eraseCopiesReadAround(RewriterBase &rewriter, ContractionPlan &plan);

} // namespace mp
} // namespace mlir

#endif // MP_CONVERSION_CONTRACTIONSTORUNTIME_H
