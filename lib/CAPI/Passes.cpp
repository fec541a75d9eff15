//===- Passes.cpp - C API for mp's dialect, passes and pipelines ----------===//
//
// include/mp-c/Passes.h. The option text goes through the passes' own
// parsers, so the C API accepts exactly what mp-opt does.
//
//===----------------------------------------------------------------------===//

#include "mp-c/Passes.h"

#include "mp/InitAll.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/CAPI/Utils.h"

using namespace mlir;
using namespace mlir::mp;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(MP, mp, mlir::mp::MPDialect)

void mpRegisterAllPasses(void) {
  // Once per process, however often callers ask.
  static bool registered = [] {
    mlir::mp::registerAllPasses();
    return true;
  }();
  (void)registered;
}

/// Hands the caller's callback one message about options that did not
/// parse. An unknown key comes with the parser's message; a bad value
/// (dtype=f8) does not: LLVM's option parser prints that reason on stderr
/// itself, so the message says where to look.
static void reportBadOptions(MlirStringCallback callback, void *userData,
                             StringRef what, StringRef options,
                             StringRef parserMessage) {
  if (!callback)
    return;
  std::string message;
  llvm::raw_string_ostream os(message);
  os << what << ": invalid options '" << options << "'";
  if (!parserMessage.trim().empty())
    os << ": " << parserMessage.trim();
  else
    os << " (the option parser printed why on stderr)";
  callback(wrap(StringRef(message)), userData);
}

MlirLogicalResult mpAddAutoMixedPrecision(MlirOpPassManager passManager,
                                          MlirStringRef options,
                                          MlirStringCallback errorCallback,
                                          void *userData) {
  std::unique_ptr<Pass> pass = createAutoMixedPrecision();
  auto onError = [&](const Twine &message) {
    reportBadOptions(errorCallback, userData, pass->getArgument(),
                     unwrap(options), message.str());
    return failure();
  };
  if (failed(pass->initializeOptions(unwrap(options), onError)))
    return wrap(failure());
  unwrap(passManager)->addPass(std::move(pass));
  return wrap(success());
}

MlirLogicalResult mpAddTrainPipeline(MlirOpPassManager passManager,
                                     MlirStringRef options,
                                     MlirStringCallback errorCallback,
                                     void *userData) {
  TrainPipelineOptions parsed;
  std::string message;
  llvm::raw_string_ostream errors(message);
  if (failed(parsed.parseFromString(unwrap(options), errors))) {
    reportBadOptions(errorCallback, userData, "mp-train-pipeline",
                     unwrap(options), message);
    return wrap(failure());
  }
  buildTrainPipeline(*unwrap(passManager), parsed);
  return wrap(success());
}

// mlirCreate<Group><Pass>() and mlirRegister<Group><Pass>() for every pass.
#include "mp/Conversion/Passes.capi.cpp.inc"
#include "mp/Lowering/Passes.capi.cpp.inc"
#include "mp/Transforms/Passes.capi.cpp.inc"
