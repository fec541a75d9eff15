//===- npy.cpp - NumPy .npy format: header parsing and writing ------------===//
//
// The format: "\x93NUMPY", major and minor version bytes, a little-endian
// header length (2 bytes in 1.0, 4 bytes in 2.0 and 3.0), then the header, an
// ASCII (3.0: UTF-8) Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline, then the raw elements.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <cstring>
#include <memory>

namespace mprt {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLength = 6;
// NumPy refuses headers over 10000 bytes by default; ours are at most a few
// KiB (64 dimensions), so this only bounds memory for hostile input.
constexpr uint32_t kMaxHeaderLength = 1 << 20;

struct DescrInfo {
  const char *type; // descr without the byte-order character
  mprt_dtype dtype;
};

constexpr DescrInfo kDescrs[] = {
    {"f4", MPRT_DTYPE_F32}, {"f2", MPRT_DTYPE_F16}, {"f8", MPRT_DTYPE_F64},
    {"i4", MPRT_DTYPE_I32}, {"i8", MPRT_DTYPE_I64}, {"u1", MPRT_DTYPE_U8},
    {"i1", MPRT_DTYPE_I8},
};

/// The parsed header dict.
struct Header {
  std::string descr;
  bool fortranOrder = false;
  size_t rank = 0;
  int64_t shape[MPRT_MAX_RANK];
};

/// Recursive-descent parser for the subset of Python literals that .npy
/// headers use: a dict of string keys to strings, booleans and int tuples.
class HeaderParser {
public:
  HeaderParser(const std::string &text, const char *label)
      : cursor(text.data()), end(text.data() + text.size()), label(label) {}

  mprt_status parse(Header &header) {
    bool seenDescr = false, seenFortran = false, seenShape = false;
    skipSpace();
    if (!consume('{'))
      return malformed("the header does not start with '{'");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (mprt_status status = parseString(key, "a quoted key"))
        return status;
      skipSpace();
      if (!consume(':'))
        return malformed("expected ':' after a key");
      skipSpace();
      if (key == "descr") {
        if (seenDescr)
          return malformed("duplicate key 'descr'");
        seenDescr = true;
        if (peek() == '[' || peek() == '{')
          return fail(MPRT_ERROR_DTYPE,
                      "%s: structured dtypes (a descr list) are not supported",
                      label);
        if (mprt_status status = parseString(header.descr, "a descr string"))
          return status;
      } else if (key == "fortran_order") {
        if (seenFortran)
          return malformed("duplicate key 'fortran_order'");
        seenFortran = true;
        if (mprt_status status = parseBool(header.fortranOrder))
          return status;
      } else if (key == "shape") {
        if (seenShape)
          return malformed("duplicate key 'shape'");
        seenShape = true;
        if (mprt_status status = parseShape(header))
          return status;
      } else {
        return fail(MPRT_ERROR_FORMAT,
                    "%s: malformed header: unexpected key "
                    "'%s' (only descr, fortran_order and shape are allowed)",
                    label, key.c_str());
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return malformed("expected ',' or '}' after a value");
    }
    skipSpace();
    if (cursor != end)
      return malformed("unexpected characters after the closing '}'");
    if (!seenDescr)
      return malformed("missing key 'descr'");
    if (!seenFortran)
      return malformed("missing key 'fortran_order'");
    if (!seenShape)
      return malformed("missing key 'shape'");
    return MPRT_OK;
  }

private:
  char peek() const { return cursor < end ? *cursor : '\0'; }

  bool consume(char c) {
    if (peek() != c || cursor == end)
      return false;
    ++cursor;
    return true;
  }

  void skipSpace() {
    while (cursor < end && (*cursor == ' ' || *cursor == '\n' ||
                            *cursor == '\t' || *cursor == '\r'))
      ++cursor;
  }

  mprt_status malformed(const char *what) {
    return fail(MPRT_ERROR_FORMAT, "%s: malformed header: %s", label, what);
  }

  // Single- or double-quoted; escapes never occur in valid headers.
  mprt_status parseString(std::string &out, const char *what) {
    char quote = peek();
    if (quote != '\'' && quote != '"')
      return fail(MPRT_ERROR_FORMAT, "%s: malformed header: expected %s", label,
                  what);
    ++cursor;
    const char *start = cursor;
    while (cursor < end && *cursor != quote) {
      if (*cursor == '\\')
        return malformed("unsupported character in a string");
      ++cursor;
    }
    if (cursor == end)
      return malformed("unterminated string");
    out.assign(start, cursor);
    ++cursor;
    return MPRT_OK;
  }

  bool consumeWord(const char *word) {
    size_t length = strlen(word);
    if (static_cast<size_t>(end - cursor) < length ||
        memcmp(cursor, word, length) != 0)
      return false;
    cursor += length;
    return true;
  }

  mprt_status parseBool(bool &out) {
    if (consumeWord("True"))
      out = true;
    else if (consumeWord("False"))
      out = false;
    else
      return malformed("fortran_order must be True or False");
    return MPRT_OK;
  }

  // A tuple of non-negative ints: "()", "(3,)", "(2, 3)"; Python 2 wrote
  // long ints with an 'L' suffix. "(3)" is an int, not a tuple.
  mprt_status parseShape(Header &header) {
    if (!consume('('))
      return malformed("shape must be a tuple");
    header.rank = 0;
    bool sawComma = false;
    while (true) {
      skipSpace();
      if (consume(')'))
        break;
      if (peek() == '-')
        return fail(MPRT_ERROR_SHAPE, "%s: shape has a negative dimension",
                    label);
      if (peek() < '0' || peek() > '9')
        return malformed("shape must be a tuple of integers");
      uint64_t value = 0;
      while (peek() >= '0' && peek() <= '9') {
        uint64_t digit = static_cast<uint64_t>(*cursor - '0');
        if (value > (static_cast<uint64_t>(INT64_MAX) - digit) / 10)
          return fail(MPRT_ERROR_SHAPE,
                      "%s: shape dimension %zu does not fit in 64 bits", label,
                      header.rank);
        value = value * 10 + digit;
        ++cursor;
      }
      if (peek() == 'L' || peek() == 'l')
        ++cursor;
      if (header.rank == MPRT_MAX_RANK)
        return fail(MPRT_ERROR_SHAPE, "%s: shape has more than %d dimensions",
                    label, MPRT_MAX_RANK);
      header.shape[header.rank++] = static_cast<int64_t>(value);
      skipSpace();
      if (consume(',')) {
        sawComma = true;
        continue;
      }
      skipSpace();
      if (consume(')'))
        break;
      return malformed("expected ',' or ')' in shape");
    }
    if (header.rank == 1 && !sawComma)
      return malformed("shape must be a tuple, e.g. (3,) not (3)");
    return MPRT_OK;
  }

  const char *cursor, *end;
  const char *label;
};

mprt_status dtypeFromDescr(const std::string &descr, bool bf16AsU2,
                           const char *label, mprt_dtype &dtype) {
  char order = descr.empty() ? '\0' : descr[0];
  std::string type = descr.empty() ? "" : descr.substr(1);
  if (bf16AsU2) {
    // Checkpoints keep bf16 as its raw bits in a '<u2' member.
    if (descr != "<u2")
      return fail(MPRT_ERROR_DTYPE,
                  "%s: tagged as bf16 but stored with descr '%s' (expected "
                  "'<u2')",
                  label, descr.c_str());
    dtype = MPRT_DTYPE_BF16;
    return MPRT_OK;
  }
  for (const DescrInfo &info : kDescrs) {
    if (type != info.type)
      continue;
    bool singleByte = mprt_dtype_size(info.dtype) == 1;
    if (order == '<' || (singleByte && (order == '|' || order == '>'))) {
      dtype = info.dtype;
      return MPRT_OK;
    }
    if (order == '>')
      return fail(MPRT_ERROR_DTYPE,
                  "%s: big-endian descr '%s' is not supported (only "
                  "little-endian data)",
                  label, descr.c_str());
    break;
  }
  return fail(MPRT_ERROR_DTYPE,
              "%s: unsupported dtype descr '%s' (supported: '<f4', '<f2', "
              "'<f8', '<i4', '<i8', '|u1', '|i1')",
              label, descr.c_str());
}

const char *descrFor(mprt_dtype dtype) {
  switch (dtype) {
  case MPRT_DTYPE_F32:
    return "<f4";
  case MPRT_DTYPE_F16:
    return "<f2";
  case MPRT_DTYPE_F64:
    return "<f8";
  case MPRT_DTYPE_I32:
    return "<i4";
  case MPRT_DTYPE_I64:
    return "<i8";
  case MPRT_DTYPE_U8:
    return "|u1";
  case MPRT_DTYPE_I8:
    return "|i1";
  case MPRT_DTYPE_BF16:
    break;
  }
  return nullptr;
}

uint32_t readLE32(const uint8_t *bytes) {
  return static_cast<uint32_t>(bytes[0]) |
         static_cast<uint32_t>(bytes[1]) << 8 |
         static_cast<uint32_t>(bytes[2]) << 16 |
         static_cast<uint32_t>(bytes[3]) << 24;
}

} // namespace

mprt_status readNpy(InputStream &in, const char *label, bool bf16AsU2,
                    mprt_tensor **out) {
  *out = nullptr;
  if (in.remaining() == 0)
    return fail(MPRT_ERROR_FORMAT, "%s: empty file, not a .npy file", label);
  uint8_t prefix[kMagicLength + 2];
  if (in.remaining() < sizeof(prefix))
    return fail(MPRT_ERROR_FORMAT,
                "%s: truncated: %llu bytes is too short for a .npy magic "
                "string",
                label, static_cast<unsigned long long>(in.remaining()));
  if (mprt_status status = in.read(prefix, sizeof(prefix)))
    return status;
  if (memcmp(prefix, kMagic, kMagicLength) != 0)
    return fail(MPRT_ERROR_FORMAT,
                "%s: not a .npy file (bad magic string, expected "
                "\\x93NUMPY)",
                label);
  uint8_t major = prefix[kMagicLength], minor = prefix[kMagicLength + 1];
  if (major < 1 || major > 3 || minor != 0)
    return fail(MPRT_ERROR_FORMAT,
                "%s: unsupported .npy format version %u.%u (1.0, 2.0 and 3.0 "
                "are supported)",
                label, major, minor);

  // 1.0 has a 2-byte header length, 2.0 and 3.0 a 4-byte one.
  size_t lengthBytes = major == 1 ? 2 : 4;
  uint8_t lengthField[4] = {0, 0, 0, 0};
  if (in.remaining() < lengthBytes)
    return fail(MPRT_ERROR_FORMAT,
                "%s: truncated: the header length is cut "
                "off",
                label);
  if (mprt_status status = in.read(lengthField, lengthBytes))
    return status;
  uint32_t headerLength = readLE32(lengthField);
  if (headerLength > in.remaining())
    return fail(MPRT_ERROR_FORMAT,
                "%s: truncated: the header is %u bytes but only %llu bytes "
                "follow",
                label, headerLength,
                static_cast<unsigned long long>(in.remaining()));
  if (headerLength > kMaxHeaderLength)
    return fail(MPRT_ERROR_FORMAT,
                "%s: the header is %u bytes, over the %u-byte limit", label,
                headerLength, kMaxHeaderLength);
  std::string text(headerLength, '\0');
  if (mprt_status status = in.read(&text[0], headerLength))
    return status;

  Header header;
  if (mprt_status status = HeaderParser(text, label).parse(header))
    return status;
  mprt_dtype dtype;
  if (mprt_status status = dtypeFromDescr(header.descr, bf16AsU2, label, dtype))
    return status;
  if (header.fortranOrder)
    return fail(MPRT_ERROR_FORMAT,
                "%s: fortran_order=True is not supported (only C order)",
                label);
  uint64_t numElements, byteSize;
  if (!computeByteSize(dtype, header.rank, header.shape, numElements, byteSize))
    return fail(MPRT_ERROR_SHAPE, "%s: the shape's byte size overflows 64 bits",
                label);
  // Checked before allocating, so a hostile shape cannot make us allocate
  // more than the input holds.
  if (byteSize > in.remaining())
    return fail(MPRT_ERROR_FORMAT,
                "%s: truncated data: the shape needs %llu bytes but only %llu "
                "follow the header",
                label, static_cast<unsigned long long>(byteSize),
                static_cast<unsigned long long>(in.remaining()));
  if (byteSize < in.remaining())
    return fail(MPRT_ERROR_FORMAT,
                "%s: %llu unexpected bytes after the %llu bytes of data", label,
                static_cast<unsigned long long>(in.remaining() - byteSize),
                static_cast<unsigned long long>(byteSize));

  mprt_tensor *tensor;
  if (mprt_status status = createTensor(dtype, header.rank, header.shape,
                                        /*zeroFill=*/false, label, &tensor))
    return status;
  mprt_status status = in.read(tensor->data, tensor->byteSize);
  if (status == MPRT_OK)
    status = in.finish();
  if (status != MPRT_OK) {
    mprt_tensor_free(tensor);
    return status;
  }
  *out = tensor;
  return MPRT_OK;
}

mprt_status npyHeader(const mprt_tensor &tensor, bool bf16AsU2,
                      const char *label, std::string &header) {
  const char *descr = tensor.dtype == MPRT_DTYPE_BF16 && bf16AsU2
                          ? "<u2"
                          : descrFor(tensor.dtype);
  if (!descr)
    return fail(MPRT_ERROR_DTYPE,
                "%s: %s tensors cannot be stored in .npy (NumPy has no %s "
                "dtype); save them in a checkpoint instead",
                label, mprt_dtype_name(tensor.dtype),
                mprt_dtype_name(tensor.dtype));
  std::string dict = "{'descr': '";
  dict += descr;
  dict += "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.rank; ++i) {
    if (i > 0)
      dict += ", ";
    dict += std::to_string(tensor.shape[i]);
  }
  // A one-element tuple needs its trailing comma.
  dict += tensor.rank == 1 ? ",), }" : "), }";

  // Pad with spaces and end with '\n' so the data starts 64-byte aligned,
  // as NumPy does; fall back to version 2.0 if the length needs 4 bytes.
  size_t prefixLength = kMagicLength + 2 + 2;
  size_t unpadded = prefixLength + dict.size() + 1;
  size_t padded = (unpadded + 63) / 64 * 64;
  bool version2 = padded - prefixLength > 0xffff;
  if (version2) {
    prefixLength += 2;
    unpadded += 2;
    padded = (unpadded + 63) / 64 * 64;
  }
  uint32_t headerLength = static_cast<uint32_t>(padded - prefixLength);
  header.assign(kMagic, kMagicLength);
  header += static_cast<char>(version2 ? 2 : 1);
  header += '\0';
  for (size_t i = 0; i < (version2 ? 4u : 2u); ++i)
    header += static_cast<char>((headerLength >> (8 * i)) & 0xff);
  header += dict;
  header.append(padded - unpadded, ' ');
  header += '\n';
  return MPRT_OK;
}

} // namespace mprt

using namespace mprt;

extern "C" {

mprt_status mprt_npy_read(const char *path, mprt_tensor **out) {
  clearError();
  if (!out)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_npy_read: output pointer is NULL");
  *out = nullptr;
  if (!path)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_npy_read: path is NULL");
  Source source;
  if (mprt_status status = source.openFile(path))
    return status;
  RangeStream stream(source, 0, source.size(), path);
  return readNpy(stream, path, /*bf16AsU2=*/false, out);
}

mprt_status mprt_npy_read_buffer(const void *data, size_t size,
                                 mprt_tensor **out) {
  clearError();
  if (!out)
    return fail(MPRT_ERROR_ARGUMENT,
                "mprt_npy_read_buffer: output pointer is NULL");
  *out = nullptr;
  if (!data && size > 0)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_npy_read_buffer: data is NULL");
  Source source;
  source.openMemory(data, size, "<memory>");
  RangeStream stream(source, 0, size, "<memory>");
  return readNpy(stream, "<memory>", /*bf16AsU2=*/false, out);
}

mprt_status mprt_npy_write(const char *path, const mprt_tensor *tensor) {
  clearError();
  if (!path || !tensor)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_npy_write: %s is NULL",
                path ? "tensor" : "path");
  std::string header;
  if (mprt_status status = npyHeader(*tensor, /*bf16AsU2=*/false, path, header))
    return status;
  FileWriter writer;
  if (mprt_status status = writer.open(path))
    return status;
  mprt_status status = writer.write(header.data(), header.size());
  if (status == MPRT_OK)
    status = writer.write(tensor->data, tensor->byteSize);
  if (status != MPRT_OK) {
    writer.discard();
    return status;
  }
  return writer.close(/*sync=*/false);
}

} // extern "C"
