//===- CompileCache.cpp - compiled code kept between runs -----------------===//

#include "mp/Session/CompileCache.h"
#include "mp/Session/InferSession.h"
#include "mp/Session/Session.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <sys/stat.h>
#include <vector>

namespace mp {

namespace {

/// Bumped when what a cache entry holds changes meaning without the mp
/// library's file changing (it always changes with a rebuild).
// 2: entries carry the model's starting values (an entry of format 1
// would start an ONNX model from random weights).
constexpr char kCacheFormat[] = "mp-compile-cache-3";

/// The file this code was loaded from (mp-run, libmp_session.so, a Python
/// extension...), by path, size and modification time: a rebuilt or
/// upgraded mp compiles differently, so its entries must not be reused.
std::string libraryIdentity() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&libraryIdentity), &info) ||
      !info.dli_fname)
    return "unknown";
  struct stat st;
  if (stat(info.dli_fname, &st) != 0)
    return info.dli_fname;
  return std::string(info.dli_fname) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

/// The host the code is generated for: artifacts are compiled for this CPU
/// (its name and every feature LLVM sees).
std::string hostIdentity() {
  std::vector<std::string> features;
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    features.push_back((feature.second ? "+" : "-") + feature.first().str());
  std::sort(features.begin(), features.end());
  return llvm::sys::getProcessTriple() + ":" +
         llvm::sys::getHostCPUName().str() + ":" + llvm::join(features, ",");
}

} // namespace

const char *stringifyCacheUse(CacheUse use) {
  switch (use) {
  case CacheUse::Off:
    return "off";
  case CacheUse::Loaded:
    return "loaded";
  case CacheUse::Stored:
    return "stored";
  case CacheUse::Unusable:
    return "unusable";
  }
  return "off";
}

namespace {

/// $XDG_CACHE_HOME/mp, else ~/.cache/mp; "" with neither variable set.
std::string defaultCacheDir() {
  llvm::SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    path = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(path, home, ".cache");
  else
    return "";
  llvm::sys::path::append(path, "mp");
  return path.str().str();
}

} // namespace

std::string resolveCacheDir(const CompileCacheOption &option) {
  if (!option.enabled)
    return "";
  if (!option.dir.empty())
    return option.dir;
  return defaultCacheDir();
}

llvm::json::Object compileOptionsJson(const TrainOptions &o) {
  // The step's options (TrainOptions.def), and the job size a distributed
  // step averages over.
  llvm::json::Object key = trainOptionsJson(o, OptionScope::Step);
  key["ranks"] = o.ranks;
  return key;
}

namespace {

/// DIR/<sha256 of `key`, this mp and host, and each file's bytes>.mpa; ""
/// with `error` when a file cannot be read.
std::string entryPath(const std::string &dir, llvm::json::Object key,
                      llvm::ArrayRef<std::string> files, std::string &error) {
  key["format"] = kCacheFormat;
  key["mp"] = libraryIdentity();
  key["host"] = hostIdentity();
  std::string keyText;
  llvm::raw_string_ostream os(keyText);
  os << llvm::json::Value(std::move(key));
  llvm::SHA256 hash;
  hash.update(keyText);
  // Each file's bytes follow the key, after their length, so no two inputs
  // run together.
  hash.update(std::to_string(keyText.size()) + "\n");
  for (const std::string &path : files) {
    auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
    if (!file) {
      error = "cannot read '" + path + "': " + file.getError().message();
      return "";
    }
    hash.update(std::to_string((*file)->getBufferSize()) + "\n");
    hash.update((*file)->getBuffer());
  }
  std::array<uint8_t, 32> digest = hash.final();
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path,
                          llvm::toHex(digest, /*LowerCase=*/true) + ".mpa");
  return path.str().str();
}

} // namespace

std::string compileCachePath(const std::string &dir,
                             const std::string &modelPath,
                             const TrainOptions &options, std::string &error) {
  // Every option the lowering reads; the seed and the device are not among
  // them (the seed initialises parameters after loading; only CPU sessions
  // are cached).
  return entryPath(dir, compileOptionsJson(options), {modelPath}, error);
}

std::string inferCachePath(const std::string &dir, const std::string &modelPath,
                           const InferOptions &o, std::string &error) {
  // Every option that decides @predict's code. The parameters do not: they
  // are arguments, quantized or converted after loading. QAT's observers
  // and a calibration file's ranges become constants in the code.
  llvm::json::Object observers;
  for (const auto &[name, amax] : o.qatObservers)
    observers[name] = amax;
  llvm::json::Object key{
      {"kind", "infer"},
      {"mode", static_cast<int64_t>(o.mode)},
      {"precision", mlir::mp::stringifyFloatPrecision(o.precision)},
      {"quantization", mlir::mp::stringifyQuantizationMode(o.quantization)},
      {"method", mlir::mp::stringifyQuantizationMethod(o.method)},
      {"percentile", o.percentile},
      {"per_channel", o.perChannel},
      {"max_error", o.maxError},
      {"fallback", mlir::mp::stringifyFloatPrecision(o.fallback)},
      {"fallback_ops", llvm::json::Array(o.fallbackOps)},
      {"probe_outputs", o.probeOutputs},
      {"parallel_loops", o.parallelLoops},
      {"approximate_math", o.approximateMath},
      {"native_bf16", o.nativeBf16},
      {"qat_observers", std::move(observers)},
      {"model_batch", o.modelBatch}};
  std::vector<std::string> files = {modelPath};
  if (!o.calibrationPath.empty())
    files.push_back(o.calibrationPath);
  return entryPath(dir, std::move(key), files, error);
}

namespace {

/// A cache entry (DIR/<hash>.mpa) and when it was last used.
struct CacheEntry {
  std::string path;
  uint64_t size;
  llvm::sys::TimePoint<> used;
};

/// The entries in `dir`; temporary files that a store left there over an
/// hour ago (a process killed while writing) are removed.
std::vector<CacheEntry> listCacheEntries(const std::string &dir) {
  std::vector<CacheEntry> entries;
  auto now = std::chrono::system_clock::now();
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status) ||
        status.type() != llvm::sys::fs::file_type::regular_file)
      continue;
    if (name.contains(".mpa.tmp-")) {
      if (now - status.getLastModificationTime() > std::chrono::hours(1))
        llvm::sys::fs::remove(it->path());
      continue;
    }
    if (name.ends_with(".mpa"))
      entries.push_back(
          {it->path(), status.getSize(), status.getLastModificationTime()});
  }
  return entries;
}

} // namespace

void pruneCompileCache(const std::string &dir, uint64_t maxBytes) {
  std::vector<CacheEntry> entries = listCacheEntries(dir);
  uint64_t total = 0;
  for (const CacheEntry &entry : entries)
    total += entry.size;
  // A hit touches its entry (Session::compile), so the oldest modification
  // is the least recently used.
  std::sort(
      entries.begin(), entries.end(),
      [](const CacheEntry &a, const CacheEntry &b) { return a.used < b.used; });
  for (const CacheEntry &entry : entries) {
    if (total <= maxBytes)
      break;
    if (!llvm::sys::fs::remove(entry.path))
      total -= entry.size;
  }
}

} // namespace mp
