//===- ProbesTest.cpp - observer dispatch and calibration statistics ------===//

#include "TestUtil.h"

#include "mprt/mprt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace {

using mprt_test::TempDir;

struct StatsDeleter {
  void operator()(mprt_stats *s) const { mprt_stats_free(s); }
};
using StatsPtr = std::unique_ptr<mprt_stats, StatsDeleter>;

StatsPtr makeStats() {
  mprt_stats *stats = nullptr;
  EXPECT_EQ(mprt_stats_create(&stats), MPRT_OK);
  return StatsPtr(stats);
}

int64_t sum(const mprt_probe_stats &s) {
  return std::accumulate(s.histogram, s.histogram + MPRT_STATS_BINS,
                         int64_t(0));
}

struct Recorded {
  std::string id;
  std::vector<float> values;
  mprt_dtype dtype;
};

void record(void *user, const char *id, const void *data, int64_t n,
            mprt_dtype dtype) {
  auto *calls = static_cast<std::vector<Recorded> *>(user);
  const float *f = static_cast<const float *>(data);
  calls->push_back({id, std::vector<float>(f, f + n), dtype});
}

TEST(Probes, ObserveWithoutObserverDoesNothing) {
  mprt_set_observer(nullptr, nullptr);
  float x[2] = {1, 2};
  mprt_observe("p", x, 2, MPRT_DTYPE_F32); // must not crash
}

TEST(Probes, ObserveForwardsToTheObserver) {
  std::vector<Recorded> calls;
  mprt_set_observer(record, &calls);
  float x[3] = {1, -2, 3};
  mprt_observe("fc1.input", x, 3, MPRT_DTYPE_F32);
  // Invalid dtypes and counts are dropped, not forwarded.
  mprt_observe("bad", x, 3, 99);
  mprt_observe("bad", x, -1, MPRT_DTYPE_F32);
  mprt_set_observer(nullptr, nullptr);
  mprt_observe("after", x, 3, MPRT_DTYPE_F32);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].id, "fc1.input");
  EXPECT_EQ(calls[0].dtype, MPRT_DTYPE_F32);
  EXPECT_EQ(calls[0].values, (std::vector<float>{1, -2, 3}));
}

TEST(Probes, GetObserverReturnsTheInstalledOne) {
  std::vector<Recorded> calls;
  mprt_set_observer(record, &calls);
  mprt_observer_fn fn = nullptr;
  void *user = nullptr;
  mprt_get_observer(&fn, &user);
  EXPECT_EQ(fn, &record);
  EXPECT_EQ(user, &calls);
  mprt_set_observer(nullptr, nullptr);
  mprt_get_observer(&fn, &user);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(user, nullptr);
}

TEST(Stats, MinMaxCountsAndHistogram) {
  StatsPtr stats = makeStats();
  std::vector<float> x = {-4, 0, 1, 2, 0x1p-20f, 3};
  ASSERT_EQ(
      mprt_stats_add(stats.get(), "a", x.data(), x.size(), MPRT_DTYPE_F32),
      MPRT_OK);
  mprt_probe_stats s;
  ASSERT_EQ(mprt_stats_find(stats.get(), "a", &s), MPRT_OK);
  EXPECT_STREQ(s.id, "a");
  EXPECT_EQ(s.calls, 1);
  EXPECT_EQ(s.count, 6);
  EXPECT_EQ(s.zero_count, 1);
  EXPECT_EQ(s.below_f16_normal_count, 1);
  EXPECT_EQ(s.nonfinite_count, 0);
  EXPECT_EQ(s.min, -4);
  EXPECT_EQ(s.max, 3);
  EXPECT_EQ(s.abs_max, 4);
  EXPECT_EQ(s.hist_max, 4);
  EXPECT_EQ(sum(s), 6);
  // |x| = 4 lands in the last bin, 1 at bin 512, 2 at 1024, 3 at 1536.
  EXPECT_EQ(s.histogram[MPRT_STATS_BINS - 1], 1);
  EXPECT_EQ(s.histogram[512], 1);
  EXPECT_EQ(s.histogram[1024], 1);
  EXPECT_EQ(s.histogram[1536], 1);
  EXPECT_EQ(s.histogram[0], 2); // 0 and 2^-20
}

TEST(Stats, RangeDoublesAndMergesBins) {
  StatsPtr stats = makeStats();
  float first[] = {1.0f, 0.25f};
  float second[] = {3.0f}; // needs the range 4 = 1 * 2^2
  ASSERT_EQ(mprt_stats_add(stats.get(), "p", first, 2, MPRT_DTYPE_F32),
            MPRT_OK);
  ASSERT_EQ(mprt_stats_add(stats.get(), "p", second, 1, MPRT_DTYPE_F32),
            MPRT_OK);
  mprt_probe_stats s;
  ASSERT_EQ(mprt_stats_find(stats.get(), "p", &s), MPRT_OK);
  EXPECT_EQ(s.hist_max, 4);
  EXPECT_EQ(s.calls, 2);
  EXPECT_EQ(sum(s), 3);
  // 1.0 was in the last bin of [0, 1]; 4 bins merged into one: 2047 >> 2.
  EXPECT_EQ(s.histogram[MPRT_STATS_BINS / 4 - 1], 1);
  EXPECT_EQ(s.histogram[128], 1);  // 0.25: bin 512 of [0,1] -> 128
  EXPECT_EQ(s.histogram[1536], 1); // 3 in [0, 4]
}

TEST(Stats, NonFiniteValuesAreCountedApart) {
  StatsPtr stats = makeStats();
  float inf = std::numeric_limits<float>::infinity();
  float x[] = {inf, -inf, std::nanf(""), 2.0f};
  ASSERT_EQ(mprt_stats_add(stats.get(), "n", x, 4, MPRT_DTYPE_F32), MPRT_OK);
  mprt_probe_stats s;
  ASSERT_EQ(mprt_stats_find(stats.get(), "n", &s), MPRT_OK);
  EXPECT_EQ(s.nonfinite_count, 3);
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.min, 2);
  EXPECT_EQ(s.max, 2);
  EXPECT_EQ(sum(s), 1);
}

TEST(Stats, EveryDtype) {
  StatsPtr stats = makeStats();
  uint16_t f16[] = {0x3c00, 0xc000};  // 1, -2
  uint16_t bf16[] = {0x3f80, 0xc040}; // 1, -3
  double f64[] = {0.5, -0.5};
  int32_t i32[] = {7, -9};
  int64_t i64[] = {11, -1};
  uint8_t u8[] = {255, 3};
  int8_t i8[] = {-128, 127};
  struct Case {
    const char *id;
    const void *data;
    mprt_dtype dtype;
    double min, max;
  } cases[] = {{"f16", f16, MPRT_DTYPE_F16, -2, 1},
               {"bf16", bf16, MPRT_DTYPE_BF16, -3, 1},
               {"f64", f64, MPRT_DTYPE_F64, -0.5, 0.5},
               {"i32", i32, MPRT_DTYPE_I32, -9, 7},
               {"i64", i64, MPRT_DTYPE_I64, -1, 11},
               {"u8", u8, MPRT_DTYPE_U8, 3, 255},
               {"i8", i8, MPRT_DTYPE_I8, -128, 127}};
  for (const Case &c : cases) {
    ASSERT_EQ(mprt_stats_add(stats.get(), c.id, c.data, 2, c.dtype), MPRT_OK)
        << c.id;
    mprt_probe_stats s;
    ASSERT_EQ(mprt_stats_find(stats.get(), c.id, &s), MPRT_OK);
    EXPECT_EQ(s.min, c.min) << c.id;
    EXPECT_EQ(s.max, c.max) << c.id;
    EXPECT_EQ(s.dtype, c.dtype) << c.id;
  }
  EXPECT_EQ(mprt_stats_count(stats.get()), 7u);
  mprt_probe_stats first;
  ASSERT_EQ(mprt_stats_get(stats.get(), 0, &first), MPRT_OK);
  EXPECT_STREQ(first.id, "f16"); // order of first appearance
}

TEST(Stats, Errors) {
  StatsPtr stats = makeStats();
  float x[] = {1};
  EXPECT_EQ(mprt_stats_add(stats.get(), "", x, 1, MPRT_DTYPE_F32),
            MPRT_ERROR_ARGUMENT);
  EXPECT_EQ(mprt_stats_add(stats.get(), "p", nullptr, 1, MPRT_DTYPE_F32),
            MPRT_ERROR_ARGUMENT);
  EXPECT_EQ(mprt_stats_add(stats.get(), "p", x, 1, (mprt_dtype)42),
            MPRT_ERROR_DTYPE);
  ASSERT_EQ(mprt_stats_add(stats.get(), "p", x, 1, MPRT_DTYPE_F32), MPRT_OK);
  EXPECT_EQ(mprt_stats_add(stats.get(), "p", x, 1, MPRT_DTYPE_I32),
            MPRT_ERROR_DTYPE);
  EXPECT_NE(std::string(mprt_last_error()).find("probe 'p' saw f32"),
            std::string::npos);
  mprt_probe_stats s;
  EXPECT_EQ(mprt_stats_find(stats.get(), "absent", &s), MPRT_ERROR_NOT_FOUND);
  EXPECT_EQ(mprt_stats_get(stats.get(), 5, &s), MPRT_ERROR_ARGUMENT);
  EXPECT_EQ(mprt_stats_write_json(stats.get(), "/nonexistent-dir/x.json"),
            MPRT_ERROR_IO);
}

TEST(Stats, ObserverFeedsTheCollectorAndKeepsTheFirstError) {
  StatsPtr stats = makeStats();
  mprt_set_observer(mprt_stats_observer, stats.get());
  float x[] = {1, -5};
  int32_t i[] = {1};
  mprt_observe("h", x, 2, MPRT_DTYPE_F32);
  mprt_observe("h", x, 2, MPRT_DTYPE_F32);
  mprt_observe("h", i, 1, MPRT_DTYPE_I32); // dtype change: an error
  mprt_set_observer(nullptr, nullptr);
  mprt_probe_stats s;
  ASSERT_EQ(mprt_stats_find(stats.get(), "h", &s), MPRT_OK);
  EXPECT_EQ(s.calls, 2);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.min, -5);
  ASSERT_NE(mprt_stats_error(stats.get()), nullptr);
  EXPECT_NE(std::string(mprt_stats_error(stats.get())).find("probe 'h'"),
            std::string::npos);
}

TEST(Stats, WritesTheCalibrationSchema) {
  TempDir dir;
  ASSERT_TRUE(dir.valid());
  StatsPtr stats = makeStats();
  float x[] = {-1.5f, 0, 2.5f};
  ASSERT_EQ(mprt_stats_add(stats.get(), "fc1\"in", x, 3, MPRT_DTYPE_F32),
            MPRT_OK);
  std::string path = dir.file("stats.json");
  ASSERT_EQ(mprt_stats_write_json(stats.get(), path.c_str()), MPRT_OK)
      << mprt_last_error();
  std::string text = mprt_test::readFile(path);
  EXPECT_NE(text.find("\"version\": 1"), std::string::npos);
  EXPECT_NE(text.find("\"fc1\\\"in\": {\"dtype\": \"f32\", \"min\": "
                      "-1.5, \"max\": 2.5, \"abs_max\": 2.5, \"count\": 3, "
                      "\"zero_count\": 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"histogram\": {\"bins\": 2048, \"max\": 2.5"),
            std::string::npos);
  // 2048 counts: 2047 separators.
  size_t start = text.find("\"counts\": [");
  size_t end = text.find(']', start);
  ASSERT_NE(start, std::string::npos);
  EXPECT_EQ(std::count(text.begin() + start, text.begin() + end, ','), 2047);
  // No temporary file is left behind.
  EXPECT_TRUE(mprt_test::readFile(path + ".tmp").empty());
}

} // namespace
