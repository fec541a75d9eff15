//===- LossScaleTest.cpp - the dynamic loss-scale state machine -----------===//
//
// The reference that mp.update_scale's folder and lowering follow.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/MP/IR/MPOps.h"

#include <gtest/gtest.h>

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
