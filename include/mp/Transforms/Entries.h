//===- Entries.h - functions host code calls on buffers ---------*- C++ -*-===//
//
// A session calls a compiled step through entries: functions on memrefs
// that call the step on tensors, so that the caller owns every buffer
// (--mp-train-entries, --mp-infer-entries, SessionEntries.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MP_TRANSFORMS_ENTRIES_H
#define MP_TRANSFORMS_ENTRIES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace mp {

/// Adds `@<name>(memref args..., memref results...)`, marked mp.entry (the
/// number of inputs), that
/// calls `callee` (tensors become memrefs, scalars 0-d memrefs, i1 an i32)
/// and writes its results into the trailing arguments. The entry's
/// arguments carry `callee`'s argument attributes, then its result
/// attributes.
func::FuncOp addEntry(ModuleOp module, func::FuncOp callee, StringRef name);

/// How many of an entry's arguments are inputs (its mp.entry); the rest
/// receive its callee's results.
unsigned entryInputCount(func::FuncOp entry);

} // namespace mp
} // namespace mlir

#endif // MP_TRANSFORMS_ENTRIES_H
