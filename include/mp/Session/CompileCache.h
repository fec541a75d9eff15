//===- CompileCache.h - compiled code kept between runs ---------*- C++ -*-===//
//
// A CPU session's compiled step, and an inference session's compiled
// @predict, are stored as artifacts (docs/artifacts.md) in a cache
// directory, named by a hash of everything that decides their code: the
// model's bytes, the resolved compile options, this CPU and the mp library
// that compiled it. A second session of the same model and options loads
// the code instead of compiling it (docs/user-guide.md, "The compile
// cache").
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_COMPILECACHE_H
#define MP_SESSION_COMPILECACHE_H

#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>

namespace mp {

struct InferOptions;
struct TrainOptions;

/// Where compiled steps are cached: `enabled` false (--no-cache, the C
/// API's cache 0) compiles every time; `dir` empty means
/// $XDG_CACHE_HOME/mp, else $HOME/.cache/mp. A store removes the least
/// recently used entries beyond `maxMegabytes`. (The tools and the C API
/// read MP_CACHE, MP_CACHE_DIR and MP_CACHE_MAX_MB into these:
/// readOptionEnvironment.)
struct CompileCacheOption {
  bool enabled = true;
  std::string dir;
  uint64_t maxMegabytes = 1024;

  uint64_t maxBytes() const { return maxMegabytes << 20; }
};

/// What a session's compilation did with the cache.
enum class CacheUse {
  Off,      // not asked for, or not applicable (GPU, numerics probes)
  Loaded,   // the step came from the cache
  Stored,   // compiled and stored for the next session
  Unusable, // compiled without the cache: cacheNote() says why
};

/// "off", "loaded", "stored", "unusable" (string literals).
const char *stringifyCacheUse(CacheUse use);

/// The directory `option` names (its default resolved); "" when the cache
/// is off.
std::string resolveCacheDir(const CompileCacheOption &option);

/// The options that decide a step's code, as artifacts record them (their
/// "options" object) and the cache key hashes them: one list, so a new
/// compile option cannot reach one and miss the other.
llvm::json::Object compileOptionsJson(const TrainOptions &options);

/// The cache entry's path for `modelPath` compiled with `options` (resolved:
/// no "auto" left) on this CPU: DIR/<sha256>.mpa. "" with `error` when the
/// model cannot be read.
std::string compileCachePath(const std::string &dir,
                             const std::string &modelPath,
                             const TrainOptions &options, std::string &error);

/// The cache entry's path for @predict of `modelPath` compiled by an
/// InferSession with `options` (resolved: auto replaced by what it chose)
/// on this CPU; the calibration file's bytes are part of the key. "" with
/// `error` when the model or the calibration file cannot be read.
std::string inferCachePath(const std::string &dir, const std::string &modelPath,
                           const InferOptions &options, std::string &error);

/// Removes the least recently used entries until the directory holds at
/// most `maxBytes` of them (CompileCacheOption::maxBytes), and temporary
/// files that a killed writer left behind over an hour ago.
void pruneCompileCache(const std::string &dir, uint64_t maxBytes);

} // namespace mp

#endif // MP_SESSION_COMPILECACHE_H
