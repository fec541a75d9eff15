//===- checkpoint.cpp - Atomic, verifiable tensor checkpoints -------------===//
//
// A checkpoint is an .npz with two optional reserved members:
//   __dtypes__    u8 text, one "bf16 <name>" line per bf16 tensor, whose
//                 member holds the raw bits as '<u2' (NumPy has no bf16);
//   __metadata__  u8 text, the caller's metadata string.
// Saving writes "<path>.tmp", fsyncs it, and renames it over <path>: rename
// is atomic on POSIX file systems, so readers see the old or the new file,
// never a mix, even across a crash.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <unistd.h>

namespace {

constexpr char kReservedPrefix[] = "__";
constexpr char kDtypesMember[] = "__dtypes__";
constexpr char kMetadataMember[] = "__metadata__";
constexpr char kBF16Tag[] = "bf16 ";

bool isReserved(const char *name) {
  return strncmp(name, kReservedPrefix, 2) == 0;
}

} // namespace

struct mprt_checkpoint {
  std::string path; // for messages
  std::vector<std::string> names;
  std::vector<mprt_tensor *> tensors;
  std::vector<size_t> byName; // indices sorted by name, for find
  bool hasMetadata = false;
  std::string metadata;

  ~mprt_checkpoint() {
    for (mprt_tensor *tensor : tensors)
      mprt_tensor_free(tensor);
  }
};

namespace mprt {
namespace {

/// A rank-1 u8 tensor holding `text`'s bytes.
mprt_status textTensor(const std::string &text, const char *label,
                       mprt_tensor **out) {
  int64_t length = static_cast<int64_t>(text.size());
  if (mprt_status status = createTensor(MPRT_DTYPE_U8, 1, &length,
                                        /*zeroFill=*/false, label, out))
    return status;
  memcpy((*out)->data, text.data(), text.size());
  return MPRT_OK;
}

/// Reads a reserved text member back into a string.
mprt_status readText(const mprt_npz &npz, const char *member,
                     std::string &text) {
  mprt_tensor *tensor;
  if (mprt_status status = readNpzMember(npz, member, false, &tensor))
    return status;
  bool isText = tensor->dtype == MPRT_DTYPE_U8 && tensor->rank == 1;
  if (isText)
    text.assign(static_cast<const char *>(tensor->data), tensor->byteSize);
  mprt_tensor_free(tensor);
  if (!isText)
    return fail(MPRT_ERROR_FORMAT,
                "%s: reserved member '%s' is not a 1-D u8 array", npzLabel(npz),
                member);
  if (memchr(text.data(), '\0', text.size()))
    return fail(MPRT_ERROR_FORMAT, "%s: reserved member '%s' contains NUL",
                npzLabel(npz), member);
  return MPRT_OK;
}

/// Parses __dtypes__ into the set of bf16 tensor names, each of which must
/// be a member.
mprt_status readDtypeTags(const mprt_npz &npz, std::vector<std::string> &bf16) {
  std::string text;
  if (mprt_status status = readText(npz, kDtypesMember, text))
    return status;
  size_t start = 0;
  while (start < text.size()) {
    size_t newline = text.find('\n', start);
    if (newline == std::string::npos)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: '%s' does not end with a newline (truncated?)",
                  npzLabel(npz), kDtypesMember);
    std::string line = text.substr(start, newline - start);
    start = newline + 1;
    size_t tagLength = strlen(kBF16Tag);
    if (line.compare(0, tagLength, kBF16Tag) != 0)
      return fail(MPRT_ERROR_FORMAT,
                  "%s: '%s' has an unknown entry '%s' (expected 'bf16 "
                  "<name>')",
                  npzLabel(npz), kDtypesMember, line.c_str());
    std::string name = line.substr(tagLength);
    if (name.empty() || isReserved(name.c_str()))
      return fail(MPRT_ERROR_FORMAT, "%s: '%s' tags an invalid name '%s'",
                  npzLabel(npz), kDtypesMember, name.c_str());
    bf16.push_back(name);
  }
  return MPRT_OK;
}

mprt_status loadCheckpoint(const mprt_npz &npz, mprt_checkpoint &checkpoint) {
  const char *label = npzLabel(npz);
  std::vector<std::string> bf16;
  size_t count = mprt_npz_count(&npz);
  for (size_t i = 0; i < count; ++i) {
    const char *name = mprt_npz_name(&npz, i);
    if (!isReserved(name))
      continue;
    if (strcmp(name, kDtypesMember) == 0) {
      if (mprt_status status = readDtypeTags(npz, bf16))
        return status;
    } else if (strcmp(name, kMetadataMember) == 0) {
      if (mprt_status status =
              readText(npz, kMetadataMember, checkpoint.metadata))
        return status;
      checkpoint.hasMetadata = true;
    } else {
      return fail(MPRT_ERROR_FORMAT,
                  "%s: unknown reserved member '%s' (written by a newer "
                  "version?)",
                  label, name);
    }
  }
  std::sort(bf16.begin(), bf16.end());
  for (size_t i = 0; i < bf16.size(); ++i) {
    if (i > 0 && bf16[i - 1] == bf16[i])
      return fail(MPRT_ERROR_FORMAT, "%s: '%s' tags '%s' twice", label,
                  kDtypesMember, bf16[i].c_str());
    if (!npzHasMember(npz, bf16[i].c_str()))
      return fail(MPRT_ERROR_FORMAT,
                  "%s: '%s' tags '%s' as bf16, but there is no such member",
                  label, kDtypesMember, bf16[i].c_str());
  }

  for (size_t i = 0; i < count; ++i) {
    const char *name = mprt_npz_name(&npz, i);
    if (isReserved(name))
      continue;
    bool isBF16 = std::binary_search(bf16.begin(), bf16.end(), name);
    mprt_tensor *tensor;
    if (mprt_status status = readNpzMember(npz, name, isBF16, &tensor))
      return status;
    checkpoint.names.push_back(name);
    checkpoint.tensors.push_back(tensor);
  }
  checkpoint.byName.resize(checkpoint.names.size());
  for (size_t i = 0; i < checkpoint.byName.size(); ++i)
    checkpoint.byName[i] = i;
  const std::vector<std::string> &names = checkpoint.names;
  std::sort(checkpoint.byName.begin(), checkpoint.byName.end(),
            [&](size_t a, size_t b) { return names[a] < names[b]; });
  return MPRT_OK;
}

/// Makes the rename durable; failures are ignored because the new file is
/// already in place and complete.
void syncParentDirectory(const char *path) {
  std::string directory = path;
  size_t slash = directory.rfind('/');
  if (slash == std::string::npos)
    directory = ".";
  else
    directory.resize(slash == 0 ? 1 : slash);
  int fd = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  fsync(fd);
  close(fd);
}

/// Makes `previous` a second name of the checkpoint at `path` (if any)
/// before the new one replaces it. A hard link renamed into place keeps
/// `path` present throughout, so a crash at any point leaves a loadable
/// checkpoint under `path` and, once one has been replaced, under
/// `previous`.
mprt_status keepPrevious(const char *path, const char *previous) {
  if (access(path, F_OK) != 0)
    return MPRT_OK; // the first save: nothing to keep
  std::string link = std::string(previous) + ".tmp";
  unlink(link.c_str()); // a leftover of a save that was killed
  if (::link(path, link.c_str()) != 0 || rename(link.c_str(), previous) != 0) {
    int error = errno;
    unlink(link.c_str());
    return fail(MPRT_ERROR_IO,
                "%s: checkpoint not saved, cannot keep the previous one as "
                "'%s': %s",
                path, previous, strerror(error));
  }
  return MPRT_OK;
}

} // namespace
} // namespace mprt

using namespace mprt;

extern "C" {

mprt_status mprt_checkpoint_save(const char *path, const char *const *names,
                                 const mprt_tensor *const *tensors,
                                 size_t count, const char *metadata_json) {
  return mprt_checkpoint_save_rotate(path, names, tensors, count, metadata_json,
                                     nullptr);
}

mprt_status mprt_checkpoint_save_rotate(const char *path,
                                        const char *const *names,
                                        const mprt_tensor *const *tensors,
                                        size_t count, const char *metadata_json,
                                        const char *previous_path) {
  clearError();
  if (previous_path &&
      (!previous_path[0] || (path && !strcmp(path, previous_path))))
    return fail(MPRT_ERROR_ARGUMENT,
                "mprt_checkpoint_save_rotate: the previous checkpoint's path "
                "must be non-empty and differ from the checkpoint's");
  if (!path || !path[0])
    return fail(MPRT_ERROR_ARGUMENT, "mprt_checkpoint_save: path is %s",
                path ? "empty" : "NULL");
  if (count > 0 && (!names || !tensors))
    return fail(MPRT_ERROR_ARGUMENT, "%s: %s array is NULL", path,
                names ? "tensors" : "names");
  if (mprt_status status = validateMemberNames(names, count, path))
    return status;

  std::vector<NpzMember> members;
  std::string dtypeTags;
  for (size_t i = 0; i < count; ++i) {
    if (!tensors[i])
      return fail(MPRT_ERROR_ARGUMENT, "%s: tensor %zu ('%s') is NULL", path, i,
                  names[i]);
    if (isReserved(names[i]))
      return fail(MPRT_ERROR_ARGUMENT,
                  "%s: name '%s' is reserved (names starting with \"__\" are "
                  "used by the checkpoint format)",
                  path, names[i]);
    if (strchr(names[i], '\n'))
      return fail(MPRT_ERROR_ARGUMENT, "%s: name %zu contains a newline", path,
                  i);
    bool bf16 = tensors[i]->dtype == MPRT_DTYPE_BF16;
    if (bf16)
      dtypeTags += std::string(kBF16Tag) + names[i] + "\n";
    members.push_back({names[i], tensors[i], bf16});
  }

  // Owned u8 tensors for the reserved members, freed on every path.
  struct Owned {
    mprt_tensor *tensor = nullptr;
    ~Owned() { mprt_tensor_free(tensor); }
  } dtypes, metadata;
  if (!dtypeTags.empty()) {
    if (mprt_status status = textTensor(dtypeTags, path, &dtypes.tensor))
      return status;
    members.push_back({kDtypesMember, dtypes.tensor, false});
  }
  if (metadata_json) {
    if (mprt_status status = textTensor(metadata_json, path, &metadata.tensor))
      return status;
    members.push_back({kMetadataMember, metadata.tensor, false});
  }

  std::string temporary = std::string(path) + ".tmp";
  NpzWriteOptions options;
  options.sync = true;
  if (mprt_status status = writeNpz(temporary.c_str(), members, options)) {
    prefixError("%s: checkpoint not saved, the previous one is untouched: ",
                path);
    return status;
  }
  if (previous_path) {
    if (mprt_status status = keepPrevious(path, previous_path)) {
      unlink(temporary.c_str());
      return status;
    }
  }
  if (rename(temporary.c_str(), path) != 0) {
    int error = errno;
    unlink(temporary.c_str());
    return fail(MPRT_ERROR_IO,
                "%s: checkpoint not saved, cannot rename '%s' over it: %s",
                path, temporary.c_str(), strerror(error));
  }
  syncParentDirectory(path);
  return MPRT_OK;
}

mprt_status mprt_checkpoint_load(const char *path, mprt_checkpoint **out) {
  clearError();
  if (!out)
    return fail(MPRT_ERROR_ARGUMENT,
                "mprt_checkpoint_load: output pointer is NULL");
  *out = nullptr;
  if (!path)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_checkpoint_load: path is NULL");
  mprt_npz *npz;
  if (mprt_status status = mprt_npz_open(path, &npz))
    return status;
  auto *checkpoint = new (std::nothrow) mprt_checkpoint();
  if (checkpoint)
    checkpoint->path = path;
  mprt_status status =
      checkpoint ? loadCheckpoint(*npz, *checkpoint)
                 : fail(MPRT_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
  mprt_npz_close(npz);
  if (status != MPRT_OK) {
    delete checkpoint;
    return status;
  }
  *out = checkpoint;
  return MPRT_OK;
}

void mprt_checkpoint_free(mprt_checkpoint *checkpoint) { delete checkpoint; }

size_t mprt_checkpoint_count(const mprt_checkpoint *checkpoint) {
  return checkpoint ? checkpoint->tensors.size() : 0;
}

const char *mprt_checkpoint_name(const mprt_checkpoint *checkpoint,
                                 size_t index) {
  if (!checkpoint || index >= checkpoint->names.size())
    return nullptr;
  return checkpoint->names[index].c_str();
}

const mprt_tensor *mprt_checkpoint_tensor(const mprt_checkpoint *checkpoint,
                                          size_t index) {
  if (!checkpoint || index >= checkpoint->tensors.size())
    return nullptr;
  return checkpoint->tensors[index];
}

mprt_status mprt_checkpoint_find(const mprt_checkpoint *checkpoint,
                                 const char *name, const mprt_tensor **out) {
  clearError();
  if (!out)
    return fail(MPRT_ERROR_ARGUMENT,
                "mprt_checkpoint_find: output pointer is NULL");
  *out = nullptr;
  if (!checkpoint || !name)
    return fail(MPRT_ERROR_ARGUMENT, "mprt_checkpoint_find: %s is NULL",
                checkpoint ? "name" : "checkpoint");
  const std::vector<std::string> &names = checkpoint->names;
  auto it = std::lower_bound(
      checkpoint->byName.begin(), checkpoint->byName.end(), name,
      [&](size_t index, const char *key) { return names[index] < key; });
  if (it == checkpoint->byName.end() || names[*it] != name)
    return fail(MPRT_ERROR_NOT_FOUND, "%s: checkpoint has no tensor named '%s'",
                checkpoint->path.c_str(), name);
  *out = checkpoint->tensors[*it];
  return MPRT_OK;
}

const char *mprt_checkpoint_metadata(const mprt_checkpoint *checkpoint) {
  if (!checkpoint || !checkpoint->hasMetadata)
    return nullptr;
  return checkpoint->metadata.c_str();
}

} // extern "C"
