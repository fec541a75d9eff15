//===- PassAliases.h - passes' names from before #49 ------------*- C++ -*-===//
//
// Every mp pass is named mp-<what it does>. A few had other names before
// (#49); scripts and textual pipelines that use those keep working.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TRANSFORMS_PASSALIASES_H
#define MP_TRANSFORMS_PASSALIASES_H

namespace mlir {
namespace mp {

/// Registers each old pass name as a pipeline that adds the renamed pass
/// with the same options string (`--auto-mixed-precision="dtype=bf16"` is
/// `--mp-auto-mixed-precision="dtype=bf16"`). The renamed passes must be
/// registered when a pipeline is built from an old name.
void registerMPPassAliases();

} // namespace mp
} // namespace mlir

#endif // MP_TRANSFORMS_PASSALIASES_H
