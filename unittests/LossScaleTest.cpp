//===- LossScaleTest.cpp - the loss-scale state machines ------------------===//
//
// The references that the folders and lowerings of mp.update_scale (dynamic
// scaling) and mp.adapt_scale (adaptive scaling) follow.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/MP/IR/MPOps.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir::mp;

namespace {

TEST(LossScale, DefaultsFollowCommonPractice) {
  LossScaleParams params;
  EXPECT_EQ(params.growthFactor, 2.0f);
  EXPECT_EQ(params.backoffFactor, 0.5f);
  EXPECT_EQ(params.growthInterval, 2000);
}

TEST(LossScale, BacksOffOnInfAndResetsTracker) {
  LossScaleState next = updateLossScale({65536.0f, 1234}, true, {});
  EXPECT_EQ(next.scale, 32768.0f);
  EXPECT_EQ(next.growthTracker, 0);
}

TEST(LossScale, GrowsAfterIntervalCleanSteps) {
  LossScaleParams params;
  params.growthInterval = 3;
  LossScaleState state{65536.0f, 0};
  state = updateLossScale(state, false, params);
  state = updateLossScale(state, false, params);
  EXPECT_EQ(state.scale, 65536.0f);
  EXPECT_EQ(state.growthTracker, 2);
  state = updateLossScale(state, false, params);
  EXPECT_EQ(state.scale, 131072.0f);
  EXPECT_EQ(state.growthTracker, 0);
}

TEST(LossScale, DefaultIntervalIs2000CleanSteps) {
  LossScaleState state{65536.0f, 0};
  for (int i = 0; i < 1999; ++i)
    state = updateLossScale(state, false, {});
  EXPECT_EQ(state.scale, 65536.0f);
  state = updateLossScale(state, false, {});
  EXPECT_EQ(state.scale, 131072.0f);
}

TEST(LossScale, ClampsToMinAndMax) {
  LossScaleParams params;
  params.minScale = 2.0f;
  params.maxScale = 1500.0f;
  params.growthInterval = 1;
  EXPECT_EQ(updateLossScale({3.0f, 0}, true, params).scale, 2.0f);
  EXPECT_EQ(updateLossScale({1000.0f, 0}, false, params).scale, 1500.0f);
}

} // namespace

//===----------------------------------------------------------------------===//
// The adaptive scaler (mp.adapt_scale)
//===----------------------------------------------------------------------===//

namespace {

AdaptiveLossScaleParams adaptive(float margin = 8.0f, int64_t hysteresis = 2) {
  return AdaptiveLossScaleParams(margin, hysteresis);
}

TEST(AdaptiveLossScale, TargetIsLargestPowerOfTwoBelowLimitOverMargin) {
  // amax 1000 at scale 1024 (unscaled ~0.977), limit / margin = 65504 / 8
  // = 8188: 0.977 * 8192 = 8000 fits, 0.977 * 16384 does not.
  EXPECT_EQ(adaptiveLossScaleTarget(1024.0f, 1000.0f, adaptive()), 8192.0f);
  // Exactly at the bound: scaled amax equal to limit / margin is kept.
  AdaptiveLossScaleParams params = adaptive(2.0f);
  params.limit = 1024.0f;
  EXPECT_EQ(adaptiveLossScaleTarget(64.0f, 512.0f, params), 64.0f);
  EXPECT_EQ(adaptiveLossScaleTarget(64.0f, 513.0f, params), 32.0f);
  EXPECT_EQ(adaptiveLossScaleTarget(64.0f, 256.0f, params), 128.0f);
  // Always a power of two, and amax * (p / scale) within limit / margin.
  for (float amax : {3.0f, 17.5f, 999.0f, 4097.0f, 60000.0f}) {
    float p = adaptiveLossScaleTarget(4096.0f, amax, adaptive());
    int exponent;
    EXPECT_EQ(std::frexp(p, &exponent), 0.5f) << p;
    EXPECT_LE(amax * (p / 4096.0f), 65504.0f / 8.0f) << amax;
    if (p < 16777216.0f && p > 1.0f) // the next power would not fit
      EXPECT_GT(amax * (2 * p / 4096.0f), 65504.0f / 8.0f) << amax;
  }
}

TEST(AdaptiveLossScale, TargetClampsToOneAndTwoToThe24) {
  // Tiny gradients ask for more than 2^24; huge ones for less than 1.
  EXPECT_EQ(adaptiveLossScaleTarget(65536.0f, 1e-6f, adaptive()), 16777216.0f);
  EXPECT_EQ(adaptiveLossScaleTarget(1.0f, 1e-30f, adaptive()), 16777216.0f);
  EXPECT_EQ(adaptiveLossScaleTarget(2.0f, 60000.0f, adaptive()), 1.0f);
  EXPECT_EQ(adaptiveLossScaleTarget(1.0f, 3e38f, adaptive()), 1.0f);
  // Nothing measured (all gradients zero): the scale stays.
  EXPECT_EQ(adaptiveLossScaleTarget(4096.0f, 0.0f, adaptive()), 4096.0f);
}

TEST(AdaptiveLossScale, GrowsByOnePowerOfTwoAStep) {
  // Scaled amax 1 at 2^16: 2^29 would fit (clamped to 2^24); one step
  // doubles the scale.
  LossScaleState next =
      updateAdaptiveLossScale({65536.0f, 0}, false, 1.0f, adaptive());
  EXPECT_EQ(next.scale, 131072.0f);
  EXPECT_EQ(next.growthTracker, 0);
  // amax 1000 at 1024 leaves room for 8192: 2048, 4096, 8192 over three
  // steps whose gradients stay the same unscaled (amax doubles each time),
  // then it stays.
  LossScaleState state{1024.0f, 1};
  float unscaled = 1000.0f / 1024.0f;
  for (float want : {2048.0f, 4096.0f, 8192.0f, 8192.0f}) {
    state = updateAdaptiveLossScale(state, false, unscaled * state.scale,
                                    adaptive());
    EXPECT_EQ(state.scale, want);
    EXPECT_EQ(state.growthTracker, 0);
  }
  // A scale that is not a power of two grows to the next one.
  EXPECT_EQ(
      updateAdaptiveLossScale({1000.0f, 0}, false, 1.0f, adaptive()).scale,
      1024.0f);
  // Never above 2^24.
  EXPECT_EQ(
      updateAdaptiveLossScale({16777216.0f, 0}, false, 1e-6f, adaptive()).scale,
      16777216.0f);
}

TEST(AdaptiveLossScale, HysteresisIgnoresOneOutlier) {
  // At 8192 a scaled amax of 20000 asks for 2048.
  LossScaleState state{8192.0f, 0};
  state = updateAdaptiveLossScale(state, false, 20000.0f, adaptive());
  EXPECT_EQ(state.scale, 8192.0f); // one outlier: the scale stays
  EXPECT_EQ(state.growthTracker, 1);
  // A normal step in between breaks the streak.
  state = updateAdaptiveLossScale(state, false, 5000.0f, adaptive());
  EXPECT_EQ(state.scale, 8192.0f);
  EXPECT_EQ(state.growthTracker, 0);
  // Two in a row lower it, to the last step's target.
  state = updateAdaptiveLossScale(state, false, 20000.0f, adaptive());
  state = updateAdaptiveLossScale(state, false, 40000.0f, adaptive());
  EXPECT_EQ(state.scale, 1024.0f);
  EXPECT_EQ(state.growthTracker, 0);
  // hysteresis 1 lowers at once.
  state =
      updateAdaptiveLossScale({8192.0f, 0}, false, 20000.0f, adaptive(8, 1));
  EXPECT_EQ(state.scale, 2048.0f);
}

TEST(AdaptiveLossScale, OverflowHalvesAndCoolsDown) {
  AdaptiveLossScaleParams params = adaptive();
  params.growthInterval = 3;
  LossScaleState state =
      updateAdaptiveLossScale({8192.0f, 1}, true, 0.0f, params);
  EXPECT_EQ(state.scale, 4096.0f); // skipped, halved
  EXPECT_EQ(state.growthTracker, -3);
  // Cooling down: small gradients do not grow the scale...
  state = updateAdaptiveLossScale(state, false, 1.0f, params);
  EXPECT_EQ(state.scale, 4096.0f);
  EXPECT_EQ(state.growthTracker, -2);
  // ...large ones lower it at once, without hysteresis.
  state = updateAdaptiveLossScale(state, false, 16000.0f, params);
  EXPECT_EQ(state.scale, 2048.0f);
  EXPECT_EQ(state.growthTracker, -1);
  state = updateAdaptiveLossScale(state, false, 1.0f, params);
  EXPECT_EQ(state.scale, 2048.0f);
  EXPECT_EQ(state.growthTracker, 0);
  // Cooled down: growth again.
  state = updateAdaptiveLossScale(state, false, 1.0f, params);
  EXPECT_EQ(state.scale, 4096.0f);
  // The scale never backs off below 1.
  EXPECT_EQ(updateAdaptiveLossScale({1.0f, 0}, true, 0.0f, params).scale, 1.0f);
}

TEST(AdaptiveLossScale, ZeroAmaxKeepsTheScale) {
  LossScaleState state =
      updateAdaptiveLossScale({4096.0f, 1}, false, 0.0f, adaptive());
  EXPECT_EQ(state.scale, 4096.0f);
  EXPECT_EQ(state.growthTracker, 0);
}

} // namespace
