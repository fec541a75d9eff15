//===- MPDialect.h - the mp dialect -----------------------------*- C++ -*-===//
//
// Declares the mp dialect, its attributes and its ops.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_MP_IR_MPDIALECT_H
#define MP_DIALECT_MP_IR_MPDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Dialect.h"

// The dialect's discardable attributes are typed by its attributes.
#include "mp/Dialect/MP/IR/MPAttrs.h"

#include "mp/Dialect/MP/IR/MPOpsDialect.h.inc"

#endif // MP_DIALECT_MP_IR_MPDIALECT_H
