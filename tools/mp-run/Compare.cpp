//===- Compare.cpp - mp-run compare ---------------------------------------===//
//
// mp-run compare MODEL.mlir --precision f16|bf16: one batch of the test
// split through mp.predict in FP32 and in mixed precision, with the same
// parameters (--checkpoint's, or the seed's), and the ops listed by how far
// the mixed run's output is from FP32's (docs/numerics-debugging.md).
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include <cstdio>

namespace mprun {
namespace {

cl::opt<unsigned> compareTop("top", cl::cat(compareOptions),
                             cl::desc("compare: how many ops to list (0: all)"),
                             cl::init(20));

} // namespace

int runCompare(const char *argv0) {
  if (int status = refuseTrainFlags())
    return status;
  if (int status = resolveCheckpoint(/*create=*/false))
    return status;
  mp::TrainOptions mixedOptions;
  std::string error;
  if (!mp::parsePrecision(precision, mixedOptions.precision, error))
    return fail(error);
  if (int status = readTrainOptions(mixedOptions))
    return status;
  if (int status = refuseOnGpu(mixedOptions, /*probes=*/true, false))
    return status;
  if (isArtifact(modelPath))
    return fail("compare needs the model (.mlir), not an artifact");
  if (mixedOptions.precision == mp::FloatPrecision::F32)
    return fail("compare needs --precision f16 or bf16 (it compares against "
                "f32)");
  mixedOptions.probes = mp::TrainOptions::Probes::ComputeOps;
  mp::TrainOptions f32Options = mixedOptions;
  f32Options.precision = mp::FloatPrecision::F32;
  f32Options.lossScale = mp::LossScaleOption();
  std::unique_ptr<mp::Session> reference =
      mp::Session::create(modelPath, f32Options, error);
  if (!reference)
    return fail(error);
  std::unique_ptr<mp::Session> mixed =
      mp::Session::create(modelPath, mixedOptions, error);
  if (!mixed)
    return fail(error);
  if (!mixed->canPredict())
    return fail("the model has no function marked mp.predict to compare");
  mp::DataSplit train, test;
  if (int status = loadData(argv0, *mixed, train, test))
    return status;
  int64_t b = mixed->batchSize(), f = mixed->numFeatures(),
          c = mixed->numClasses();
  if (test.rows < b)
    return fail("the test split has fewer rows than one batch");
  mp::RunPosition position;
  if (!checkpointPath.empty() &&
      (!mp::restoreCheckpoint(*reference, checkpointPath, false, position,
                              error) ||
       !mp::restoreCheckpoint(*mixed, checkpointPath, false, position, error)))
    return fail(error);

  std::vector<float> x(test.x.begin(), test.x.begin() + b * f), logits(b * c);
  mp::ProbeRecorder referenceRun;
  if (!reference->predict(x.data(), logits.data(), error))
    return fail(error);
  mp::ProbeRecorder mixedRun;
  if (!mixed->predict(x.data(), logits.data(), error))
    return fail(error);
  std::printf("per-op comparison of %s against f32: one batch of %lld test "
              "rows through mp.predict, parameters from %s; relative error "
              "= ||%s - f32|| / ||f32||\n",
              precision.c_str(), (long long)b,
              checkpointPath.empty() ? "the seed" : checkpointPath.c_str(),
              precision.c_str());
  if (mp::printComparison(referenceRun, mixedRun, compareTop, stdout) == 0)
    return fail("no probed op of the mixed-precision run matched the f32 run");
  return 0;
}

} // namespace mprun
