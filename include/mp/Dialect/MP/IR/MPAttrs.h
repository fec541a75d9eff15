//===- MPAttrs.h - mp precision attributes ----------------------*- C++ -*-===//
//
// The precision class enum and the attributes recording precision decisions.
//
//===----------------------------------------------------------------------===//

#ifndef MP_DIALECT_MP_IR_MPATTRS_H
#define MP_DIALECT_MP_IR_MPATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "mp/Dialect/MP/IR/MPEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "mp/Dialect/MP/IR/MPAttrs.h.inc"

#endif // MP_DIALECT_MP_IR_MPATTRS_H
