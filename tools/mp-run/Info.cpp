//===- Info.cpp - mp-run info ---------------------------------------------===//
//
// mp-run info: what the machine offers (CPU features, GPUs) and what
// --precision auto picks on it.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "mp/Session/Hardware.h"

#include <cstdio>

namespace mprun {

int runInfo(const char *) {
  if (!modelPath.empty())
    return fail("info takes no model: it describes the machine");
  std::printf("%s", mp::describeHardware(mp::detectHardware()).c_str());
  return 0;
}

} // namespace mprun
