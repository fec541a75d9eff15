//===- NpyTest.cpp - .npy reading, writing and every rejection ------------===//

#include "TestUtil.h"

using namespace mprt_test;

namespace {

class MprtNpy : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_TRUE(dir.valid()); }

  /// Writes `bytes` to a file and reads it with mprt_npy_read.
  mprt_status readBytes(const std::string &bytes) {
    std::string path = dir.file("input.npy");
    writeFile(path, bytes);
    mprt_tensor *tensor = reinterpret_cast<mprt_tensor *>(this);
    mprt_status status = mprt_npy_read(path.c_str(), &tensor);
    if (status == MPRT_OK)
      mprt_tensor_free(tensor);
    else
      EXPECT_EQ(tensor, nullptr) << "the output must be NULL on failure";
    return status;
  }

  TempDir dir;
};

std::string f32Data(size_t count) { return std::string(count * 4, '\x01'); }

TEST_F(MprtNpy, RoundTripEveryDtype) {
  const std::vector<std::vector<int64_t>> shapes = {
      {}, {1}, {7}, {2, 3}, {2, 3, 4}, {3, 0, 2}, {1, 1, 1, 1, 5}};
  for (mprt_dtype dtype : kAllDtypes) {
    if (dtype == MPRT_DTYPE_BF16)
      continue; // No NumPy descr; covered by BF16IsRejected.
    for (const std::vector<int64_t> &shape : shapes) {
      SCOPED_TRACE(std::string(mprt_dtype_name(dtype)) + " rank " +
                   std::to_string(shape.size()));
      TensorPtr original = patternTensor(dtype, shape, shape.size());
      std::string path = dir.file("t.npy");
      ASSERT_MPRT_OK(mprt_npy_write(path.c_str(), original.get()));
      mprt_tensor *raw = nullptr;
      ASSERT_MPRT_OK(mprt_npy_read(path.c_str(), &raw));
      TensorPtr loaded(raw);
      EXPECT_TRUE(sameTensor(original.get(), loaded.get()));

      std::string bytes = readFile(path);
      ASSERT_MPRT_OK(mprt_npy_read_buffer(bytes.data(), bytes.size(), &raw));
      TensorPtr fromBuffer(raw);
      EXPECT_TRUE(sameTensor(original.get(), fromBuffer.get()));
    }
  }
}

TEST_F(MprtNpy, WritesTheHeaderNumPyWrites) {
  TensorPtr tensor = patternTensor(MPRT_DTYPE_F32, {2, 3});
  std::string path = dir.file("t.npy");
  ASSERT_MPRT_OK(mprt_npy_write(path.c_str(), tensor.get()));
  std::string bytes = readFile(path);
  std::string expected = npyImage(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
      std::string(static_cast<const char *>(mprt_tensor_data(tensor.get())),
                  24));
  EXPECT_EQ(bytes, expected);
  EXPECT_EQ((bytes.size() - 24) % 64, 0u) << "data must be 64-byte aligned";

  TensorPtr vector = patternTensor(MPRT_DTYPE_U8, {5});
  ASSERT_MPRT_OK(mprt_npy_write(path.c_str(), vector.get()));
  EXPECT_NE(readFile(path).find("'descr': '|u1'"), std::string::npos);
  EXPECT_NE(readFile(path).find("'shape': (5,)"), std::string::npos);
  TensorPtr scalar = patternTensor(MPRT_DTYPE_I8, {});
  ASSERT_MPRT_OK(mprt_npy_write(path.c_str(), scalar.get()));
  EXPECT_NE(readFile(path).find("'shape': ()"), std::string::npos);
}

TEST_F(MprtNpy, ReadsHeaderVariants) {
  struct Case {
    std::string dict;
    int major;
  } cases[] = {
      {npyDict("<f4", "(2, 3)"), 1},
      {npyDict("<f4", "(2, 3)"), 2},
      {npyDict("<f4", "(2, 3)"), 3},
      // Python 2 long integers, double quotes, no trailing comma, spacing.
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", 1},
      {"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}", 1},
      {"  { 'shape' : ( 2 , 3 , ) ,'fortran_order':False,'descr':'<f4'}  ", 1},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.dict);
    std::string bytes = npyImage(c.dict, f32Data(6), c.major);
    mprt_tensor *raw = nullptr;
    ASSERT_MPRT_OK(mprt_npy_read_buffer(bytes.data(), bytes.size(), &raw));
    TensorPtr tensor(raw);
    EXPECT_EQ(mprt_tensor_dtype(raw), MPRT_DTYPE_F32);
    ASSERT_EQ(mprt_tensor_rank(raw), 2u);
    EXPECT_EQ(mprt_tensor_shape(raw)[1], 3);
  }
}

TEST_F(MprtNpy, BF16IsRejected) {
  TensorPtr tensor = patternTensor(MPRT_DTYPE_BF16, {4});
  std::string path = dir.file("bf16.npy");
  EXPECT_MPRT_ERROR(mprt_npy_write(path.c_str(), tensor.get()),
                    MPRT_ERROR_DTYPE, "bf16 tensors cannot be stored in .npy");
  EXPECT_TRUE(errorMentions("checkpoint"));
  EXPECT_FALSE(fileExists(path)) << "nothing is written for a bad dtype";
}

TEST_F(MprtNpy, MissingFile) {
  std::string path = dir.file("does-not-exist.npy");
  mprt_tensor *tensor = nullptr;
  EXPECT_MPRT_ERROR(mprt_npy_read(path.c_str(), &tensor), MPRT_ERROR_IO,
                    "No such file or directory");
  EXPECT_TRUE(errorMentions(path.c_str()));
}

TEST_F(MprtNpy, DirectoryIsNotAFile) {
  mprt_tensor *tensor = nullptr;
  EXPECT_MPRT_ERROR(mprt_npy_read(dir.path.c_str(), &tensor), MPRT_ERROR_IO,
                    "not a regular file");
}

TEST_F(MprtNpy, EmptyFile) {
  EXPECT_MPRT_ERROR(readBytes(""), MPRT_ERROR_FORMAT, "empty file");
  EXPECT_TRUE(errorMentions("input.npy"));
}

TEST_F(MprtNpy, BadMagic) {
  std::string bytes = npyImage(npyDict("<f4", "(2,)"), f32Data(2));
  bytes[1] = 'n';
  EXPECT_MPRT_ERROR(readBytes(bytes), MPRT_ERROR_FORMAT, "bad magic");
  EXPECT_MPRT_ERROR(readBytes("PK\x03\x04 this is a zip, not npy"),
                    MPRT_ERROR_FORMAT, "bad magic");
}

TEST_F(MprtNpy, UnsupportedVersion) {
  std::string bytes = npyImage(npyDict("<f4", "(2,)"), f32Data(2));
  bytes[6] = 4;
  EXPECT_MPRT_ERROR(readBytes(bytes), MPRT_ERROR_FORMAT, "version 4.0");
}

TEST_F(MprtNpy, TruncatedHeader) {
  std::string bytes = npyImage(npyDict("<f4", "(2,)"), f32Data(2));
  EXPECT_MPRT_ERROR(readBytes(bytes.substr(0, 5)), MPRT_ERROR_FORMAT,
                    "too short for a .npy magic");
  EXPECT_MPRT_ERROR(readBytes(bytes.substr(0, 9)), MPRT_ERROR_FORMAT,
                    "header length is cut off");
  EXPECT_MPRT_ERROR(readBytes(bytes.substr(0, 40)), MPRT_ERROR_FORMAT,
                    "the header is 118 bytes but only 30 bytes follow");
}

TEST_F(MprtNpy, HeaderLongerThanFile) {
  std::string bytes = npyImage(npyDict("<f4", "(2,)"), f32Data(2), 2);
  bytes[8] = bytes[9] = bytes[10] = '\x7f'; // Header length ~2 GiB.
  EXPECT_MPRT_ERROR(readBytes(bytes), MPRT_ERROR_FORMAT,
                    "truncated: the header is");
}

TEST_F(MprtNpy, TruncatedData) {
  std::string bytes = npyImage(npyDict("<f4", "(2, 3)"), f32Data(6));
  EXPECT_MPRT_ERROR(readBytes(bytes.substr(0, bytes.size() - 1)),
                    MPRT_ERROR_FORMAT,
                    "truncated data: the shape needs 24 bytes but only 23");
}

TEST_F(MprtNpy, TrailingData) {
  std::string bytes = npyImage(npyDict("<f4", "(2, 3)"), f32Data(6));
  EXPECT_MPRT_ERROR(readBytes(bytes + "xyz"), MPRT_ERROR_FORMAT,
                    "3 unexpected bytes after the 24 bytes of data");
}

TEST_F(MprtNpy, EveryTruncationFailsCleanly) {
  std::string bytes = npyImage(npyDict("<i8", "(3, 2)"), std::string(48, 'x'));
  for (size_t length = 0; length < bytes.size(); ++length) {
    mprt_tensor *tensor = nullptr;
    mprt_status status = mprt_npy_read_buffer(bytes.data(), length, &tensor);
    EXPECT_EQ(status, MPRT_ERROR_FORMAT) << "length " << length;
    EXPECT_EQ(tensor, nullptr);
    EXPECT_STRNE(mprt_last_error(), "");
  }
}

TEST_F(MprtNpy, FortranOrder) {
  std::string dict =
      "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
  EXPECT_MPRT_ERROR(readBytes(npyImage(dict, f32Data(6))), MPRT_ERROR_FORMAT,
                    "fortran_order=True is not supported");
}

TEST_F(MprtNpy, BigEndian) {
  EXPECT_MPRT_ERROR(readBytes(npyImage(npyDict(">f4", "(2,)"), f32Data(2))),
                    MPRT_ERROR_DTYPE, "big-endian descr '>f4'");
  EXPECT_MPRT_ERROR(
      readBytes(npyImage(npyDict(">i8", "(1,)"), std::string(8, '\0'))),
      MPRT_ERROR_DTYPE, "big-endian");
}

TEST_F(MprtNpy, UnsupportedDtypes) {
  for (const char *descr : {"<c8", "|b1", "<u2", "<u4", "<U5", "|O", "|S3",
                            "<f16", "=f4", "f4", ""}) {
    SCOPED_TRACE(descr);
    std::string bytes = npyImage(npyDict(descr, "(1,)"), f32Data(1));
    EXPECT_MPRT_ERROR(readBytes(bytes), MPRT_ERROR_DTYPE,
                      "unsupported dtype descr");
    EXPECT_TRUE(errorMentions((std::string("'") + descr + "'").c_str()));
  }
  std::string structured = "{'descr': [('x', '<f4')], 'fortran_order': "
                           "False, 'shape': (1,), }";
  EXPECT_MPRT_ERROR(readBytes(npyImage(structured, f32Data(1))),
                    MPRT_ERROR_DTYPE, "structured dtypes");
}

TEST_F(MprtNpy, SingleByteTypesAcceptAnyByteOrder) {
  for (const char *descr : {"|u1", "<u1", "|i1", "<i1"}) {
    SCOPED_TRACE(descr);
    std::string bytes = npyImage(npyDict(descr, "(3,)"), "abc");
    EXPECT_EQ(readBytes(bytes), MPRT_OK) << mprt_last_error();
  }
}

TEST_F(MprtNpy, ShapeOverflow) {
  // Each dimension fits int64 but the product does not.
  EXPECT_MPRT_ERROR(
      readBytes(npyImage(npyDict("<f4", "(4294967296, 4294967296)"), "")),
      MPRT_ERROR_SHAPE, "overflows");
  // Elements fit, bytes do not.
  EXPECT_MPRT_ERROR(
      readBytes(npyImage(npyDict("<f8", "(2305843009213693952,)"), "")),
      MPRT_ERROR_SHAPE, "overflows");
  EXPECT_MPRT_ERROR(
      readBytes(npyImage(npyDict("<f4", "(99999999999999999999,)"), "")),
      MPRT_ERROR_SHAPE, "does not fit in 64 bits");
}

TEST_F(MprtNpy, HugeShapeWithSmallFileIsTruncationNotAllocation) {
  // 1 TiB of declared data must be rejected before anything is allocated.
  EXPECT_MPRT_ERROR(
      readBytes(npyImage(npyDict("<f4", "(274877906944,)"), f32Data(2))),
      MPRT_ERROR_FORMAT, "truncated data");
}

TEST_F(MprtNpy, InvalidShapes) {
  EXPECT_MPRT_ERROR(readBytes(npyImage(npyDict("<f4", "(2, -3)"), "")),
                    MPRT_ERROR_SHAPE, "negative dimension");
  std::string deep = "(";
  for (int i = 0; i <= MPRT_MAX_RANK; ++i)
    deep += "1, ";
  deep += ")";
  EXPECT_MPRT_ERROR(readBytes(npyImage(npyDict("<f4", deep), f32Data(1))),
                    MPRT_ERROR_SHAPE, "more than 64 dimensions");
}

TEST_F(MprtNpy, MalformedHeaders) {
  struct Case {
    std::string dict;
    const char *cause;
  } cases[] = {
      {"", "does not start with '{'"},
      {"['descr', '<f4']", "does not start with '{'"},
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'fortran_order': False, 'shape': (1,)}", "missing key 'descr'"},
      {"{'descr': '<f4', 'shape': (1,)}", "missing key 'fortran_order'"},
      {npyDict("<f4", "(1,)") + "x", "after the closing '}'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
       "'shape': (1,)}",
       "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), "
       "'extra': 1}",
       "unexpected key 'extra'"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}",
       "must be True or False"},
      {"{'descr': <f4, 'fortran_order': False, 'shape': (1,)}",
       "expected a descr string"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}",
       "expected ',' or '}' after a value"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}",
       "expected ':' after a key"},
      {"{descr: '<f4', 'fortran_order': False, 'shape': (1,)}",
       "expected a quoted key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1)}",
       "shape must be a tuple, e.g. (3,)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1]}",
       "shape must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1.5,)}",
       "expected ',' or ')' in shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (a,)}",
       "tuple of integers"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}",
       "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)",
       "expected ',' or '}'"},
      {"{'descr': '<f\\4', 'fortran_order': False, 'shape': (1,)}",
       "unsupported character"},
      {"{'descr': '<f4", "unterminated string"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.dict);
    EXPECT_MPRT_ERROR(readBytes(npyImage(c.dict, f32Data(1))),
                      MPRT_ERROR_FORMAT, c.cause);
    EXPECT_TRUE(errorMentions("malformed header"));
  }
}

TEST_F(MprtNpy, HeaderSizeLimit) {
  // A header over 1 MiB is refused even if the file really is that long.
  std::string dict = npyDict("<f4", "(1,)");
  dict.append(2 << 20, ' ');
  EXPECT_MPRT_ERROR(readBytes(npyImage(dict, f32Data(1), 2)), MPRT_ERROR_FORMAT,
                    "over the 1048576-byte limit");
}

TEST_F(MprtNpy, NullArguments) {
  mprt_tensor *tensor = nullptr;
  EXPECT_MPRT_ERROR(mprt_npy_read(nullptr, &tensor), MPRT_ERROR_ARGUMENT,
                    "path is NULL");
  EXPECT_MPRT_ERROR(mprt_npy_read_buffer(nullptr, 4, &tensor),
                    MPRT_ERROR_ARGUMENT, "data is NULL");
  EXPECT_MPRT_ERROR(mprt_npy_write(dir.file("x.npy").c_str(), nullptr),
                    MPRT_ERROR_ARGUMENT, "tensor is NULL");
}

TEST_F(MprtNpy, WriteToMissingDirectory) {
  TensorPtr tensor = patternTensor(MPRT_DTYPE_F32, {2});
  std::string path = dir.file("no/such/dir/t.npy");
  EXPECT_MPRT_ERROR(mprt_npy_write(path.c_str(), tensor.get()), MPRT_ERROR_IO,
                    "cannot create");
  EXPECT_TRUE(errorMentions(path.c_str()));
}

} // namespace
