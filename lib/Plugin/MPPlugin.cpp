//===- MPPlugin.cpp - mp as a plugin of upstream mlir-opt -----------------===//
//
// libMPPlugin.so gives an mlir-opt linked against libMLIR.so (Debian's) the
// mp dialect and every mp pass and pipeline:
//
//   mlir-opt --load-dialect-plugin=libMPPlugin.so \
//            --load-pass-plugin=libMPPlugin.so \
//            --pass-pipeline="builtin.module(mp-auto-mixed-precision)" m.mlir
//
// (mlir-opt makes its per-pass flags before it loads plugins, so plugin
// passes are named in --pass-pipeline.)
//
//===----------------------------------------------------------------------===//

#include "mp/InitAll.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

using namespace mlir;

/// --load-dialect-plugin: the mp dialect, so its ops parse.
extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "MP", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            mlir::mp::registerAllDialects(*registry);
          }};
}

/// --load-pass-plugin: mp's passes and pipelines. The passes declare the
/// dialects they create, so they also run on input without mp ops when only
/// this plugin is loaded.
extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "MPPasses", LLVM_VERSION_STRING,
          []() { mlir::mp::registerAllPasses(); }};
}
