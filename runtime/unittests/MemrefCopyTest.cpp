//===- MemrefCopyTest.cpp - compiled code's strided copies ----------------===//
//
// mprt_memref_copy stands in for MLIR's memrefCopy: the same descriptors,
// every element of a strided source into a strided destination.
//
//===----------------------------------------------------------------------===//

#include "mprt/mprt.h"

#include <cstdint>
#include <gtest/gtest.h>
#include <vector>

namespace {

/// A ranked memref descriptor as lowered code lays it out.
template <int Rank> struct Descriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};

TEST(MprtMemrefCopy, StridedToStrided2D) {
  // Source: a 3x4 view at offset 5 of a 6x8 buffer; destination: a 3x4
  // view with column stride 2 (every other element) at offset 1.
  std::vector<float> src(48), dst(40, -1.0f);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = float(i);
  Descriptor<2> s{src.data(), src.data(), 5, {3, 4}, {8, 1}};
  Descriptor<2> d{dst.data(), dst.data(), 1, {3, 4}, {10, 2}};
  mprt_unranked_memref us{2, &s}, ud{2, &d};
  mprt_memref_copy(sizeof(float), &us, &ud);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(dst[1 + i * 10 + j * 2], src[5 + i * 8 + j]) << i << "," << j;
  // Nothing outside the view was written.
  int untouched = 0;
  for (float v : dst)
    untouched += v == -1.0f;
  EXPECT_EQ(untouched, 40 - 12);
}

TEST(MprtMemrefCopy, Rank3ContiguousAndTransposed) {
  // A 2x3x4 int16 tensor into its (transposed) view with strides {1, 2, 6}.
  std::vector<int16_t> src(24), dst(24, 0);
  for (int i = 0; i < 24; ++i)
    src[i] = int16_t(100 + i);
  Descriptor<3> s{src.data(), src.data(), 0, {2, 3, 4}, {12, 4, 1}};
  Descriptor<3> d{dst.data(), dst.data(), 0, {2, 3, 4}, {1, 2, 6}};
  mprt_unranked_memref us{3, &s}, ud{3, &d};
  mprt_memref_copy(sizeof(int16_t), &us, &ud);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c)
        EXPECT_EQ(dst[a + 2 * b + 6 * c], src[12 * a + 4 * b + c]);
}

TEST(MprtMemrefCopy, RankZeroAndEmpty) {
  double x = 2.5, y = 0;
  struct {
    void *allocated, *aligned;
    int64_t offset;
  } s{&x, &x, 0}, d{&y, &y, 0};
  mprt_unranked_memref us{0, &s}, ud{0, &d};
  mprt_memref_copy(sizeof(double), &us, &ud);
  EXPECT_EQ(y, 2.5);
  // A size-0 dimension copies nothing (and reads nothing).
  float a = 1, b = 7;
  Descriptor<2> es{&a, &a, 0, {0, 3}, {3, 1}}, ed{&b, &b, 0, {0, 3}, {3, 1}};
  mprt_unranked_memref ues{2, &es}, ued{2, &ed};
  mprt_memref_copy(sizeof(float), &ues, &ued);
  EXPECT_EQ(b, 7);
}

} // namespace
