/*===- Passes.h - C API: mp's dialect, passes and pipelines ---*- C -*-===*
 *
 * For compilers and language bindings that drive MLIR through its C API
 * (mlir-c): register the mp dialect and every mp pass, create any mp pass,
 * and add the mixed-precision pass or the training pipeline to a pass
 * manager with options given as text, as on mp-opt's command line.
 *
 *   MlirDialectRegistry registry = mlirDialectRegistryCreate();
 *   mlirDialectHandleInsertDialect(mlirGetDialectHandle__mp__(), registry);
 *   mpRegisterAllPasses();           // textual pipelines can name them
 *   ...
 *   mpAddAutoMixedPrecision(pm, mlirStringRefCreateFromCString(
 *                               "dtype=bf16"), onError, NULL);
 *
 * Built as libMPCAPI.a (MP::MPCAPI in the installed CMake package); link it
 * with MLIR's C API libraries (MLIRCAPIIR, ...). docs/user-guide.md,
 * "Using mp from another compiler".
 *
 *===----------------------------------------------------------------------===*/

#ifndef MP_C_PASSES_H
#define MP_C_PASSES_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/* mlirGetDialectHandle__mp__(): the mp dialect (mp.param, mp.loss, ...). */
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(MP, mp);

/* Registers every mp pass and pipeline (--mp-auto-mixed-precision,
 * --mp-train-pipeline, --mp-lower-cpu, ...) with MLIR's global registry, so
 * mlirParsePassPipeline and mlirOpPassManagerAddPipeline take their names.
 * Safe to call more than once. */
MLIR_CAPI_EXPORTED void mpRegisterAllPasses(void);

/* Adds --mp-auto-mixed-precision to `passManager` (which must run on
 * builtin.module) with `options` as mp-opt takes them inside the braces,
 * e.g. "dtype=bf16 deny-ops=linalg.softmax" ("" for the defaults). On a bad
 * option nothing is added, `errorCallback` (if not NULL) receives the
 * message and the result is a failure. */
MLIR_CAPI_EXPORTED MlirLogicalResult mpAddAutoMixedPrecision(
    MlirOpPassManager passManager, MlirStringRef options,
    MlirStringCallback errorCallback, void *userData);

/* Adds the passes of --mp-train-pipeline (autodiff, loss scaling, the
 * optimizer's @train_step, the mixed-precision rewrite) to `passManager`
 * with `options` such as "dtype=f16 optimizer=adam lr=0.001". Errors as
 * mpAddAutoMixedPrecision. */
MLIR_CAPI_EXPORTED MlirLogicalResult mpAddTrainPipeline(
    MlirOpPassManager passManager, MlirStringRef options,
    MlirStringCallback errorCallback, void *userData);

#ifdef __cplusplus
}
#endif

/* One creator and one registration function per pass, generated from
 * Passes.td: mlirCreateMPTransformsAutoMixedPrecision(),
 * mlirRegisterMPTransformsPasses(), mlirCreateMPConversion...(),
 * mlirCreateMPLowering...(). */
#include "mp/Conversion/Passes.capi.h.inc"
#include "mp/Lowering/Passes.capi.h.inc"
#include "mp/Transforms/Passes.capi.h.inc"

#endif /* MP_C_PASSES_H */
