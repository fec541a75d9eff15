//===- image.cpp - The kernels of a PTX, cubin or fatbin image ------------===//
//
// PTX is read as text: `.entry` names, the `.param` list (size, `.ptr`,
// whether the body reads it) and `.maxntid`/`.reqntid`. A cubin is an ELF
// file: kernels are the functions marked STO_CUDA_ENTRY, and their
// `.nv.info.<name>` sections give the parameter sizes (EIATTR_KPARAM_INFO)
// and `.maxntid` (EIATTR_MAX_THREADS). A fatbin is a list of such images,
// some compressed; only those the device can run count.
//
//===----------------------------------------------------------------------===//

#include "image.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <elf.h>

namespace mp::standin {
namespace {

bool isIdentifierChar(char c) {
  return isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         c == '%';
}

/// PTX without its comments.
std::string stripComments(const char *text, size_t size) {
  std::string out;
  out.reserve(size);
  for (size_t i = 0; i < size && text[i]; ++i) {
    if (text[i] == '/' && i + 1 < size && text[i + 1] == '/') {
      while (i < size && text[i] && text[i] != '\n')
        ++i;
      if (i < size && text[i])
        out += '\n';
      continue;
    }
    if (text[i] == '/' && i + 1 < size && text[i + 1] == '*') {
      i += 2;
      while (i + 1 < size && text[i] && !(text[i] == '*' && text[i + 1] == '/'))
        ++i;
      ++i;
      out += ' ';
      continue;
    }
    out += text[i];
  }
  return out;
}

/// The whole-word occurrence of `word` at or after `from`, or npos.
size_t findWord(const std::string &s, const std::string &word, size_t from) {
  for (size_t at = s.find(word, from); at != std::string::npos;
       at = s.find(word, at + 1)) {
    bool startOk = at == 0 || !isIdentifierChar(s[at - 1]);
    size_t end = at + word.size();
    bool endOk = end >= s.size() || !isIdentifierChar(s[end]);
    if (startOk && endOk)
      return at;
  }
  return std::string::npos;
}

std::vector<std::string> splitWords(const std::string &s) {
  std::vector<std::string> words;
  std::string word;
  for (char c : s) {
    if (isspace(static_cast<unsigned char>(c))) {
      if (!word.empty())
        words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty())
    words.push_back(word);
  return words;
}

uint32_t ptxTypeSize(const std::string &type) {
  static const std::pair<const char *, uint32_t> sizes[] = {
      {".b8", 1},  {".u8", 1},   {".s8", 1},   {".b16", 2}, {".u16", 2},
      {".s16", 2}, {".f16", 2},  {".bf16", 2}, {".b32", 4}, {".u32", 4},
      {".s32", 4}, {".f32", 4},  {".b64", 8},  {".u64", 8}, {".s64", 8},
      {".f64", 8}, {".f16x2", 4}};
  for (const auto &[name, size] : sizes)
    if (type == name)
      return size;
  return 0;
}

/// One `.param` declaration: ".param .u64 .ptr .align 1 k_param_0" or
/// ".param .align 8 .b8 k_param_1[16]".
KernelParam readParam(const std::string &text) {
  KernelParam param;
  std::vector<std::string> words = splitWords(text);
  uint32_t elementSize = 0;
  for (const std::string &w : words) {
    if (w == ".ptr")
      param.pointer = true;
    else if (uint32_t size = ptxTypeSize(w))
      elementSize = size;
  }
  if (!words.empty()) {
    std::string name = words.back();
    uint32_t count = 1;
    size_t bracket = name.find('[');
    if (bracket != std::string::npos) {
      count = static_cast<uint32_t>(
          strtoul(name.c_str() + bracket + 1, nullptr, 10));
      name.resize(bracket);
    }
    param.name = name;
    param.size = elementSize * count;
  }
  return param;
}

/// Reads "256, 1, 1" at `at` into `dims` (missing dimensions are 1).
void readDims(const std::string &s, size_t at, uint32_t dims[3]) {
  dims[0] = dims[1] = dims[2] = 1;
  const char *p = s.c_str() + at;
  for (int i = 0; i < 3; ++i) {
    char *end;
    unsigned long value = strtoul(p, &end, 10);
    if (end == p)
      return;
    dims[i] = static_cast<uint32_t>(value);
    p = end;
    while (*p == ' ' || *p == '\t')
      ++p;
    if (*p++ != ',')
      return;
  }
}

//===----------------------------------------------------------------------===//
// ELF (cubin)
//===----------------------------------------------------------------------===//

constexpr unsigned char kStoCudaEntry = 0x10;
constexpr uint8_t kEiattrMaxThreads = 0x05, kEiattrKparamInfo = 0x17;

/// The SM number of a cubin ("90" for sm_90): the ELF ABI version 8 keeps it
/// in bits 8-15 of e_flags, older ones in bits 0-7.
int cubinArch(const Elf64_Ehdr &header) {
  if (header.e_ident[EI_ABIVERSION] >= 8)
    return (header.e_flags >> 8) & 0xff;
  return header.e_flags & 0xff;
}

/// Reads the `.nv.info.<kernel>` attributes: parameter sizes and .maxntid.
void readNvInfo(const uint8_t *p, uint64_t size, Kernel &kernel) {
  std::map<uint16_t, uint32_t> sizes; // ordinal -> bytes
  uint64_t i = 0;
  while (i + 4 <= size) {
    uint8_t format = p[i], attribute = p[i + 1];
    if (format == 3) { // EIFMT_HVAL: a 16-bit value
      i += 4;
      continue;
    }
    if (format != 4) // not EIFMT_SVAL: a layout this reader does not know
      return;
    uint16_t length;
    memcpy(&length, p + i + 2, 2);
    const uint8_t *value = p + i + 4;
    if (i + 4 + length > size)
      return;
    if (attribute == kEiattrKparamInfo && length >= 12) {
      uint16_t ordinal;
      uint32_t flags;
      memcpy(&ordinal, value + 4, 2);
      memcpy(&flags, value + 8, 4);
      sizes[ordinal] = (flags >> 18) & 0x3fff;
    } else if (attribute == kEiattrMaxThreads && length >= 12) {
      memcpy(kernel.maxThreads, value, 12);
    }
    i += 4 + length;
  }
  kernel.params.resize(sizes.size());
  for (auto &[ordinal, bytes] : sizes) {
    if (ordinal >= kernel.params.size())
      return; // ordinals with gaps: unknown
    kernel.params[ordinal].name = "param " + std::to_string(ordinal);
    kernel.params[ordinal].size = bytes;
  }
  kernel.paramsKnown = true;
}

/// Adds the kernels of a cubin at `p` (`size` bytes, or unknown: ~0) to
/// `image`; returns its SM number, or -1 when it is not a CUDA ELF file.
int readCubin(const uint8_t *p, uint64_t size, Image &image) {
  Elf64_Ehdr header;
  if (size < sizeof(header))
    return -1;
  memcpy(&header, p, sizeof(header));
  if (memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_machine != EM_CUDA ||
      header.e_shentsize != sizeof(Elf64_Shdr))
    return -1;
  if (header.e_shoff + uint64_t(header.e_shnum) * sizeof(Elf64_Shdr) > size)
    return -1;
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  memcpy(sections.data(), p + header.e_shoff,
         sections.size() * sizeof(Elf64_Shdr));
  auto inside = [&](const Elf64_Shdr &s) {
    return s.sh_offset + s.sh_size <= size;
  };
  auto sectionName = [&](const Elf64_Shdr &s) -> std::string {
    if (header.e_shstrndx >= sections.size() ||
        !inside(sections[header.e_shstrndx]))
      return "";
    const Elf64_Shdr &names = sections[header.e_shstrndx];
    if (s.sh_name >= names.sh_size)
      return "";
    const char *name =
        reinterpret_cast<const char *>(p + names.sh_offset) + s.sh_name;
    return std::string(name, strnlen(name, names.sh_size - s.sh_name));
  };
  std::vector<std::string> names;
  for (const Elf64_Shdr &s : sections) {
    if (s.sh_type != SHT_SYMTAB || !inside(s) || s.sh_link >= sections.size())
      continue;
    const Elf64_Shdr &strings = sections[s.sh_link];
    if (!inside(strings))
      continue;
    for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= s.sh_size;
         off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      memcpy(&sym, p + s.sh_offset + off, sizeof(sym));
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC ||
          !(sym.st_other & kStoCudaEntry) || sym.st_name >= strings.sh_size)
        continue;
      const char *name =
          reinterpret_cast<const char *>(p + strings.sh_offset) + sym.st_name;
      names.emplace_back(name, strnlen(name, strings.sh_size - sym.st_name));
    }
  }
  for (const std::string &name : names) {
    Kernel kernel;
    for (const Elf64_Shdr &s : sections)
      if (inside(s) && sectionName(s) == ".nv.info." + name)
        readNvInfo(p + s.sh_offset, s.sh_size, kernel);
    image.kernels[name] = kernel;
  }
  return cubinArch(header);
}

/// Whether the device runs SASS built for `arch`: the same major version
/// (sm_90 and sm_90a on sm_90).
bool runsCubin(int arch) { return arch / 10 == kDeviceArch / 10; }

//===----------------------------------------------------------------------===//
// Fatbin
//===----------------------------------------------------------------------===//

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr uint16_t kFatbinPtx = 1, kFatbinElf = 2;

/// The fatbin header and each entry's header, as `fatbinary` writes them.
struct FatbinHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t headerSize;
  uint64_t entriesSize;
};
struct FatbinEntry {
  uint16_t kind;
  uint16_t unknown;
  uint32_t headerSize;
  uint64_t payloadSize;
  uint32_t unknown2;
  uint32_t unknown3;
  uint16_t minor, major;
  uint32_t arch;
};

Image readFatbin(const uint8_t *p) {
  Image image;
  image.kind = "fatbin";
  FatbinHeader header;
  memcpy(&header, p, sizeof(header));
  bool usable = false;
  std::vector<int> archs;
  uint64_t at = header.headerSize, end = header.headerSize + header.entriesSize;
  while (at + sizeof(FatbinEntry) <= end) {
    FatbinEntry entry;
    memcpy(&entry, p + at, sizeof(entry));
    if (entry.headerSize < sizeof(FatbinEntry))
      break;
    const uint8_t *payload = p + at + entry.headerSize;
    int arch = static_cast<int>(entry.arch);
    archs.push_back(arch);
    if (entry.kind == kFatbinElf && runsCubin(arch)) {
      usable = true;
      if (readCubin(payload, entry.payloadSize, image) < 0)
        image.anyName = true; // compressed
    } else if (entry.kind == kFatbinPtx && arch <= kDeviceArch) {
      usable = true;
      // Uncompressed PTX starts with text; compressed PTX does not.
      const char *text = reinterpret_cast<const char *>(payload);
      std::string ptx = stripComments(text, entry.payloadSize);
      if (ptx.find(".version") == std::string::npos) {
        image.anyName = true;
      } else {
        Image fromPtx = readPtx(text, entry.payloadSize);
        for (auto &[name, kernel] : fromPtx.kernels)
          image.kernels.emplace(name, kernel);
      }
    }
    at += entry.headerSize + entry.payloadSize;
  }
  if (!usable) {
    image.result = CUDA_ERROR_NO_BINARY_FOR_GPU;
    image.log = "the fatbin has no cubin for sm_9x and no PTX for sm_90 or "
                "older (entries for:";
    for (int arch : archs)
      image.log += " sm_" + std::to_string(arch);
    image.log += ")";
  }
  return image;
}

} // namespace

Image readPtx(const char *text, size_t size) {
  Image image;
  std::string ptx = stripComments(text, size);
  size_t version = findWord(ptx, ".version", 0);
  size_t target = findWord(ptx, ".target", 0);
  if (version == std::string::npos || target == std::string::npos) {
    image.result = CUDA_ERROR_INVALID_PTX;
    image.log = "cuda-standin: not PTX: no .version or .target directive";
    return image;
  }
  double isa = strtod(ptx.c_str() + version + 8, nullptr);
  if (isa > 9.0 + 1e-9) {
    image.result = CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    char text[96];
    snprintf(text, sizeof(text),
             "cuda-standin: PTX ISA %.1f is newer than the driver's (9.0)",
             isa);
    image.log = text;
    return image;
  }
  size_t sm = ptx.find("sm_", target);
  if (sm != std::string::npos) {
    int arch = atoi(ptx.c_str() + sm + 3);
    if (arch > kDeviceArch) {
      image.result = CUDA_ERROR_INVALID_PTX;
      image.log = "cuda-standin: .target sm_" + std::to_string(arch) +
                  " is newer than the device (sm_90)";
      return image;
    }
  }
  for (size_t at = findWord(ptx, ".entry", 0); at != std::string::npos;
       at = findWord(ptx, ".entry", at + 1)) {
    // `.extern .entry` declares a kernel of another module.
    size_t lineStart = ptx.rfind('\n', at);
    lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
    if (findWord(ptx.substr(lineStart, at - lineStart), ".extern", 0) !=
        std::string::npos)
      continue;
    size_t nameStart = at + 6;
    while (nameStart < ptx.size() && isspace((unsigned char)ptx[nameStart]))
      ++nameStart;
    size_t nameEnd = nameStart;
    while (nameEnd < ptx.size() && isIdentifierChar(ptx[nameEnd]))
      ++nameEnd;
    if (nameEnd == nameStart)
      continue;
    Kernel kernel;
    kernel.paramsKnown = true;
    size_t body = ptx.find_first_of("{;", nameEnd);
    if (body == std::string::npos || ptx[body] == ';')
      continue; // a declaration without a body
    size_t open = ptx.find('(', nameEnd);
    size_t afterParams = nameEnd;
    if (open != std::string::npos && open < body) {
      size_t close = ptx.find(')', open);
      if (close == std::string::npos || close > body)
        continue;
      std::string list = ptx.substr(open + 1, close - open - 1);
      size_t from = 0;
      while (from < list.size()) {
        size_t comma = list.find(',', from);
        if (comma == std::string::npos)
          comma = list.size();
        std::string one = list.substr(from, comma - from);
        if (one.find(".param") != std::string::npos)
          kernel.params.push_back(readParam(one));
        from = comma + 1;
      }
      afterParams = close + 1;
      body = ptx.find('{', afterParams);
      if (body == std::string::npos)
        continue;
    }
    std::string directives = ptx.substr(afterParams, body - afterParams);
    size_t d = findWord(directives, ".maxntid", 0);
    if (d != std::string::npos)
      readDims(directives, d + 8, kernel.maxThreads);
    d = findWord(directives, ".reqntid", 0);
    if (d != std::string::npos)
      readDims(directives, d + 8, kernel.reqThreads);
    // The body runs to the matching brace.
    size_t bodyEnd = body;
    for (int depth = 0; bodyEnd < ptx.size(); ++bodyEnd) {
      if (ptx[bodyEnd] == '{')
        ++depth;
      else if (ptx[bodyEnd] == '}' && --depth == 0)
        break;
    }
    std::string text = ptx.substr(body, bodyEnd - body);
    for (KernelParam &param : kernel.params)
      param.used = findWord(text, param.name, 0) != std::string::npos;
    image.kernels[ptx.substr(nameStart, nameEnd - nameStart)] = kernel;
  }
  return image;
}

Image readImage(const void *data) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  uint32_t magic;
  memcpy(&magic, p, sizeof(magic));
  if (magic == kFatbinMagic)
    return readFatbin(p);
  if (memcmp(p, ELFMAG, SELFMAG) == 0) {
    Image image;
    image.kind = "cubin";
    int arch = readCubin(p, ~uint64_t(0) >> 1, image);
    if (arch < 0) {
      image.result = CUDA_ERROR_INVALID_IMAGE;
      image.log = "cuda-standin: an ELF image that is not a 64-bit cubin";
    } else if (!runsCubin(arch)) {
      image.result = CUDA_ERROR_NO_BINARY_FOR_GPU;
      image.log = "cuda-standin: a cubin for sm_" + std::to_string(arch) +
                  " does not run on sm_90";
    }
    return image;
  }
  const char *text = static_cast<const char *>(data);
  return readPtx(text, strlen(text));
}

} // namespace mp::standin
