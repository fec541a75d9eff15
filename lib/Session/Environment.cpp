//===- Environment.cpp - environment variables, for front ends ------------===//

#include "mp/Session/Environment.h"

#include "mp/Session/InferSession.h"
#include "mp/Session/Options.h"

#include "llvm/ADT/StringRef.h"

#include <cstdlib>

namespace mp {

namespace {

/// The variable's value; "" when it is not set.
llvm::StringRef variable(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

/// A switch turned off by 0 or off (any other value leaves it as it is).
void readSwitch(const char *name, bool &value) {
  llvm::StringRef text = variable(name);
  if (text == "0" || text.equals_insensitive("off"))
    value = false;
}

/// The options both kinds of session share.
template <typename Options>
bool readShared(Options &options, const char *dumpVariable,
                std::string &error) {
  llvm::StringRef cache = variable("MP_CACHE");
  if (cache == "0" || cache.equals_insensitive("off"))
    options.cache.enabled = false;
  if (llvm::StringRef dir = variable("MP_CACHE_DIR"); !dir.empty())
    options.cache.dir = dir.str();
  if (llvm::StringRef limit = variable("MP_CACHE_MAX_MB");
      !limit.empty() && limit.getAsInteger(10, options.cache.maxMegabytes)) {
    error = "MP_CACHE_MAX_MB '" + limit.str() +
            "': expected a whole number of megabytes";
    return false;
  }
  readSwitch("MP_PARALLEL_LOOPS", options.parallelLoops);
  readSwitch("MP_APPROXIMATE_MATH", options.approximateMath);
  readSwitch("MP_NATIVE_BF16", options.nativeBf16);
  if (llvm::StringRef dump = variable(dumpVariable); !dump.empty())
    options.dumpIr = dump.str();
  return true;
}

} // namespace

bool readOptionEnvironment(TrainOptions &options, std::string &error) {
  return readShared(options, "MP_DUMP_STEP_IR", error);
}

bool readOptionEnvironment(InferOptions &options, std::string &error) {
  return readShared(options, "MP_DUMP_PREDICT_IR", error);
}

} // namespace mp
