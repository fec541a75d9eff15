//===- stream.cpp - File and memory sources, CRC and inflate streams ------===//

#include "internal.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

namespace mprt {

uint32_t crc32Update(uint32_t crc, const void *data, uint64_t length) {
  // zlib takes uInt lengths; feed large buffers in pieces.
  const auto *bytes = static_cast<const Bytef *>(data);
  while (length > 0) {
    uInt piece = static_cast<uInt>(std::min<uint64_t>(length, 1u << 30));
    crc = static_cast<uint32_t>(crc32(crc, bytes, piece));
    bytes += piece;
    length -= piece;
  }
  return crc;
}

//===----------------------------------------------------------------------===//
// Source
//===----------------------------------------------------------------------===//

Source::~Source() {
  if (fd >= 0)
    ::close(fd);
}

mprt_status Source::openFile(const char *path) {
  name = path;
  // O_NONBLOCK so that a FIFO cannot hang the open; it is rejected below.
  fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fail(MPRT_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0)
    return fail(MPRT_ERROR_IO, "%s: cannot stat: %s", path, strerror(errno));
  if (!S_ISREG(info.st_mode))
    return fail(MPRT_ERROR_IO, "%s: not a regular file", path);
  byteCount = static_cast<uint64_t>(info.st_size);
  return MPRT_OK;
}

void Source::openMemory(const void *data, size_t size, const char *label) {
  name = label;
  memory = static_cast<const uint8_t *>(data);
  byteCount = size;
}

mprt_status Source::readAt(uint64_t offset, void *dst, size_t length) const {
  if (offset > byteCount || length > byteCount - offset)
    return fail(MPRT_ERROR_FORMAT,
                "%s: truncated: needs %zu bytes at offset %llu but the file "
                "has %llu",
                name.c_str(), length, static_cast<unsigned long long>(offset),
                static_cast<unsigned long long>(byteCount));
  // An empty read may come with a NULL `dst` (an empty vector's data()),
  // which memcpy must not be given.
  if (length == 0)
    return MPRT_OK;
  if (memory) {
    memcpy(dst, memory + offset, length);
    return MPRT_OK;
  }
  auto *bytes = static_cast<uint8_t *>(dst);
  while (length > 0) {
    // pread is limited to SSIZE_MAX per call, and may return short counts.
    size_t piece = std::min<size_t>(length, 1u << 30);
    ssize_t got = pread(fd, bytes, piece, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return fail(MPRT_ERROR_IO, "%s: read failed: %s", name.c_str(),
                  strerror(errno));
    }
    if (got == 0) // The file shrank after it was opened.
      return fail(MPRT_ERROR_FORMAT, "%s: truncated: unexpected end of file",
                  name.c_str());
    bytes += got;
    offset += static_cast<uint64_t>(got);
    length -= static_cast<size_t>(got);
  }
  return MPRT_OK;
}

//===----------------------------------------------------------------------===//
// RangeStream
//===----------------------------------------------------------------------===//

RangeStream::RangeStream(const Source &source, uint64_t offset, uint64_t length,
                         const char *label)
    : source(source), position(offset), end(offset + length), label(label),
      crc(static_cast<uint32_t>(crc32(0, nullptr, 0))) {}

mprt_status RangeStream::read(void *dst, size_t length) {
  if (length > remaining())
    return fail(MPRT_ERROR_FORMAT,
                "%s: truncated: needs %zu more bytes, only %llu remain", label,
                length, static_cast<unsigned long long>(remaining()));
  if (mprt_status status = source.readAt(position, dst, length))
    return status;
  position += length;
  if (checkCrc)
    crc = crc32Update(crc, dst, length);
  return MPRT_OK;
}

mprt_status RangeStream::finish() {
  if (checkCrc && crc != expectedCrc)
    return fail(MPRT_ERROR_FORMAT,
                "%s: CRC-32 mismatch (archive says 0x%08x, data has 0x%08x): "
                "the data is corrupt",
                label, expectedCrc, crc);
  return MPRT_OK;
}

//===----------------------------------------------------------------------===//
// InflateStream
//===----------------------------------------------------------------------===//

namespace {
constexpr size_t kInflateBufferSize = 64 * 1024;
} // namespace

InflateStream::InflateStream(const Source &source, uint64_t offset,
                             uint64_t compressedSize, uint64_t uncompressedSize,
                             uint32_t expectedCrc, const char *label)
    : source(source), inputPosition(offset), inputEnd(offset + compressedSize),
      outputRemaining(uncompressedSize), declaredSize(uncompressedSize),
      expectedCrc(expectedCrc),
      crc(static_cast<uint32_t>(crc32(0, nullptr, 0))), label(label) {}

InflateStream::~InflateStream() {
  if (zstream) {
    inflateEnd(static_cast<z_stream *>(zstream));
    delete static_cast<z_stream *>(zstream);
  }
}

mprt_status InflateStream::init() {
  auto *stream = new (std::nothrow) z_stream();
  if (!stream)
    return fail(MPRT_ERROR_OUT_OF_MEMORY, "%s: out of memory", label);
  // Negative window bits: raw deflate, as zip stores it (no zlib header).
  if (inflateInit2(stream, -MAX_WBITS) != Z_OK) {
    delete stream;
    return fail(MPRT_ERROR_OUT_OF_MEMORY, "%s: cannot initialize zlib", label);
  }
  zstream = stream;
  buffer.resize(kInflateBufferSize);
  return MPRT_OK;
}

mprt_status InflateStream::refill() {
  auto *stream = static_cast<z_stream *>(zstream);
  size_t length = static_cast<size_t>(
      std::min<uint64_t>(buffer.size(), inputEnd - inputPosition));
  if (mprt_status status = source.readAt(inputPosition, buffer.data(), length))
    return status;
  inputPosition += length;
  stream->next_in = buffer.data();
  stream->avail_in = static_cast<uInt>(length);
  return MPRT_OK;
}

mprt_status InflateStream::inflateInto(uint8_t *dst, size_t length,
                                       size_t &produced) {
  auto *stream = static_cast<z_stream *>(zstream);
  produced = 0;
  while (produced < length && !streamEnded) {
    if (stream->avail_in == 0 && inputPosition < inputEnd)
      if (mprt_status status = refill())
        return status;
    size_t piece = std::min<size_t>(length - produced, 1u << 30);
    stream->next_out = dst + produced;
    stream->avail_out = static_cast<uInt>(piece);
    int result = inflate(stream, Z_NO_FLUSH);
    produced += piece - stream->avail_out;
    switch (result) {
    case Z_OK:
      break;
    case Z_STREAM_END:
      streamEnded = true;
      break;
    case Z_BUF_ERROR:
      // No progress possible: zlib wants input and there is none left.
      return fail(MPRT_ERROR_FORMAT,
                  "%s: truncated: the compressed data ends before the deflate "
                  "stream does",
                  label);
    case Z_MEM_ERROR:
      return fail(MPRT_ERROR_OUT_OF_MEMORY, "%s: out of memory inflating",
                  label);
    default:
      return fail(MPRT_ERROR_FORMAT, "%s: corrupt deflate data (%s)", label,
                  stream->msg ? stream->msg : "zlib error");
    }
  }
  return MPRT_OK;
}

mprt_status InflateStream::read(void *dst, size_t length) {
  if (length > outputRemaining)
    return fail(MPRT_ERROR_FORMAT,
                "%s: truncated: needs %zu more bytes, only %llu remain", label,
                length, static_cast<unsigned long long>(outputRemaining));
  size_t produced;
  if (mprt_status status =
          inflateInto(static_cast<uint8_t *>(dst), length, produced))
    return status;
  if (produced < length)
    return fail(MPRT_ERROR_FORMAT,
                "%s: truncated: inflates to %llu bytes, fewer than the %llu "
                "the archive declares",
                label,
                static_cast<unsigned long long>(declaredSize - outputRemaining +
                                                produced),
                static_cast<unsigned long long>(declaredSize));
  outputRemaining -= length;
  crc = crc32Update(crc, dst, length);
  return MPRT_OK;
}

mprt_status InflateStream::finish() {
  if (outputRemaining != 0)
    return fail(MPRT_ERROR_FORMAT, "%s: %llu declared bytes were not consumed",
                label, static_cast<unsigned long long>(outputRemaining));
  // The stream must end exactly at the declared size: one more byte of
  // output means the sizes in the archive are wrong.
  uint8_t extra;
  size_t produced;
  if (mprt_status status = inflateInto(&extra, 1, produced))
    return status;
  if (produced != 0)
    return fail(MPRT_ERROR_FORMAT,
                "%s: inflates to more than the %llu bytes the archive declares",
                label, static_cast<unsigned long long>(declaredSize));
  if (crc != expectedCrc)
    return fail(MPRT_ERROR_FORMAT,
                "%s: CRC-32 mismatch (archive says 0x%08x, data has 0x%08x): "
                "the data is corrupt",
                label, expectedCrc, crc);
  return MPRT_OK;
}

//===----------------------------------------------------------------------===//
// FileWriter
//===----------------------------------------------------------------------===//

FileWriter::~FileWriter() {
  if (file)
    fclose(file);
}

mprt_status FileWriter::open(const char *filePath) {
  path = filePath;
  file = fopen(filePath, "wb");
  if (!file)
    return fail(MPRT_ERROR_IO, "%s: cannot create: %s", filePath,
                strerror(errno));
  return MPRT_OK;
}

mprt_status FileWriter::write(const void *data, size_t length) {
  if (length > 0 && fwrite(data, 1, length, file) != length)
    return fail(MPRT_ERROR_IO, "%s: write failed after %llu bytes: %s",
                path.c_str(), static_cast<unsigned long long>(bytesWritten),
                strerror(errno));
  bytesWritten += length;
  return MPRT_OK;
}

mprt_status FileWriter::close(bool sync) {
  // Buffered data reaches the disk only here, so a full disk often shows up
  // at the flush rather than at fwrite.
  const char *failedStep = nullptr;
  int error = 0;
  if (fflush(file) != 0)
    failedStep = "write";
  else if (sync && fsync(fileno(file)) != 0)
    failedStep = "fsync";
  if (failedStep)
    error = errno;
  if (fclose(file) != 0 && !failedStep) {
    failedStep = "close";
    error = errno;
  }
  file = nullptr;
  if (!failedStep)
    return MPRT_OK;
  unlink(path.c_str());
  return fail(MPRT_ERROR_IO, "%s: %s failed: %s", path.c_str(), failedStep,
              strerror(error));
}

void FileWriter::discard() {
  if (!file)
    return;
  fclose(file);
  file = nullptr;
  unlink(path.c_str());
}

} // namespace mprt
