//===- MemoryTest.cpp - the counted heap compiled code allocates from -----===//

#include "mprt/mprt.h"

#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>

#if defined(__SANITIZE_ADDRESS__)
#define MPRT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MPRT_TEST_ASAN 1
#endif
#endif

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

TEST(MprtMemory, BigBlocksAreReusedAndTrimmed) {
  mprt_memory_trim();
  mprt_memory before = stats();
  constexpr size_t big = 1 << 20;
  auto *first = static_cast<unsigned char *>(mprt_counted_malloc(big));
  ASSERT_NE(first, nullptr);
  std::memset(first, 0x5a, big);
  mprt_counted_free(first);
  EXPECT_EQ(stats().current_bytes, before.current_bytes); // kept, not held

  // The same size gets the kept block back; another size does not.
  void *other = mprt_counted_malloc(big + 16);
  auto *again = static_cast<unsigned char *>(mprt_counted_malloc(big));
#ifdef MPRT_TEST_ASAN
  (void)again;
#else
  EXPECT_EQ(again, first);
  EXPECT_NE(other, static_cast<void *>(first));
  EXPECT_EQ(stats().current_bytes - before.current_bytes,
            static_cast<int64_t>(2 * big + 16));
#endif
  mprt_counted_free(again);
  mprt_counted_free(other);

  // Small blocks go straight back to malloc; trimming returns the kept ones.
  mprt_counted_free(mprt_counted_malloc(100));
#ifndef MPRT_TEST_ASAN
  EXPECT_EQ(mprt_memory_trim(), static_cast<int64_t>(2 * big + 16 + 32));
#endif
  EXPECT_EQ(mprt_memory_trim(), 0);
}

TEST(MprtMemory, NullAndOverflowAreSafe) {
  mprt_memory before = stats();
  mprt_counted_free(nullptr);
  EXPECT_EQ(mprt_counted_malloc(SIZE_MAX), nullptr);
  EXPECT_EQ(stats().current_bytes, before.current_bytes);
  mprt_memory_stats(nullptr); // ignored
}

} // namespace
