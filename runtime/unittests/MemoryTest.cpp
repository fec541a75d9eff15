//===- MemoryTest.cpp - the counted heap compiled code allocates from -----===//

#include "mprt/mprt.h"

#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>

namespace {

mprt_memory stats() {
  mprt_memory m;
  mprt_memory_stats(&m);
  return m;
}

TEST(MprtMemory, CountsCurrentPeakAndTotal) {
  mprt_memory_reset_peak();
  mprt_memory before = stats();
  void *a = mprt_counted_malloc(1000);
  void *b = mprt_counted_malloc(24);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // malloc's alignment is kept, and the blocks are usable.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 16, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 16, 0u);
  std::memset(a, 0xab, 1000);
  std::memset(b, 0xcd, 24);
  EXPECT_EQ(stats().current_bytes - before.current_bytes, 1024);
  mprt_counted_free(a);
  EXPECT_EQ(stats().current_bytes - before.current_bytes, 24);
  EXPECT_EQ(stats().peak_bytes - before.current_bytes, 1024);
  EXPECT_EQ(stats().allocated_bytes - before.allocated_bytes, 1024);
  mprt_counted_free(b);
  EXPECT_EQ(stats().current_bytes, before.current_bytes);

  // A reset starts the peak from what is held now.
  mprt_memory_reset_peak();
  EXPECT_EQ(stats().peak_bytes, before.current_bytes);
  void *c = mprt_counted_malloc(10);
  EXPECT_EQ(stats().peak_bytes - before.current_bytes, 10);
  mprt_counted_free(c);
}

TEST(MprtMemory, NullAndOverflowAreSafe) {
  mprt_memory before = stats();
  mprt_counted_free(nullptr);
  EXPECT_EQ(mprt_counted_malloc(SIZE_MAX), nullptr);
  EXPECT_EQ(stats().current_bytes, before.current_bytes);
  mprt_memory_stats(nullptr); // ignored
}

} // namespace
