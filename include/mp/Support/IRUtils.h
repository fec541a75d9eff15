//===- IRUtils.h - small IR helpers the passes share ------------*- C++ -*-===//
//
// What more than one pass needs to say or recognise about IR: a location as
// report text, a float conversion of a scalar, the body of a named linalg
// op rebuilt for new operand types, an elementwise map, a buffer's address
// for runtime calls, the buffer behind a view, and a linalg.generic that does
// nothing but convert its input's element type.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SUPPORT_IRUTILS_H
#define MP_SUPPORT_IRUTILS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"

#include <string>
#include <vector>

namespace mlir {
namespace linalg {
class GenericOp;
} // namespace linalg
namespace mp {

/// A location as reports print it: "file:line:col", "name" or "name at
/// file:line:col"; a fused location by its first known part, a call site by
/// its callee; anything else as MLIR prints it.
std::string locationText(Location loc);

/// "file:line:col" of the first file location inside `loc` (through names,
/// fused locations and call sites' callees); "" when it has none.
std::string fileLocationText(Location loc);

/// What `--keep-f32` takes to name the op at `loc` alone, as precisely as
/// `loc` allows: "file:line:col" of its first file location with a line
/// (hand-written MLIR, the PyTorch frontend's one line per op), else the
/// name of its first name location (an ONNX node, whose file location is
/// FILE:0:0), else its file location; "" when it has none of these.
std::string keepF32Location(Location loc);

/// The ops under `root` that produce values and stand at `wanted`, in
/// program order. `wanted` is any of:
/// - "FILE:LINE:COL" (FILE spelled as in the model, or another path to the
///   same file: a run resumed with another spelling of the model's path
///   finds its pins) or "LINE:COL" in any file;
/// - a name: the ops whose location holds a name location (NameLoc) with
///   that name, or, for a module path, one inside it ("features.3" takes
///   "features.3.block.1" but not "features.30");
/// - "NAME at FILE:LINE:COL", as locationText prints a named location: the
///   ops with both.
std::vector<Operation *> opsAtLocation(Operation *root, StringRef wanted);

/// `value` (a float scalar) converted to the float type `type`: extf to a
/// wider type, truncf to a narrower one, and f16 <-> bf16 (the same width)
/// through f32, rounding once at the end.
Value convertFloatScalar(OpBuilder &b, Location loc, Value value, Type type);

/// Regenerates the body of `op` after its operands changed type, when it is
/// a named linalg op (one with a region builder: matmul, conv, ...): the
/// body follows from the operand element types (extf/mulf/addf for f16
/// into f32, extsi/muli/addi for i8 into i32). False, leaving `op` alone,
/// for any other op.
bool rebuildNamedLinalgBody(OpBuilder &b, Operation *op);

/// A linalg.generic applying `fn` to every element of the ranked tensor
/// `input`: a tensor of the same shape with element type
/// `resultElementType`.
Value mapElements(OpBuilder &b, Location loc, Value input,
                  Type resultElementType,
                  function_ref<Value(OpBuilder &, Location, Value)> fn);

/// The address of `memref`'s first element (aligned pointer plus offset in
/// bytes) as an index: what a runtime call takes as a pointer.
Value alignedAddress(OpBuilder &b, Location loc, Value memref);

/// The buffer `memref` views, through subviews, reshapes and casts
/// (ViewLikeOpInterface) and transposes.
Value viewedBuffer(Value memref);

/// Whether `buffer` is made by memref.alloc or memref.alloca here: then no
/// other buffer (a function argument, a global, another allocation) shares
/// its memory.
bool isAllocation(Value buffer);

/// Whether memrefs `a` and `b` may share memory: views of one buffer, or
/// two buffers neither of which was allocated here (two function arguments
/// may be one buffer: a session passes a parameter's buffer as its own
/// update's).
bool mayShareMemory(Value a, Value b);

/// arith.extf or arith.truncf.
bool isFloatConversion(Operation *op);

/// A stand-alone cast: a linalg.generic with one input and one output,
/// identity maps, no reduction, whose body only converts floats (one or
/// more extf/truncf) and yields.
bool isCastGeneric(Operation *op);

/// A cast generic on tensors whose body is one arith.truncf of its input,
/// yielded: a whole tensor converted to a narrower float type (what
/// --mp-auto-mixed-precision emits for a weight).
bool isWholeTruncation(linalg::GenericOp generic);

} // namespace mp
} // namespace mlir

#endif // MP_SUPPORT_IRUTILS_H
