//===- Environment.h - environment variables, for front ends ----*- C++ -*-===//
//
// The session library is steered by its options alone. The front ends
// (mp-run, mp-compile, the C API and so Python) also take these
// environment variables, read here into the options before the front end's
// own flags or options string, which win:
//
//   MP_CACHE=off|0          cache=false
//   MP_CACHE_DIR=DIR        cache-dir=DIR
//   MP_CACHE_MAX_MB=N       the compile cache's size limit (default 1024)
//   MP_PARALLEL_LOOPS=0     parallel-loops=false
//   MP_APPROXIMATE_MATH=0   approximate-math=false
//   MP_NATIVE_BF16=0        native-bf16=false
//   MP_DUMP_STEP_IR=FILE    dump-ir=FILE (training sessions)
//   MP_DUMP_PREDICT_IR=FILE dump-ir=FILE (inference sessions)
//
// ("off" is taken for 0 throughout.)
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_ENVIRONMENT_H
#define MP_SESSION_ENVIRONMENT_H

#include <string>

namespace mp {

struct TrainOptions;
struct InferOptions;

/// Reads the variables above into `options`; false with an error naming the
/// variable when one holds a value it cannot take.
bool readOptionEnvironment(TrainOptions &options, std::string &error);
bool readOptionEnvironment(InferOptions &options, std::string &error);

} // namespace mp

#endif // MP_SESSION_ENVIRONMENT_H
