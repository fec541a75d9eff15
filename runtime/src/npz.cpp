//===- npz.cpp - .npz archives: a zip of .npy members ---------------------===//
//
// Reading trusts nothing but the central directory: it locates the end
// record, bounds-checks every size and offset against the file, follows Zip64
// records where present (np.savez forces Zip64 local headers), and checks
// each member's CRC-32. Writing emits stored members, switching to Zip64
// fields only where a size or offset needs them.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace {

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kEndSize = 22;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kZip64LocatorSize = 20;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kMethodStored = 0;
constexpr uint16_t kMethodDeflate = 8;
constexpr uint16_t kFlagEncrypted = 1 << 0;
constexpr uint16_t kFlagUtf8 = 1 << 11;
constexpr uint32_t kMax32 = 0xffffffff;
constexpr uint16_t kMax16 = 0xffff;
// Deflate cannot expand data more than about 1032:1, so a larger declared
// ratio is corrupt, and rejecting it bounds what a hostile file makes us
// allocate.
constexpr uint64_t kMaxDeflateRatio = 1032;
// Names are written with ".npy" appended and zip stores 16-bit lengths.
constexpr size_t kMaxNameLength = 65000;

uint16_t readLE16(const uint8_t *p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}

uint32_t readLE32(const uint8_t *p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

uint64_t readLE64(const uint8_t *p) {
  return static_cast<uint64_t>(readLE32(p)) |
         static_cast<uint64_t>(readLE32(p + 4)) << 32;
}

void appendLE16(std::string &out, uint64_t value) {
  for (int i = 0; i < 2; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
}

void appendLE32(std::string &out, uint64_t value) {
  for (int i = 0; i < 4; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
}

void appendLE64(std::string &out, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
}

struct Entry {
  std::string zipName; // as stored, e.g. "w.npy"
  std::string name;    // without ".npy"
  uint16_t method;
  uint32_t crc;
  uint64_t compressedSize, uncompressedSize, localHeaderOffset;
};

} // namespace

struct mprt_npz {
  mprt::Source source;
  std::vector<Entry> entries;      // archive order
  std::vector<size_t> byName;      // indices into entries, sorted by name
  uint64_t centralDirectoryOffset; // member data must end before it
};

namespace mprt {
namespace {

bool lessByName(const std::vector<Entry> &entries, size_t a, size_t b) {
  return entries[a].name < entries[b].name;
}

/// Reads the Zip64 extended-information extra field of a central directory
/// entry, replacing the 32-bit fields that hold the 0xffffffff sentinel.
mprt_status readZip64Extra(const uint8_t *extra, size_t length,
                           const char *label, const std::string &zipName,
                           uint64_t &uncompressedSize, uint64_t &compressedSize,
                           uint64_t &localOffset, uint32_t &diskStart) {
  bool needUncompressed = uncompressedSize == kMax32;
  bool needCompressed = compressedSize == kMax32;
  bool needOffset = localOffset == kMax32;
  bool needDisk = diskStart == kMax16;
  bool found = false;
  size_t position = 0;
  // Fewer than 4 trailing bytes are padding some writers leave; ignore them.
  while (length - position >= 4) {
    uint16_t id = readLE16(extra + position);
    uint16_t size = readLE16(extra + position + 2);
    position += 4;
    if (size > length - position)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: member '%s': an extra field runs past the entry", label,
                  zipName.c_str());
    if (id == kZip64ExtraId && !found) {
      found = true;
      const uint8_t *field = extra + position;
      size_t left = size;
      auto take64 = [&](uint64_t &value) {
        if (left < 8)
          return false;
        value = readLE64(field);
        field += 8;
        left -= 8;
        return true;
      };
      if ((needUncompressed && !take64(uncompressedSize)) ||
          (needCompressed && !take64(compressedSize)) ||
          (needOffset && !take64(localOffset)))
        return fail(MPRT_ERROR_FORMAT,
                    "%s: member '%s': the Zip64 extra field is too short",
                    label, zipName.c_str());
      if (needDisk) {
        if (left < 4)
          return fail(MPRT_ERROR_FORMAT,
                      "%s: member '%s': the Zip64 extra field is too short",
                      label, zipName.c_str());
        diskStart = readLE32(field);
      }
    }
    position += size;
  }
  if (!found && (needUncompressed || needCompressed || needOffset))
    return fail(MPRT_ERROR_FORMAT,
                "%s: member '%s': sizes need a Zip64 extra field but there is "
                "none",
                label, zipName.c_str());
  return MPRT_OK;
}

/// Locates the end of central directory record and returns where the
/// central directory is and how many entries it has.
mprt_status readEndRecords(const Source &source, uint64_t &entryCount,
                           uint64_t &directoryOffset, uint64_t &directorySize) {
  const char *label = source.label();
  uint64_t size = source.size();
  if (size == 0)
    return fail(MPRT_ERROR_FORMAT, "%s: empty file, not an .npz archive",
                label);
  if (size < kEndSize)
    return fail(MPRT_ERROR_FORMAT,
                "%s: truncated or not a zip archive: %llu bytes is too short",
                label, static_cast<unsigned long long>(size));

  // The end record is last, followed only by a comment of at most 64 KiB.
  size_t tailLength =
      static_cast<size_t>(std::min<uint64_t>(size, kEndSize + kMax16));
  std::vector<uint8_t> tail(tailLength);
  if (mprt_status status =
          source.readAt(size - tailLength, tail.data(), tailLength))
    return status;
  size_t found = tailLength;
  for (size_t i = tailLength - kEndSize + 1; i-- > 0;) {
    if (readLE32(&tail[i]) == kEndSignature &&
        i + kEndSize + readLE16(&tail[i + 20]) == tailLength) {
      found = i;
      break;
    }
  }
  if (found == tailLength) {
    uint8_t start[4];
    bool looksLikeZip = source.readAt(0, start, 4) == MPRT_OK &&
                        readLE32(start) == kLocalHeaderSignature;
    return fail(MPRT_ERROR_FORMAT,
                looksLikeZip ? "%s: truncated or corrupt zip archive: no end "
                               "of central directory record"
                             : "%s: not a zip archive (no end of central "
                               "directory record)",
                label);
  }
  const uint8_t *end = &tail[found];
  uint64_t endOffset = size - tailLength + found;
  uint32_t disk = readLE16(end + 4), directoryDisk = readLE16(end + 6);
  uint64_t entriesOnDisk = readLE16(end + 8);
  entryCount = readLE16(end + 10);
  directorySize = readLE32(end + 12);
  directoryOffset = readLE32(end + 16);
  uint64_t directoryEnd = endOffset;

  // A Zip64 locator right before the end record points at the Zip64 end
  // record, whose 64-bit fields replace the 16/32-bit ones.
  uint8_t locator[kZip64LocatorSize];
  if (endOffset >= kZip64LocatorSize &&
      source.readAt(endOffset - kZip64LocatorSize, locator,
                    kZip64LocatorSize) == MPRT_OK &&
      readLE32(locator) == kZip64LocatorSignature) {
    uint64_t zip64EndOffset = readLE64(locator + 8);
    uint64_t locatorOffset = endOffset - kZip64LocatorSize;
    if (zip64EndOffset > locatorOffset ||
        locatorOffset - zip64EndOffset < kZip64EndSize)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: the Zip64 end record offset %llu is out of range", label,
                  static_cast<unsigned long long>(zip64EndOffset));
    uint8_t record[kZip64EndSize];
    if (mprt_status status =
            source.readAt(zip64EndOffset, record, kZip64EndSize))
      return status;
    if (readLE32(record) != kZip64EndSignature)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: bad Zip64 end of central directory signature", label);
    disk = readLE32(record + 16);
    directoryDisk = readLE32(record + 20);
    entriesOnDisk = readLE64(record + 24);
    entryCount = readLE64(record + 32);
    directorySize = readLE64(record + 40);
    directoryOffset = readLE64(record + 48);
    directoryEnd = zip64EndOffset;
  }

  if (disk != 0 || directoryDisk != 0 || entriesOnDisk != entryCount)
    return fail(MPRT_ERROR_FORMAT,
                "%s: multi-disk zip archives are not supported", label);
  if (directoryOffset > directoryEnd ||
      directorySize > directoryEnd - directoryOffset)
    return fail(MPRT_ERROR_FORMAT,
                "%s: truncated or corrupt: the central directory (%llu bytes "
                "at offset %llu) runs past its end record at %llu",
                label, static_cast<unsigned long long>(directorySize),
                static_cast<unsigned long long>(directoryOffset),
                static_cast<unsigned long long>(directoryEnd));
  if (directoryOffset + directorySize != directoryEnd)
    return fail(MPRT_ERROR_FORMAT,
                "%s: corrupt: %llu unexpected bytes between the central "
                "directory and its end record",
                label,
                static_cast<unsigned long long>(directoryEnd - directoryOffset -
                                                directorySize));
  if (entryCount > directorySize / kCentralHeaderSize)
    return fail(MPRT_ERROR_FORMAT,
                "%s: corrupt: %llu entries cannot fit in a %llu-byte central "
                "directory",
                label, static_cast<unsigned long long>(entryCount),
                static_cast<unsigned long long>(directorySize));
  return MPRT_OK;
}

mprt_status readCentralDirectory(mprt_npz &npz) {
  const Source &source = npz.source;
  const char *label = source.label();
  uint64_t entryCount = 0, directoryOffset = 0, directorySize = 0;
  if (mprt_status status =
          readEndRecords(source, entryCount, directoryOffset, directorySize))
    return status;
  npz.centralDirectoryOffset = directoryOffset;

  std::vector<uint8_t> directory(static_cast<size_t>(directorySize));
  if (mprt_status status =
          source.readAt(directoryOffset, directory.data(), directory.size()))
    return status;
  npz.entries.reserve(static_cast<size_t>(entryCount));
  size_t position = 0;
  for (uint64_t index = 0; index < entryCount; ++index) {
    size_t left = directory.size() - position;
    if (left < kCentralHeaderSize)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: truncated central directory at entry %llu", label,
                  static_cast<unsigned long long>(index));
    const uint8_t *header = directory.data() + position;
    if (readLE32(header) != kCentralHeaderSignature)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: corrupt central directory: bad signature at entry %llu",
                  label, static_cast<unsigned long long>(index));
    uint16_t flags = readLE16(header + 8);
    Entry entry;
    entry.method = readLE16(header + 10);
    entry.crc = readLE32(header + 16);
    entry.compressedSize = readLE32(header + 20);
    entry.uncompressedSize = readLE32(header + 24);
    size_t nameLength = readLE16(header + 28);
    size_t extraLength = readLE16(header + 30);
    size_t commentLength = readLE16(header + 32);
    uint32_t diskStart = readLE16(header + 34);
    entry.localHeaderOffset = readLE32(header + 42);
    if (nameLength + extraLength + commentLength > left - kCentralHeaderSize)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: truncated central directory at entry %llu", label,
                  static_cast<unsigned long long>(index));
    const uint8_t *name = header + kCentralHeaderSize;
    entry.zipName.assign(reinterpret_cast<const char *>(name), nameLength);
    if (mprt_status status =
            readZip64Extra(name + nameLength, extraLength, label, entry.zipName,
                           entry.uncompressedSize, entry.compressedSize,
                           entry.localHeaderOffset, diskStart))
      return status;
    position += kCentralHeaderSize + nameLength + extraLength + commentLength;

    const char *zipName = entry.zipName.c_str();
    if (nameLength == 0 || memchr(name, '\0', nameLength))
      return fail(MPRT_ERROR_FORMAT,
                  "%s: entry %llu has an empty name or one containing NUL",
                  label, static_cast<unsigned long long>(index));
    if (flags & kFlagEncrypted)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: member '%s' is encrypted, which is not supported", label,
                  zipName);
    if (diskStart != 0)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: member '%s' is on another disk (multi-disk archives "
                  "are not supported)",
                  label, zipName);
    if (entry.method != kMethodStored && entry.method != kMethodDeflate)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: member '%s' uses compression method %u; only stored "
                  "(0) and deflate (8) are supported",
                  label, zipName, entry.method);
    if (entry.method == kMethodStored &&
        entry.compressedSize != entry.uncompressedSize)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: stored member '%s' has different compressed (%llu) and "
                  "uncompressed (%llu) sizes",
                  label, zipName,
                  static_cast<unsigned long long>(entry.compressedSize),
                  static_cast<unsigned long long>(entry.uncompressedSize));
    uint64_t maxInflated;
    if (entry.method == kMethodDeflate &&
        !__builtin_mul_overflow(entry.compressedSize + 1, kMaxDeflateRatio,
                                &maxInflated) &&
        entry.uncompressedSize > maxInflated)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: member '%s' claims to inflate %llu bytes to %llu, an "
                  "impossible ratio for deflate",
                  label, zipName,
                  static_cast<unsigned long long>(entry.compressedSize),
                  static_cast<unsigned long long>(entry.uncompressedSize));
    if (entry.localHeaderOffset > directoryOffset ||
        directoryOffset - entry.localHeaderOffset < kLocalHeaderSize)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: member '%s' has its local header offset %llu outside "
                  "the member data",
                  label, zipName,
                  static_cast<unsigned long long>(entry.localHeaderOffset));

    // np.load names arrays after their member, minus ".npy".
    entry.name = entry.zipName;
    if (entry.name.size() > 4 &&
        entry.name.compare(entry.name.size() - 4, 4, ".npy") == 0)
      entry.name.resize(entry.name.size() - 4);
    npz.entries.push_back(std::move(entry));
  }
  if (position != directory.size())
    return fail(MPRT_ERROR_FORMAT,
                "%s: corrupt: %zu bytes of the central directory follow its "
                "last entry",
                label, directory.size() - position);

  npz.byName.resize(npz.entries.size());
  for (size_t i = 0; i < npz.byName.size(); ++i)
    npz.byName[i] = i;
  const std::vector<Entry> &entries = npz.entries;
  std::sort(npz.byName.begin(), npz.byName.end(),
            [&](size_t a, size_t b) { return lessByName(entries, a, b); });
  for (size_t i = 1; i < npz.byName.size(); ++i)
    if (entries[npz.byName[i - 1]].name == entries[npz.byName[i]].name)
      return fail(MPRT_ERROR_FORMAT, "%s: duplicate member '%s'", label,
                  entries[npz.byName[i]].zipName.c_str());
  return MPRT_OK;
}

const Entry *findEntry(const mprt_npz &npz, const char *name) {
  auto it = std::lower_bound(npz.byName.begin(), npz.byName.end(), name,
                             [&](size_t index, const char *key) {
                               return npz.entries[index].name < key;
                             });
  if (it == npz.byName.end() || npz.entries[*it].name != name)
    return nullptr;
  return &npz.entries[*it];
}

/// After a member failed to parse, reads the rest of it to see whether its
/// CRC-32 fails too: then corruption, not an unsupported file, is the cause
/// worth reporting.
bool memberIsCorrupt(InputStream &stream) {
  std::vector<uint8_t> scratch(64 * 1024);
  while (stream.remaining() > 0) {
    size_t piece = static_cast<size_t>(
        std::min<uint64_t>(stream.remaining(), scratch.size()));
    if (stream.read(scratch.data(), piece) != MPRT_OK)
      return false;
  }
  return stream.finish() != MPRT_OK;
}

mprt_status openNpz(mprt_npz *npz, mprt_npz **out) {
  if (mprt_status status = readCentralDirectory(*npz)) {
    delete npz;
    return status;
  }
  *out = npz;
  return MPRT_OK;
}

} // namespace

const char *npzLabel(const mprt_npz &npz) { return npz.source.label(); }

bool npzHasMember(const mprt_npz &npz, const char *name) {
  return findEntry(npz, name) != nullptr;
}

mprt_status readNpzMember(const mprt_npz &npz, const char *name, bool bf16AsU2,
                          mprt_tensor **out) {
  *out = nullptr;
  const char *label = npz.source.label();
  const Entry *entry = findEntry(npz, name);
  if (!entry)
    return fail(MPRT_ERROR_NOT_FOUND, "%s: no member named '%s' (or '%s.npy')",
                label, name, name);
  std::string memberLabel =
      std::string(label) + ": member '" + entry->zipName + "'";

  uint8_t local[kLocalHeaderSize];
  if (mprt_status status =
          npz.source.readAt(entry->localHeaderOffset, local, kLocalHeaderSize))
    return status;
  if (readLE32(local) != kLocalHeaderSignature)
    return fail(MPRT_ERROR_FORMAT, "%s: bad local header signature",
                memberLabel.c_str());
  // The local extra field may differ from the central one (np.savez writes
  // Zip64 sizes only here), so only its length is used.
  uint64_t nameOffset = entry->localHeaderOffset + kLocalHeaderSize;
  size_t nameLength = readLE16(local + 26), extraLength = readLE16(local + 28);
  uint64_t dataOffset = nameOffset + nameLength + extraLength;
  uint64_t limit = npz.centralDirectoryOffset;
  if (dataOffset > limit || entry->compressedSize > limit - dataOffset)
    return fail(MPRT_ERROR_FORMAT,
                "%s: truncated or corrupt: its %llu bytes of data at offset "
                "%llu run into the central directory at %llu",
                memberLabel.c_str(),
                static_cast<unsigned long long>(entry->compressedSize),
                static_cast<unsigned long long>(dataOffset),
                static_cast<unsigned long long>(limit));
  std::string localName(nameLength, '\0');
  if (mprt_status status =
          npz.source.readAt(nameOffset, &localName[0], nameLength))
    return status;
  if (localName != entry->zipName)
    return fail(MPRT_ERROR_FORMAT,
                "%s: corrupt: the local header names it '%s'",
                memberLabel.c_str(), localName.c_str());

  const char *streamLabel = memberLabel.c_str();
  RangeStream stored(npz.source, dataOffset, entry->compressedSize,
                     streamLabel);
  stored.expectCrc(entry->crc);
  InflateStream deflated(npz.source, dataOffset, entry->compressedSize,
                         entry->uncompressedSize, entry->crc, streamLabel);
  InputStream *stream = &stored;
  if (entry->method == kMethodDeflate) {
    if (mprt_status status = deflated.init())
      return status;
    stream = &deflated;
  }
  mprt_status status = readNpy(*stream, streamLabel, bf16AsU2, out);
  if (status == MPRT_ERROR_FORMAT || status == MPRT_ERROR_DTYPE ||
      status == MPRT_ERROR_SHAPE) {
    // Keep the message; memberIsCorrupt overwrites it with the CRC failure.
    std::string original = mprt_last_error();
    if (memberIsCorrupt(*stream))
      return MPRT_ERROR_FORMAT;
    fail(status, "%s", original.c_str());
  }
  return status;
}

mprt_status validateMemberNames(const char *const *names, size_t count,
                                const char *label) {
  std::vector<const char *> sorted(count);
  for (size_t i = 0; i < count; ++i) {
    if (!names[i] || !names[i][0])
      return fail(MPRT_ERROR_ARGUMENT, "%s: name %zu is %s", label, i,
                  names[i] ? "empty" : "NULL");
    if (strlen(names[i]) > kMaxNameLength)
      return fail(MPRT_ERROR_ARGUMENT, "%s: name %zu is longer than %zu bytes",
                  label, i, kMaxNameLength);
    sorted[i] = names[i];
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const char *a, const char *b) { return strcmp(a, b) < 0; });
  for (size_t i = 1; i < count; ++i)
    if (strcmp(sorted[i - 1], sorted[i]) == 0)
      return fail(MPRT_ERROR_ARGUMENT, "%s: duplicate name '%s'", label,
                  sorted[i]);
  return MPRT_OK;
}

namespace {

mprt_status writeNpzContents(FileWriter &writer,
                             const std::vector<NpzMember> &members,
                             const std::vector<std::string> &headers,
                             bool forceZip64) {
  struct Written {
    std::string zipName;
    uint64_t offset, size;
    uint32_t crc;
    uint16_t flags;
  };
  std::vector<Written> written;
  // Timestamps are fixed at 1980-01-01 (the DOS epoch) so that saving the
  // same tensors twice gives identical files.
  constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;
  for (size_t i = 0; i < members.size(); ++i) {
    const mprt_tensor &tensor = *members[i].tensor;
    Written member;
    member.zipName = members[i].name + ".npy";
    member.offset = writer.offset();
    member.size = headers[i].size() + tensor.byteSize;
    member.crc = crc32Update(0, headers[i].data(), headers[i].size());
    member.crc = crc32Update(member.crc, tensor.data, tensor.byteSize);
    member.flags = 0;
    for (unsigned char c : member.zipName)
      if (c >= 0x80)
        member.flags = kFlagUtf8;
    bool zip64 = forceZip64 || member.size >= kMax32;

    std::string local;
    appendLE32(local, kLocalHeaderSignature);
    appendLE16(local, zip64 ? 45 : 20); // version needed: 4.5 for Zip64
    appendLE16(local, member.flags);
    appendLE16(local, kMethodStored);
    appendLE16(local, 0); // time
    appendLE16(local, kDosDate);
    appendLE32(local, member.crc);
    appendLE32(local, zip64 ? kMax32 : member.size);
    appendLE32(local, zip64 ? kMax32 : member.size);
    appendLE16(local, member.zipName.size());
    appendLE16(local, zip64 ? 20 : 0);
    local += member.zipName;
    if (zip64) {
      appendLE16(local, kZip64ExtraId);
      appendLE16(local, 16);
      appendLE64(local, member.size);
      appendLE64(local, member.size);
    }
    if (mprt_status status = writer.write(local.data(), local.size()))
      return status;
    if (mprt_status status = writer.write(headers[i].data(), headers[i].size()))
      return status;
    if (mprt_status status = writer.write(tensor.data, tensor.byteSize))
      return status;
    written.push_back(std::move(member));
  }

  uint64_t directoryOffset = writer.offset();
  for (const Written &member : written) {
    bool largeSize = forceZip64 || member.size >= kMax32;
    bool largeOffset = forceZip64 || member.offset >= kMax32;
    std::string extra;
    if (largeSize || largeOffset) {
      appendLE16(extra, kZip64ExtraId);
      appendLE16(extra, (largeSize ? 16 : 0) + (largeOffset ? 8 : 0));
      if (largeSize) {
        appendLE64(extra, member.size); // uncompressed, then compressed
        appendLE64(extra, member.size);
      }
      if (largeOffset)
        appendLE64(extra, member.offset);
    }
    bool zip64 = !extra.empty();
    std::string central;
    appendLE32(central, kCentralHeaderSignature);
    appendLE16(central, (3 << 8) | (zip64 ? 45 : 20)); // made by Unix
    appendLE16(central, zip64 ? 45 : 20);
    appendLE16(central, member.flags);
    appendLE16(central, kMethodStored);
    appendLE16(central, 0);
    appendLE16(central, kDosDate);
    appendLE32(central, member.crc);
    appendLE32(central, largeSize ? kMax32 : member.size);
    appendLE32(central, largeSize ? kMax32 : member.size);
    appendLE16(central, member.zipName.size());
    appendLE16(central, extra.size());
    appendLE16(central, 0);              // comment
    appendLE16(central, 0);              // disk
    appendLE16(central, 0);              // internal attributes
    appendLE32(central, 0100644u << 16); // -rw-r--r--
    appendLE32(central, largeOffset ? kMax32 : member.offset);
    central += member.zipName;
    central += extra;
    if (mprt_status status = writer.write(central.data(), central.size()))
      return status;
  }

  uint64_t directorySize = writer.offset() - directoryOffset;
  uint64_t count = written.size();
  bool zip64End = forceZip64 || count >= kMax16 || directoryOffset >= kMax32 ||
                  directorySize >= kMax32;
  std::string end;
  if (zip64End) {
    uint64_t zip64EndOffset = writer.offset();
    appendLE32(end, kZip64EndSignature);
    appendLE64(end, kZip64EndSize - 12); // size of the rest of the record
    appendLE16(end, (3 << 8) | 45);
    appendLE16(end, 45);
    appendLE32(end, 0); // this disk
    appendLE32(end, 0); // disk with the central directory
    appendLE64(end, count);
    appendLE64(end, count);
    appendLE64(end, directorySize);
    appendLE64(end, directoryOffset);
    appendLE32(end, kZip64LocatorSignature);
    appendLE32(end, 0);
    appendLE64(end, zip64EndOffset);
    appendLE32(end, 1); // total disks
  }
  appendLE32(end, kEndSignature);
  appendLE16(end, 0);
  appendLE16(end, 0);
  appendLE16(end, zip64End ? kMax16 : count);
  appendLE16(end, zip64End ? kMax16 : count);
  appendLE32(end, zip64End ? kMax32 : directorySize);
  appendLE32(end, zip64End ? kMax32 : directoryOffset);
  appendLE16(end, 0); // comment
  return writer.write(end.data(), end.size());
}

} // namespace

mprt_status writeNpz(const char *path, const std::vector<NpzMember> &members,
                     const NpzWriteOptions &options) {
  // Headers first: an unsupported dtype fails before the file is created.
  std::vector<std::string> headers(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    std::string label =
        std::string(path) + ": member '" + members[i].name + ".npy'";
    if (mprt_status status = npyHeader(*members[i].tensor, members[i].bf16AsU2,
                                       label.c_str(), headers[i]))
      return status;
  }

  FileWriter writer;
  if (mprt_status status = writer.open(path))
    return status;
  if (mprt_status status =
          writeNpzContents(writer, members, headers, options.forceZip64)) {
    writer.discard();
    return status;
  }
  return writer.close(options.sync);
}

} // namespace mprt

using namespace mprt;

extern "C" {

mprt_status mprt_npz_open(const char *path, mprt_npz **out) {
  clearError();
  if (!out)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_npz_open: output pointer is NULL");
  *out = nullptr;
  if (!path)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_npz_open: path is NULL");
  auto *npz = new (std::nothrow) mprt_npz();
  if (!npz)
    return fail(MPRT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  if (mprt_status status = npz->source.openFile(path)) {
    delete npz;
    return status;
  }
  return openNpz(npz, out);
}

mprt_status mprt_npz_open_buffer(const void *data, size_t size,
                                 mprt_npz **out) {
  clearError();
  if (!out)
    return fail(MPRT_ERROR_ARGUMENT,
                "mprt_npz_open_buffer: output pointer is NULL");
  *out = nullptr;
  if (!data && size > 0)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_npz_open_buffer: data is NULL");
  auto *npz = new (std::nothrow) mprt_npz();
  if (!npz)
    return fail(MPRT_ERROR_OUT_OF_MEMORY, "<memory>: out of memory");
  npz->source.openMemory(data, size, "<memory>");
  return openNpz(npz, out);
}

void mprt_npz_close(mprt_npz *npz) { delete npz; }

size_t mprt_npz_count(const mprt_npz *npz) {
  return npz ? npz->entries.size() : 0;
}

const char *mprt_npz_name(const mprt_npz *npz, size_t index) {
  if (!npz || index >= npz->entries.size())
    return nullptr;
  return npz->entries[index].name.c_str();
}

mprt_status mprt_npz_get(const mprt_npz *npz, const char *name,
                         mprt_tensor **out) {
  clearError();
  if (!out)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_npz_get: output pointer is NULL");
  *out = nullptr;
  if (!npz || !name)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_npz_get: %s is NULL",
                npz ? "name" : "archive");
  return readNpzMember(*npz, name, /*bf16AsU2=*/false, out);
}

mprt_status mprt_npz_write(const char *path, const char *const *names,
                           const mprt_tensor *const *tensors, size_t count) {
  clearError();
  if (!path)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_npz_write: path is NULL");
  if (count > 0 && (!names || !tensors))
    return fail(MPRT_ERROR_ARGUMENT, "%s: %s array is NULL", path,
                names ? "tensors" : "names");
  if (mprt_status status = validateMemberNames(names, count, path))
    return status;
  std::vector<NpzMember> members;
  for (size_t i = 0; i < count; ++i) {
    if (!tensors[i])
      return fail(MPRT_ERROR_ARGUMENT, "%s: tensor %zu ('%s') is NULL", path, i,
                  names[i]);
    members.push_back({names[i], tensors[i], /*bf16AsU2=*/false});
  }
  return writeNpz(path, members, NpzWriteOptions());
}

} // extern "C"
