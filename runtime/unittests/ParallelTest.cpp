//===- ParallelTest.cpp - mprt_parallel_for's shares ----------------------===//
//
// Compiled parallel loops rely on every iteration running exactly once, in
// contiguous shares, whatever the thread count; and on a loop inside a
// parallel region not starting threads of its own.

#include "gomp.h"
#include "mprt/mprt.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <gtest/gtest.h>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace {

struct Record {
  std::mutex lock;
  std::vector<std::pair<int64_t, int64_t>> shares;
  std::vector<std::thread::id> threads;
  std::vector<std::atomic<int>> hits;
  explicit Record(int64_t n) : hits(n) {}
};

void recordShare(int64_t begin, int64_t end, void *context) {
  auto *record = static_cast<Record *>(context);
  for (int64_t i = begin; i < end; ++i)
    record->hits[i].fetch_add(1);
  std::lock_guard<std::mutex> guard(record->lock);
  record->shares.emplace_back(begin, end);
  record->threads.push_back(std::this_thread::get_id());
}

/// Every iteration once; shares contiguous, at most one apart in size, at
/// most `threads` of them.
void expectEvenCover(Record &record, int64_t n, int threads) {
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(record.hits[i].load(), 1) << "iteration " << i;
  ASSERT_LE(record.shares.size(), static_cast<size_t>(threads));
  int64_t smallest = n, largest = 0;
  for (auto [begin, end] : record.shares) {
    ASSERT_LT(begin, end);
    smallest = std::min(smallest, end - begin);
    largest = std::max(largest, end - begin);
  }
  if (n > 0)
    EXPECT_LE(largest - smallest, 1);
}

TEST(MprtParallelFor, CoversEveryIterationOnceInEvenShares) {
  omp_set_num_threads(4);
  for (int64_t n : {1, 2, 3, 4, 5, 7, 1000, 100003}) {
    Record record(n);
    mprt_parallel_for(n, recordShare, &record);
    expectEvenCover(record, n, 4);
    EXPECT_EQ(record.shares.size(), static_cast<size_t>(std::min<int64_t>(n, 4)))
        << "n = " << n;
  }
}

TEST(MprtParallelFor, NothingToDo) {
  Record record(0);
  mprt_parallel_for(0, recordShare, &record);
  mprt_parallel_for(-5, recordShare, &record);
  EXPECT_TRUE(record.shares.empty());
}

TEST(MprtParallelFor, OneThreadRunsOneShareOnTheCaller) {
  omp_set_num_threads(1);
  Record record(1000);
  mprt_parallel_for(1000, recordShare, &record);
  ASSERT_EQ(record.shares.size(), 1u);
  EXPECT_EQ(record.shares[0].first, 0);
  EXPECT_EQ(record.shares[0].second, 1000);
  EXPECT_EQ(record.threads[0], std::this_thread::get_id());
  omp_set_num_threads(4);
}

/// One thread of a parallel region: a loop of its own.
void loopInRegion(void *data) {
  auto *records = static_cast<std::vector<Record *> *>(data);
  auto *record = new Record(500);
  mprt_parallel_for(500, recordShare, record);
  (*records)[omp_get_thread_num()] = record;
}

TEST(MprtParallelFor, InsideAParallelRegionRunsSerially) {
  std::vector<Record *> records(2);
  GOMP_parallel(loopInRegion, &records, 2, 0);
  for (Record *record : records) {
    ASSERT_NE(record, nullptr);
    ASSERT_EQ(record->shares.size(), 1u);
    expectEvenCover(*record, 500, 1);
    delete record;
  }
}

} // namespace

namespace {

// Another library in the process (PyTorch) sets libgomp to one thread; a
// compiled step still runs on mp's count, and leaves libgomp as it found it.
TEST(MprtThreads, StepsRunOnMpsCountWhateverLibgompWasSetTo) {
  omp_set_num_threads(1);
  mprt_set_threads(3);
  EXPECT_EQ(mprt_threads(), 3);
  int32_t previous = mprt_threads_enter();
  EXPECT_EQ(previous, 1);
  EXPECT_EQ(omp_get_max_threads(), 3);
  Record record(3000);
  mprt_parallel_for(3000, recordShare, &record);
  expectEvenCover(record, 3000, 3);
  EXPECT_EQ(record.shares.size(), 3u);
  mprt_threads_leave(previous);
  EXPECT_EQ(omp_get_max_threads(), 1);
  mprt_set_threads(0); // at least one
  EXPECT_EQ(mprt_threads(), 1);
}

} // namespace
