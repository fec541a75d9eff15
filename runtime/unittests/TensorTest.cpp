//===- TensorTest.cpp - Tensor creation, accessors, copies and errors -----===//

#include "TestUtil.h"

using namespace mprt_test;

namespace {

TEST(MprtTensor, DtypeNamesAndSizes) {
  const char *names[] = {"f32", "f16", "bf16", "f64", "i32", "i64", "u8", "i8"};
  size_t sizes[] = {4, 2, 2, 8, 4, 8, 1, 1};
  for (int i = 0; i < MPRT_DTYPE_COUNT; ++i) {
    auto dtype = static_cast<mprt_dtype>(i);
    EXPECT_STREQ(mprt_dtype_name(dtype), names[i]);
    EXPECT_EQ(mprt_dtype_size(dtype), sizes[i]);
  }
  EXPECT_EQ(mprt_dtype_name(static_cast<mprt_dtype>(MPRT_DTYPE_COUNT)),
            nullptr);
  EXPECT_EQ(mprt_dtype_size(static_cast<mprt_dtype>(-1)), 0u);
}

TEST(MprtTensor, StatusNames) {
  EXPECT_STREQ(mprt_status_name(MPRT_OK), "OK");
  EXPECT_STREQ(mprt_status_name(MPRT_ERROR_FORMAT), "ERROR_FORMAT");
  EXPECT_STREQ(mprt_status_name(MPRT_ERROR_OUT_OF_MEMORY),
               "ERROR_OUT_OF_MEMORY");
  EXPECT_STREQ(mprt_status_name(static_cast<mprt_status>(99)), "UNKNOWN");
}

TEST(MprtTensor, CreateIsZeroFilledWithAccessors) {
  const int64_t shape[] = {2, 3, 5};
  for (mprt_dtype dtype : kAllDtypes) {
    mprt_tensor *raw = nullptr;
    ASSERT_MPRT_OK(mprt_tensor_create(dtype, 3, shape, &raw));
    TensorPtr tensor(raw);
    EXPECT_EQ(mprt_tensor_dtype(raw), dtype);
    ASSERT_EQ(mprt_tensor_rank(raw), 3u);
    EXPECT_EQ(mprt_tensor_shape(raw)[0], 2);
    EXPECT_EQ(mprt_tensor_shape(raw)[1], 3);
    EXPECT_EQ(mprt_tensor_shape(raw)[2], 5);
    EXPECT_EQ(mprt_tensor_num_elements(raw), 30u);
    EXPECT_EQ(mprt_tensor_byte_size(raw), 30 * mprt_dtype_size(dtype));
    const auto *bytes = static_cast<const uint8_t *>(mprt_tensor_data(raw));
    ASSERT_NE(bytes, nullptr);
    for (size_t i = 0; i < mprt_tensor_byte_size(raw); ++i)
      ASSERT_EQ(bytes[i], 0)
          << "byte " << i << " of " << mprt_dtype_name(dtype);
  }
}

TEST(MprtTensor, ScalarAndEmptyTensors) {
  mprt_tensor *scalar = nullptr;
  ASSERT_MPRT_OK(mprt_tensor_create(MPRT_DTYPE_F64, 0, nullptr, &scalar));
  TensorPtr scalarOwner(scalar);
  EXPECT_EQ(mprt_tensor_rank(scalar), 0u);
  EXPECT_EQ(mprt_tensor_num_elements(scalar), 1u);
  EXPECT_EQ(mprt_tensor_byte_size(scalar), 8u);

  const int64_t shape[] = {4, 0, 7};
  mprt_tensor *empty = nullptr;
  ASSERT_MPRT_OK(mprt_tensor_create(MPRT_DTYPE_I32, 3, shape, &empty));
  TensorPtr emptyOwner(empty);
  EXPECT_EQ(mprt_tensor_num_elements(empty), 0u);
  EXPECT_EQ(mprt_tensor_byte_size(empty), 0u);
  EXPECT_NE(mprt_tensor_data(empty), nullptr);
}

TEST(MprtTensor, CopyIsDeep) {
  TensorPtr original = patternTensor(MPRT_DTYPE_I64, {3, 4});
  mprt_tensor *copy = nullptr;
  ASSERT_MPRT_OK(mprt_tensor_copy(original.get(), &copy));
  TensorPtr copyOwner(copy);
  EXPECT_TRUE(sameTensor(original.get(), copy));
  EXPECT_NE(mprt_tensor_data(copy), mprt_tensor_data(original.get()));
  static_cast<uint8_t *>(mprt_tensor_data(original.get()))[0] ^= 0xff;
  EXPECT_FALSE(sameTensor(original.get(), copy));
}

TEST(MprtTensor, InvalidDtype) {
  mprt_tensor *tensor = reinterpret_cast<mprt_tensor *>(&tensor);
  EXPECT_MPRT_ERROR(
      mprt_tensor_create(static_cast<mprt_dtype>(42), 0, nullptr, &tensor),
      MPRT_ERROR_DTYPE, "invalid dtype value 42");
  EXPECT_EQ(tensor, nullptr);
}

TEST(MprtTensor, InvalidShapes) {
  mprt_tensor *tensor = nullptr;
  const int64_t negative[] = {3, -1};
  EXPECT_MPRT_ERROR(mprt_tensor_create(MPRT_DTYPE_F32, 2, negative, &tensor),
                    MPRT_ERROR_SHAPE, "dimension 1 is negative");
  const int64_t huge[] = {INT64_MAX / 2, 3};
  EXPECT_MPRT_ERROR(mprt_tensor_create(MPRT_DTYPE_U8, 2, huge, &tensor),
                    MPRT_ERROR_SHAPE, "overflows");
  // Element count fits, byte count does not.
  const int64_t bytesOverflow[] = {INT64_MAX / 4};
  EXPECT_MPRT_ERROR(
      mprt_tensor_create(MPRT_DTYPE_F64, 1, bytesOverflow, &tensor),
      MPRT_ERROR_SHAPE, "overflows");
  std::vector<int64_t> tooMany(MPRT_MAX_RANK + 1, 1);
  EXPECT_MPRT_ERROR(mprt_tensor_create(MPRT_DTYPE_F32, tooMany.size(),
                                       tooMany.data(), &tensor),
                    MPRT_ERROR_SHAPE, "exceeds the maximum of 64");
  EXPECT_EQ(tensor, nullptr);
}

TEST(MprtTensor, InvalidArguments) {
  mprt_tensor *tensor = nullptr;
  EXPECT_MPRT_ERROR(mprt_tensor_create(MPRT_DTYPE_F32, 2, nullptr, &tensor),
                    MPRT_ERROR_ARGUMENT, "shape is NULL");
  EXPECT_MPRT_ERROR(mprt_tensor_create(MPRT_DTYPE_F32, 0, nullptr, nullptr),
                    MPRT_ERROR_ARGUMENT, "output pointer is NULL");
  EXPECT_MPRT_ERROR(mprt_tensor_copy(nullptr, &tensor), MPRT_ERROR_ARGUMENT,
                    "source is NULL");
  mprt_tensor_free(nullptr); // Accepted, like free(NULL).
}

TEST(MprtTensor, HugeAllocationFailsCleanly) {
  // Valid shape, but no machine has 2^62 bytes.
  const int64_t shape[] = {int64_t(1) << 62};
  mprt_tensor *tensor = nullptr;
  EXPECT_MPRT_ERROR(mprt_tensor_create(MPRT_DTYPE_U8, 1, shape, &tensor),
                    MPRT_ERROR_OUT_OF_MEMORY, "out of memory");
  EXPECT_EQ(tensor, nullptr);
}

TEST(MprtTensor, SuccessClearsLastError) {
  mprt_tensor *tensor = nullptr;
  EXPECT_NE(mprt_tensor_create(MPRT_DTYPE_F32, 2, nullptr, &tensor), MPRT_OK);
  EXPECT_STRNE(mprt_last_error(), "");
  ASSERT_MPRT_OK(mprt_tensor_create(MPRT_DTYPE_F32, 0, nullptr, &tensor));
  mprt_tensor_free(tensor);
}

} // namespace
