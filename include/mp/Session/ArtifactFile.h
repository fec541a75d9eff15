//===- ArtifactFile.h - lowered modules as loadable shared objects -*- C++ -*-//
//
// The file format of mp's artifacts (docs/artifacts.md): a lowered CPU
// module's object code linked into a shared object, followed by a JSON
// metadata record and a checked trailer. A training session's artifact
// (mp-compile, the compile cache) and an inference session's cache entry
// are both such files; each kind says what its metadata holds ("format").
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_ARTIFACTFILE_H
#define MP_SESSION_ARTIFACTFILE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mp {

/// The "format" of a training session's artifact and of an inference
/// session's cache entry.
inline constexpr const char *kTrainingArtifactFormat = "mp-artifact";
inline constexpr const char *kInferenceArtifactFormat = "mp-infer-artifact";

/// Generates object code for the lowered CPU `module` (what the JIT would
/// run: the same LLVM IR, optimization and host target), links it with
/// `cc -shared` and writes the artifact to `outputPath` atomically.
/// `metadata` (with its "format") is completed with the runtime imports, the
/// target and "entries": each key of `entries` names one of the module's
/// functions, whose packed wrapper artifactEntry finds.
bool writeArtifactFile(mlir::ModuleOp module, const std::string &cc,
                       llvm::json::Object metadata,
                       const llvm::json::Object &entries,
                       const std::string &outputPath, std::string &error,
                       llvm::function_ref<void(const std::string &)> progress);

/// Checks the artifact at `path` (trailer, checksum, `format`, that this
/// CPU has the features it was compiled for), dlopens it and binds its
/// runtime imports. `handle` is the library (dlclose it when done) and
/// `metadata` its record. False with `error` completing "artifact 'PATH'
/// ..." (nothing left open).
bool openArtifactFile(const std::string &path, llvm::StringRef format,
                      void *&handle, llvm::json::Object &metadata,
                      std::string &error);

/// The packed entry (`void(void **)`, as ExecutionEngine::invokePacked
/// takes arguments) the artifact's metadata names under `key`; null when
/// there is none.
using PackedEntry = void (*)(void **);
PackedEntry artifactEntry(void *handle, const llvm::json::Object &metadata,
                          llvm::StringRef key);

/// A shape as artifact metadata records it (a JSON array), and read back:
/// false unless `value` is an array of non-negative integers.
llvm::json::Array artifactShape(const std::vector<int64_t> &shape);
bool readArtifactShape(const llvm::json::Value *value,
                       std::vector<int64_t> &shape);

} // namespace mp

#endif // MP_SESSION_ARTIFACTFILE_H
