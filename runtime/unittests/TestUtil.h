//===- TestUtil.h - Helpers shared by the libmprt unit tests ----*- C++ -*-===//
//
// Temporary directories, file I/O, tensors with recognizable contents, and
// builders for hand-made .npy and zip images (independent of the library's
// own writer, so round trips do not just test a writer against itself).
//
//===----------------------------------------------------------------------===//

#ifndef MPRT_UNITTESTS_TESTUTIL_H
#define MPRT_UNITTESTS_TESTUTIL_H

#include "mprt/mprt.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <ftw.h>
#include <memory>
#include <sstream>
#include <string>
#include <vector>
#include <zlib.h>

namespace mprt_test {

struct TensorDeleter {
  void operator()(mprt_tensor *tensor) const { mprt_tensor_free(tensor); }
};
using TensorPtr = std::unique_ptr<mprt_tensor, TensorDeleter>;

struct NpzDeleter {
  void operator()(mprt_npz *npz) const { mprt_npz_close(npz); }
};
using NpzPtr = std::unique_ptr<mprt_npz, NpzDeleter>;

struct CheckpointDeleter {
  void operator()(mprt_checkpoint *c) const { mprt_checkpoint_free(c); }
};
using CheckpointPtr = std::unique_ptr<mprt_checkpoint, CheckpointDeleter>;

/// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
public:
  TempDir() {
    const char *base = getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/mprt-test-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()))
      path = buffer.data();
  }
  ~TempDir() {
    if (!path.empty())
      nftw(path.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS);
  }
  std::string file(const std::string &name) const { return path + "/" + name; }
  bool valid() const { return !path.empty(); }

  std::string path;

private:
  static int removeEntry(const char *entry, const struct stat *, int,
                         struct FTW *) {
    return remove(entry);
  }
};

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

inline void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline bool fileExists(const std::string &path) {
  return std::ifstream(path).good();
}

/// Whether the thread's last error contains `needle`; prints it if not.
inline ::testing::AssertionResult errorMentions(const char *needle) {
  const char *message = mprt_last_error();
  if (strstr(message, needle))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "last error \"" << message << "\" does not mention \"" << needle
         << "\"";
}

/// Asserts a status and that the message mentions `needle`.
#define EXPECT_MPRT_ERROR(expression, status, needle)                          \
  do {                                                                         \
    mprt_status actual_ = (expression);                                        \
    EXPECT_EQ(mprt_status_name(actual_),                                       \
              std::string(mprt_status_name(status)))                           \
        << mprt_last_error();                                                  \
    EXPECT_TRUE(::mprt_test::errorMentions(needle));                           \
  } while (0)

#define ASSERT_MPRT_OK(expression)                                             \
  do {                                                                         \
    mprt_status actual_ = (expression);                                        \
    ASSERT_EQ(actual_, MPRT_OK) << mprt_last_error();                          \
    ASSERT_STREQ(mprt_last_error(), "");                                       \
  } while (0)

constexpr mprt_dtype kAllDtypes[] = {
    MPRT_DTYPE_F32, MPRT_DTYPE_F16, MPRT_DTYPE_BF16, MPRT_DTYPE_F64,
    MPRT_DTYPE_I32, MPRT_DTYPE_I64, MPRT_DTYPE_U8,   MPRT_DTYPE_I8};

/// A tensor whose bytes are a function of position and `seed`, so any
/// reordering, truncation or mix-up between tensors shows.
inline TensorPtr patternTensor(mprt_dtype dtype,
                               const std::vector<int64_t> &shape,
                               unsigned seed = 1) {
  mprt_tensor *tensor = nullptr;
  mprt_status status =
      mprt_tensor_create(dtype, shape.size(), shape.data(), &tensor);
  EXPECT_EQ(status, MPRT_OK) << mprt_last_error();
  if (status != MPRT_OK)
    return nullptr;
  auto *bytes = static_cast<uint8_t *>(mprt_tensor_data(tensor));
  for (size_t i = 0; i < mprt_tensor_byte_size(tensor); ++i)
    bytes[i] = static_cast<uint8_t>(i * 31 + seed * 17 + 3);
  return TensorPtr(tensor);
}

inline bool sameTensor(const mprt_tensor *a, const mprt_tensor *b) {
  if (mprt_tensor_dtype(a) != mprt_tensor_dtype(b) ||
      mprt_tensor_rank(a) != mprt_tensor_rank(b) ||
      mprt_tensor_byte_size(a) != mprt_tensor_byte_size(b))
    return false;
  for (size_t i = 0; i < mprt_tensor_rank(a); ++i)
    if (mprt_tensor_shape(a)[i] != mprt_tensor_shape(b)[i])
      return false;
  return memcmp(mprt_tensor_data(a), mprt_tensor_data(b),
                mprt_tensor_byte_size(a)) == 0;
}

inline void appendLE(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
}

/// A .npy image with the given header dict text, written as NumPy would
/// (version `major`.0, padding to 64 bytes, trailing newline).
inline std::string npyImage(const std::string &dict, const std::string &data,
                            int major = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  int lengthBytes = major == 1 ? 2 : 4;
  size_t unpadded = out.size() + lengthBytes + dict.size() + 1;
  size_t padding = (64 - unpadded % 64) % 64;
  appendLE(out, dict.size() + padding + 1, lengthBytes);
  out += dict;
  out.append(padding, ' ');
  out += '\n';
  return out + data;
}

inline uint32_t crcOf(const std::string &bytes) {
  return static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef *>(bytes.data()),
            static_cast<uInt>(bytes.size())));
}

/// Raw deflate (no zlib header), as zip stores it.
inline std::string rawDeflate(const std::string &bytes) {
  z_stream stream{};
  deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8,
               Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, bytes.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef *>(&out[0]);
  stream.avail_out = static_cast<uInt>(out.size());
  int result = deflate(&stream, Z_FINISH);
  EXPECT_EQ(result, Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

/// A minimal zip writer for test inputs; fields can be overridden to make
/// broken archives.
struct ZipMember {
  std::string name;
  std::string contents; // uncompressed
  uint16_t method = 0;  // 0 stored, 8 deflate
  uint16_t flags = 0;
  // Overrides for corrupt archives.
  bool overrideCrc = false;
  uint32_t crc = 0;
  bool overrideUncompressedSize = false;
  uint32_t uncompressedSize = 0;
  bool overrideCompressedSize = false;
  uint32_t compressedSize = 0;
};

inline std::string buildZip(const std::vector<ZipMember> &members) {
  std::string out, directory;
  for (const ZipMember &member : members) {
    std::string data =
        member.method == 8 ? rawDeflate(member.contents) : member.contents;
    uint32_t crc = member.overrideCrc ? member.crc : crcOf(member.contents);
    uint32_t compressed = member.overrideCompressedSize
                              ? member.compressedSize
                              : static_cast<uint32_t>(data.size());
    uint32_t uncompressed = member.overrideUncompressedSize
                                ? member.uncompressedSize
                                : static_cast<uint32_t>(member.contents.size());
    uint32_t offset = static_cast<uint32_t>(out.size());
    appendLE(out, 0x04034b50, 4);
    appendLE(out, 20, 2);
    appendLE(out, member.flags, 2);
    appendLE(out, member.method, 2);
    appendLE(out, 0, 2);
    appendLE(out, 0x21, 2);
    appendLE(out, crc, 4);
    appendLE(out, compressed, 4);
    appendLE(out, uncompressed, 4);
    appendLE(out, member.name.size(), 2);
    appendLE(out, 0, 2);
    out += member.name + data;

    appendLE(directory, 0x02014b50, 4);
    appendLE(directory, 20, 2);
    appendLE(directory, 20, 2);
    appendLE(directory, member.flags, 2);
    appendLE(directory, member.method, 2);
    appendLE(directory, 0, 2);
    appendLE(directory, 0x21, 2);
    appendLE(directory, crc, 4);
    appendLE(directory, compressed, 4);
    appendLE(directory, uncompressed, 4);
    appendLE(directory, member.name.size(), 2);
    appendLE(directory, 0, 2); // extra
    appendLE(directory, 0, 2); // comment
    appendLE(directory, 0, 2); // disk
    appendLE(directory, 0, 2); // internal attributes
    appendLE(directory, 0, 4); // external attributes
    appendLE(directory, offset, 4);
    directory += member.name;
  }
  uint32_t directoryOffset = static_cast<uint32_t>(out.size());
  out += directory;
  appendLE(out, 0x06054b50, 4);
  appendLE(out, 0, 2);
  appendLE(out, 0, 2);
  appendLE(out, members.size(), 2);
  appendLE(out, members.size(), 2);
  appendLE(out, directory.size(), 4);
  appendLE(out, directoryOffset, 4);
  appendLE(out, 0, 2);
  return out;
}

/// The NumPy dict for a supported dtype and shape, e.g. for '<f4' (2, 3).
inline std::string npyDict(const std::string &descr,
                           const std::string &shapeTuple) {
  return "{'descr': '" + descr +
         "', 'fortran_order': False, 'shape': " + shapeTuple + ", }";
}

} // namespace mprt_test

#endif // MPRT_UNITTESTS_TESTUTIL_H
