//===- PrecisionPins.h - keep chosen ops of a model in f32 ------*- C++ -*-===//
//
// A run's precision plan can keep ops in f32 that the model itself does not
// pin: mp-run's --keep-f32 FILE:LINE:COL (or a module path, or an ONNX node
// name) and the session's own repair of a run that overflows
// (PrecisionRepair.h) name them by the source location that --check-numerics
// reports, which survives autodiff and the AMP rewrite.
// Pinning sets `mp.precision = #mp.precision<f32>` on the op in the parsed
// model before the training pipeline runs; autodiff pins the ops of its
// derivative too.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_PRECISIONPINS_H
#define MP_SESSION_PRECISIONPINS_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mp {

/// Pins to f32 every op of `module`'s functions whose location is one of
/// `locations`: "FILE:LINE:COL" as --check-numerics prints it, "LINE:COL"
/// (any file), a module path or node name, or "NAME at FILE:LINE:COL"
/// (mlir::mp::opsAtLocation). A location no op has is an error that says so.
bool pinOpsToF32(mlir::ModuleOp module,
                 const std::vector<std::string> &locations, std::string &error);

/// The locations (mlir::mp::keepF32Location: FILE:LINE:COL, or the node
/// name of an op without a line) of the ops that read the results of the
/// ops at `location` (any form pinOpsToF32 takes), in program order and
/// without repeats: where a value kept in f32 goes next. Users without a
/// location cannot be pinned and are left out.
std::vector<std::string> userLocations(mlir::ModuleOp module,
                                       const std::string &location);

} // namespace mp

#endif // MP_SESSION_PRECISIONPINS_H
