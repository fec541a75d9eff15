//===- CheckpointTest.cpp - Atomic checkpoints: round trips and failures --===//

#include "TestUtil.h"
#include "internal.h"

#include <csignal>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mprt_test;

namespace {

class MprtCheckpoint : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(dir.valid());
    path = dir.file("model.ckpt");
  }

  /// Saves `tensors` under names t0, t1, ...
  mprt_status save(const std::string &target,
                   const std::vector<const mprt_tensor *> &tensors,
                   const char *metadata) {
    names.clear();
    for (size_t i = 0; i < tensors.size(); ++i)
      names.push_back("t" + std::to_string(i));
    std::vector<const char *> namePointers;
    for (const std::string &name : names)
      namePointers.push_back(name.c_str());
    return mprt_checkpoint_save(target.c_str(), namePointers.data(),
                                tensors.data(), tensors.size(), metadata);
  }

  /// Loads `target` and checks it holds exactly `expected` (as t0, t1, ...).
  void expectCheckpoint(const std::string &target,
                        const std::vector<const mprt_tensor *> &expected,
                        const char *metadata) {
    mprt_checkpoint *raw = nullptr;
    ASSERT_MPRT_OK(mprt_checkpoint_load(target.c_str(), &raw));
    CheckpointPtr checkpoint(raw);
    ASSERT_EQ(mprt_checkpoint_count(raw), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(mprt_checkpoint_name(raw, i), "t" + std::to_string(i));
      EXPECT_TRUE(sameTensor(mprt_checkpoint_tensor(raw, i), expected[i]))
          << "tensor " << i;
    }
    if (metadata)
      EXPECT_STREQ(mprt_checkpoint_metadata(raw), metadata);
    else
      EXPECT_EQ(mprt_checkpoint_metadata(raw), nullptr);
  }

  TempDir dir;
  std::string path;
  std::vector<std::string> names;
};

TEST_F(MprtCheckpoint, RoundTripEveryDtypeWithMetadata) {
  std::vector<TensorPtr> owners;
  std::vector<const mprt_tensor *> tensors;
  for (mprt_dtype dtype : kAllDtypes) {
    owners.push_back(patternTensor(dtype, {3, 2}, owners.size()));
    tensors.push_back(owners.back().get());
  }
  owners.push_back(patternTensor(MPRT_DTYPE_BF16, {}, 7));
  tensors.push_back(owners.back().get());
  const char *metadata = "{\"step\": 1200, \"loss_scale\": 65536.0}";
  ASSERT_MPRT_OK(save(path, tensors, metadata));
  EXPECT_FALSE(fileExists(path + ".tmp"));
  expectCheckpoint(path, tensors, metadata);

  mprt_checkpoint *raw = nullptr;
  ASSERT_MPRT_OK(mprt_checkpoint_load(path.c_str(), &raw));
  CheckpointPtr checkpoint(raw);
  const mprt_tensor *found = nullptr;
  ASSERT_MPRT_OK(mprt_checkpoint_find(raw, "t2", &found));
  EXPECT_EQ(mprt_tensor_dtype(found), MPRT_DTYPE_BF16);
  EXPECT_TRUE(sameTensor(found, tensors[2]));
  EXPECT_MPRT_ERROR(mprt_checkpoint_find(raw, "t99", &found),
                    MPRT_ERROR_NOT_FOUND, "no tensor named 't99'");
  EXPECT_TRUE(errorMentions(path.c_str()));
  EXPECT_EQ(found, nullptr);
  EXPECT_EQ(mprt_checkpoint_name(raw, 99), nullptr);
  EXPECT_EQ(mprt_checkpoint_tensor(raw, 99), nullptr);
}

TEST_F(MprtCheckpoint, MetadataIsOptional) {
  TensorPtr a = patternTensor(MPRT_DTYPE_F32, {4});
  ASSERT_MPRT_OK(save(path, {a.get()}, nullptr));
  expectCheckpoint(path, {a.get()}, nullptr);
  ASSERT_MPRT_OK(save(path, {a.get()}, ""));
  expectCheckpoint(path, {a.get()}, "");
  ASSERT_MPRT_OK(save(path, {}, "{}"));
  expectCheckpoint(path, {}, "{}");
}

TEST_F(MprtCheckpoint, IsAnNpzNumPyCanRead) {
  TensorPtr weights = patternTensor(MPRT_DTYPE_BF16, {2, 2});
  TensorPtr bias = patternTensor(MPRT_DTYPE_F32, {2});
  ASSERT_MPRT_OK(save(path, {weights.get(), bias.get()}, "{\"v\": 1}"));
  mprt_npz *raw = nullptr;
  ASSERT_MPRT_OK(mprt_npz_open(path.c_str(), &raw));
  NpzPtr npz(raw);
  ASSERT_EQ(mprt_npz_count(raw), 4u);
  EXPECT_STREQ(mprt_npz_name(raw, 0), "t0");
  EXPECT_STREQ(mprt_npz_name(raw, 1), "t1");
  EXPECT_STREQ(mprt_npz_name(raw, 2), "__dtypes__");
  EXPECT_STREQ(mprt_npz_name(raw, 3), "__metadata__");
  mprt_tensor *tensor = nullptr;
  // NumPy sees bf16 as its raw bits, uint16, which plain npz reading refuses.
  EXPECT_MPRT_ERROR(mprt_npz_get(raw, "t0", &tensor), MPRT_ERROR_DTYPE,
                    "unsupported dtype descr '<u2'");
  ASSERT_MPRT_OK(mprt_npz_get(raw, "__dtypes__", &tensor));
  TensorPtr tags(tensor);
  EXPECT_EQ(std::string(static_cast<const char *>(mprt_tensor_data(tensor)),
                        mprt_tensor_byte_size(tensor)),
            "bf16 t0\n");
  ASSERT_MPRT_OK(mprt_npz_get(raw, "__metadata__", &tensor));
  TensorPtr metadata(tensor);
  EXPECT_EQ(mprt_tensor_dtype(tensor), MPRT_DTYPE_U8);
  EXPECT_EQ(std::string(static_cast<const char *>(mprt_tensor_data(tensor)),
                        mprt_tensor_byte_size(tensor)),
            "{\"v\": 1}");
}

TEST_F(MprtCheckpoint, LoadsAPlainNpz) {
  TensorPtr tensor = patternTensor(MPRT_DTYPE_I64, {5});
  std::string data(static_cast<const char *>(mprt_tensor_data(tensor.get())),
                   40);
  ZipMember member;
  member.name = "t0.npy";
  member.contents = npyImage(npyDict("<i8", "(5,)"), data);
  member.method = 8;
  writeFile(path, buildZip({member}));
  expectCheckpoint(path, {tensor.get()}, nullptr);
}

TEST_F(MprtCheckpoint, SaveReplacesAtomically) {
  TensorPtr first = patternTensor(MPRT_DTYPE_F32, {8}, 1);
  TensorPtr second = patternTensor(MPRT_DTYPE_F16, {2, 8}, 2);
  ASSERT_MPRT_OK(save(path, {first.get()}, "{\"step\": 1}"));
  ASSERT_MPRT_OK(save(path, {second.get(), first.get()}, "{\"step\": 2}"));
  EXPECT_FALSE(fileExists(path + ".tmp"));
  expectCheckpoint(path, {second.get(), first.get()}, "{\"step\": 2}");
}

TEST_F(MprtCheckpoint, RotateKeepsThePreviousCheckpoint) {
  TensorPtr first = patternTensor(MPRT_DTYPE_F32, {8}, 1);
  TensorPtr second = patternTensor(MPRT_DTYPE_F32, {8}, 2);
  TensorPtr third = patternTensor(MPRT_DTYPE_F32, {8}, 3);
  std::string previous = path + ".prev";
  const char *name = "t0";
  auto rotate = [&](const mprt_tensor *tensor, const char *metadata) {
    return mprt_checkpoint_save_rotate(path.c_str(), &name, &tensor, 1,
                                       metadata, previous.c_str());
  };
  ASSERT_MPRT_OK(rotate(first.get(), "{\"step\": 1}"));
  EXPECT_FALSE(fileExists(previous)); // nothing to keep on the first save
  ASSERT_MPRT_OK(rotate(second.get(), "{\"step\": 2}"));
  expectCheckpoint(previous, {first.get()}, "{\"step\": 1}");
  // A leftover link of a killed save does not get in the way.
  writeFile(previous + ".tmp", "junk");
  ASSERT_MPRT_OK(rotate(third.get(), "{\"step\": 3}"));
  expectCheckpoint(path, {third.get()}, "{\"step\": 3}");
  expectCheckpoint(previous, {second.get()}, "{\"step\": 2}");
  EXPECT_FALSE(fileExists(previous + ".tmp"));
  EXPECT_FALSE(fileExists(path + ".tmp"));

  // The current checkpoint gets corrupted: the previous one still loads.
  std::string bytes = readFile(path);
  writeFile(path, bytes.substr(0, bytes.size() / 2));
  mprt_checkpoint *checkpoint = nullptr;
  EXPECT_MPRT_ERROR(mprt_checkpoint_load(path.c_str(), &checkpoint),
                    MPRT_ERROR_FORMAT, "model.ckpt");
  expectCheckpoint(previous, {second.get()}, "{\"step\": 2}");

  const mprt_tensor *tensor = first.get();
  EXPECT_MPRT_ERROR(mprt_checkpoint_save_rotate(path.c_str(), &name, &tensor, 1,
                                                nullptr, path.c_str()),
                    MPRT_ERROR_ARGUMENT, "must be non-empty and differ");
}

TEST_F(MprtCheckpoint, FailedSaveKeepsPreviousWhenTmpCannotBeCreated) {
  TensorPtr good = patternTensor(MPRT_DTYPE_I32, {4}, 1);
  ASSERT_MPRT_OK(save(path, {good.get()}, "good"));
  // A directory in the way of the temporary file: fails even for root.
  ASSERT_EQ(mkdir((path + ".tmp").c_str(), 0755), 0);
  TensorPtr update = patternTensor(MPRT_DTYPE_I32, {4}, 2);
  EXPECT_MPRT_ERROR(save(path, {update.get()}, "update"), MPRT_ERROR_IO,
                    "checkpoint not saved, the previous one is untouched");
  EXPECT_TRUE(errorMentions("model.ckpt.tmp: cannot create"));
  expectCheckpoint(path, {good.get()}, "good");
}

TEST_F(MprtCheckpoint, FailedRenameRemovesTmp) {
  // A directory at the target path: the temporary is written, but rename()
  // refuses to replace a directory with a file.
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  TensorPtr tensor = patternTensor(MPRT_DTYPE_I8, {4});
  EXPECT_MPRT_ERROR(save(path, {tensor.get()}, nullptr), MPRT_ERROR_IO,
                    "checkpoint not saved, cannot rename");
  EXPECT_TRUE(errorMentions("model.ckpt.tmp"));
  EXPECT_FALSE(fileExists(path + ".tmp"));
  struct stat info;
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_TRUE(S_ISDIR(info.st_mode));
}

/// Runs the enclosed scope without write permission on a directory: as an
/// unprivileged user by removing the write bit; as root (who ignores mode
/// bits) by also switching the effective user to nobody.
class ReadOnlyDirectory {
public:
  ReadOnlyDirectory(const std::string &parent, const std::string &directory)
      : directory(directory) {
    chmod(directory.c_str(), 0555);
    if (geteuid() == 0) {
      chmod(parent.c_str(), 0755); // mkdtemp made it 0700
      switchedUser = seteuid(65534) == 0;
      usable = switchedUser;
    } else {
      usable = true;
    }
  }
  ~ReadOnlyDirectory() {
    if (switchedUser) {
      EXPECT_EQ(seteuid(0), 0);
    }
    chmod(directory.c_str(), 0755);
  }
  bool usable = false;

private:
  std::string directory;
  bool switchedUser = false;
};

TEST_F(MprtCheckpoint, FailedSaveKeepsPreviousInUnwritableDirectory) {
  std::string subdirectory = dir.file("readonly");
  ASSERT_EQ(mkdir(subdirectory.c_str(), 0755), 0);
  std::string target = subdirectory + "/model.ckpt";
  TensorPtr good = patternTensor(MPRT_DTYPE_F64, {3}, 1);
  ASSERT_MPRT_OK(save(target, {good.get()}, "good"));

  TensorPtr update = patternTensor(MPRT_DTYPE_F64, {3}, 2);
  ReadOnlyDirectory readOnly(dir.path, subdirectory);
  if (!readOnly.usable)
    GTEST_SKIP() << "cannot drop root privileges here";
  EXPECT_MPRT_ERROR(save(target, {update.get()}, "update"), MPRT_ERROR_IO,
                    "Permission denied");
  EXPECT_TRUE(errorMentions("previous one is untouched"));
  EXPECT_FALSE(fileExists(target + ".tmp"));
  expectCheckpoint(target, {good.get()}, "good");
}

TEST_F(MprtCheckpoint, FailedWriteMidwayKeepsPreviousAndRemovesTmp) {
  TensorPtr good = patternTensor(MPRT_DTYPE_U8, {100}, 1);
  ASSERT_MPRT_OK(save(path, {good.get()}, "good"));
  TensorPtr large = patternTensor(MPRT_DTYPE_F32, {64 * 1024}, 2);

  // A file size limit makes writes past 16 KiB fail with EFBIG, like a full
  // disk; SIGXFSZ is ignored so the write returns the error instead.
  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct rlimit limited = saved;
  limited.rlim_cur = 16 * 1024;
  auto previousHandler = signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  mprt_status status = save(path, {large.get()}, "large");
  std::string message = mprt_last_error();
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, previousHandler);

  EXPECT_EQ(status, MPRT_ERROR_IO) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_NE(message.find("previous one is untouched"), std::string::npos);
  EXPECT_FALSE(fileExists(path + ".tmp"));
  expectCheckpoint(path, {good.get()}, "good");
}

TEST_F(MprtCheckpoint, TruncatedAtEveryOffsetFailsCleanly) {
  TensorPtr a = patternTensor(MPRT_DTYPE_BF16, {3, 3}, 1);
  TensorPtr b = patternTensor(MPRT_DTYPE_I64, {5}, 2);
  ASSERT_MPRT_OK(save(path, {a.get(), b.get()}, "{\"step\": 3}"));
  std::string bytes = readFile(path);
  std::string truncatedPath = dir.file("truncated.ckpt");
  for (size_t length = 0; length < bytes.size(); ++length) {
    SCOPED_TRACE(length);
    writeFile(truncatedPath, bytes.substr(0, length));
    mprt_checkpoint *checkpoint = reinterpret_cast<mprt_checkpoint *>(this);
    EXPECT_MPRT_ERROR(mprt_checkpoint_load(truncatedPath.c_str(), &checkpoint),
                      MPRT_ERROR_FORMAT, "truncated.ckpt");
    EXPECT_EQ(checkpoint, nullptr);
  }
  // The intact file is still fine.
  expectCheckpoint(path, {a.get(), b.get()}, "{\"step\": 3}");
}

TEST_F(MprtCheckpoint, CorruptDataIsDetected) {
  TensorPtr a = patternTensor(MPRT_DTYPE_F32, {16}, 1);
  ASSERT_MPRT_OK(save(path, {a.get()}, nullptr));
  std::string bytes = readFile(path);
  const char *data = static_cast<const char *>(mprt_tensor_data(a.get()));
  size_t offset = bytes.find(std::string(data, 64));
  ASSERT_NE(offset, std::string::npos);
  bytes[offset + 10] ^= 0x01;
  std::string corruptPath = dir.file("corrupt.ckpt");
  writeFile(corruptPath, bytes);
  mprt_checkpoint *checkpoint = nullptr;
  EXPECT_MPRT_ERROR(mprt_checkpoint_load(corruptPath.c_str(), &checkpoint),
                    MPRT_ERROR_FORMAT, "CRC-32 mismatch");
  EXPECT_TRUE(errorMentions("corrupt.ckpt: member 't0.npy'"));
}

TEST_F(MprtCheckpoint, SaveRejectsBadArguments) {
  TensorPtr a = patternTensor(MPRT_DTYPE_F32, {2});
  const mprt_tensor *tensors[] = {a.get(), a.get()};
  {
    const char *names[] = {"__metadata__"};
    EXPECT_MPRT_ERROR(
        mprt_checkpoint_save(path.c_str(), names, tensors, 1, nullptr),
        MPRT_ERROR_ARGUMENT, "name '__metadata__' is reserved");
  }
  {
    const char *names[] = {"line\nbreak"};
    EXPECT_MPRT_ERROR(
        mprt_checkpoint_save(path.c_str(), names, tensors, 1, nullptr),
        MPRT_ERROR_ARGUMENT, "contains a newline");
  }
  {
    const char *names[] = {"w", "w"};
    EXPECT_MPRT_ERROR(
        mprt_checkpoint_save(path.c_str(), names, tensors, 2, nullptr),
        MPRT_ERROR_ARGUMENT, "duplicate name 'w'");
  }
  {
    const char *names[] = {"w"};
    const mprt_tensor *none[] = {nullptr};
    EXPECT_MPRT_ERROR(
        mprt_checkpoint_save(path.c_str(), names, none, 1, nullptr),
        MPRT_ERROR_ARGUMENT, "tensor 0 ('w') is NULL");
  }
  {
    const char *names[] = {"w"};
    EXPECT_MPRT_ERROR(mprt_checkpoint_save(nullptr, names, tensors, 1, nullptr),
                      MPRT_ERROR_ARGUMENT, "path is NULL");
    EXPECT_MPRT_ERROR(
        mprt_checkpoint_save(path.c_str(), nullptr, tensors, 1, nullptr),
        MPRT_ERROR_ARGUMENT, "names array is NULL");
  }
  EXPECT_FALSE(fileExists(path));
  EXPECT_FALSE(fileExists(path + ".tmp"));

  const char *names[] = {"w"};
  std::string missing = dir.file("no/such/dir/model.ckpt");
  EXPECT_MPRT_ERROR(
      mprt_checkpoint_save(missing.c_str(), names, tensors, 1, nullptr),
      MPRT_ERROR_IO, "No such file or directory");
  mprt_checkpoint *checkpoint = nullptr;
  EXPECT_MPRT_ERROR(mprt_checkpoint_load(missing.c_str(), &checkpoint),
                    MPRT_ERROR_IO, "No such file or directory");
}

TEST_F(MprtCheckpoint, InconsistentReservedMembers) {
  TensorPtr f32 = patternTensor(MPRT_DTYPE_F32, {2});
  TensorPtr bf16 = patternTensor(MPRT_DTYPE_BF16, {2});
  auto text = [](const std::string &contents) {
    int64_t length = static_cast<int64_t>(contents.size());
    mprt_tensor *tensor = nullptr;
    EXPECT_EQ(mprt_tensor_create(MPRT_DTYPE_U8, 1, &length, &tensor), MPRT_OK);
    memcpy(mprt_tensor_data(tensor), contents.data(), contents.size());
    return TensorPtr(tensor);
  };
  // Archives written member by member with the internal writer, so reserved
  // members can hold anything.
  auto expectLoadError = [&](std::vector<mprt::NpzMember> members,
                             mprt_status status, const char *cause) {
    SCOPED_TRACE(cause);
    ASSERT_EQ(mprt::writeNpz(path.c_str(), members, mprt::NpzWriteOptions()),
              MPRT_OK);
    mprt_checkpoint *checkpoint = nullptr;
    EXPECT_MPRT_ERROR(mprt_checkpoint_load(path.c_str(), &checkpoint), status,
                      cause);
    EXPECT_TRUE(errorMentions(path.c_str()));
  };
  TensorPtr tagW = text("bf16 w\n");
  expectLoadError({{"w", bf16.get(), true}}, MPRT_ERROR_DTYPE,
                  "unsupported dtype descr '<u2'");
  expectLoadError({{"w", f32.get(), false}, {"__dtypes__", tagW.get(), false}},
                  MPRT_ERROR_DTYPE,
                  "tagged as bf16 but stored with descr '<f4'");
  expectLoadError({{"__dtypes__", tagW.get(), false}}, MPRT_ERROR_FORMAT,
                  "tags 'w' as bf16, but there is no such member");
  TensorPtr twice = text("bf16 w\nbf16 w\n");
  expectLoadError({{"w", bf16.get(), true}, {"__dtypes__", twice.get(), false}},
                  MPRT_ERROR_FORMAT, "tags 'w' twice");
  TensorPtr unknownTag = text("f8 w\n");
  expectLoadError(
      {{"w", f32.get(), false}, {"__dtypes__", unknownTag.get(), false}},
      MPRT_ERROR_FORMAT, "unknown entry 'f8 w'");
  TensorPtr unterminated = text("bf16 w");
  expectLoadError(
      {{"w", bf16.get(), true}, {"__dtypes__", unterminated.get(), false}},
      MPRT_ERROR_FORMAT, "does not end with a newline");
  TensorPtr withNul = text(std::string("a\0b", 3));
  expectLoadError({{"__metadata__", withNul.get(), false}}, MPRT_ERROR_FORMAT,
                  "'__metadata__' contains NUL");
  expectLoadError({{"__metadata__", f32.get(), false}}, MPRT_ERROR_FORMAT,
                  "'__metadata__' is not a 1-D u8 array");
  expectLoadError({{"__future__", tagW.get(), false}}, MPRT_ERROR_FORMAT,
                  "unknown reserved member '__future__'");
}

} // namespace
