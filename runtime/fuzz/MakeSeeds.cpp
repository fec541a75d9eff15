//===- MakeSeeds.cpp - seed corpus for libmprt's fuzz targets -------------===//
//
// mprt-fuzz-seeds DIR writes files the runtime itself produces into DIR/npy,
// DIR/npz and DIR/checkpoint: every dtype, scalars, empty and rank-3
// tensors, a version 2.0 header, forced Zip64 archives, bf16 checkpoints
// with metadata. Small on purpose: fuzzers mutate small inputs fastest.
//
//===----------------------------------------------------------------------===//

#include "../src/internal.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace {

void check(mprt_status status, const char *what) {
  if (status != MPRT_OK) {
    fprintf(stderr, "mprt-fuzz-seeds: %s: %s\n", what, mprt_last_error());
    exit(1);
  }
}

/// A tensor whose bytes count up from `start`.
mprt_tensor *makeTensor(mprt_dtype dtype, std::vector<int64_t> shape,
                        unsigned start = 1) {
  mprt_tensor *tensor;
  check(mprt_tensor_create(dtype, shape.size(), shape.data(), &tensor),
        "create");
  auto *bytes = static_cast<unsigned char *>(mprt_tensor_data(tensor));
  for (size_t i = 0; i < mprt_tensor_byte_size(tensor); ++i)
    bytes[i] = static_cast<unsigned char>(start + i * 7);
  return tensor;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: mprt-fuzz-seeds DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  for (const char *sub : {"", "/npy", "/npz", "/checkpoint"})
    mkdir((dir + sub).c_str(), 0755);

  // .npy: each dtype NumPy has, a scalar, an empty and a rank-3 tensor, and
  // a header long enough for format 2.0.
  const mprt_dtype npyTypes[] = {MPRT_DTYPE_F32, MPRT_DTYPE_F16, MPRT_DTYPE_F64,
                                 MPRT_DTYPE_I32, MPRT_DTYPE_I64, MPRT_DTYPE_U8,
                                 MPRT_DTYPE_I8};
  for (mprt_dtype dtype : npyTypes) {
    mprt_tensor *tensor = makeTensor(dtype, {2, 3});
    std::string path = dir + "/npy/" + mprt_dtype_name(dtype) + "-2x3.npy";
    check(mprt_npy_write(path.c_str(), tensor), path.c_str());
    mprt_tensor_free(tensor);
  }
  struct Shaped {
    const char *name;
    std::vector<int64_t> shape;
  } shapes[] = {{"scalar", {}}, {"empty", {0, 4}}, {"rank3", {2, 1, 3}}};
  for (const Shaped &shaped : shapes) {
    mprt_tensor *tensor = makeTensor(MPRT_DTYPE_F32, shaped.shape);
    std::string path = dir + "/npy/f32-" + shaped.name + ".npy";
    check(mprt_npy_write(path.c_str(), tensor), path.c_str());
    mprt_tensor_free(tensor);
  }
  {
    // The longest header a shape can make: rank 64, large extents, and a
    // zero extent so that the tensor is empty.
    std::vector<int64_t> shape(MPRT_MAX_RANK, 1000000000000LL);
    shape[0] = 0;
    mprt_tensor *tensor = makeTensor(MPRT_DTYPE_U8, shape);
    std::string path = dir + "/npy/u8-rank64-empty.npy";
    check(mprt_npy_write(path.c_str(), tensor), path.c_str());
    mprt_tensor_free(tensor);
  }

  // .npz: one member, several members, an empty archive, forced Zip64.
  mprt_tensor *w = makeTensor(MPRT_DTYPE_F32, {2, 2});
  mprt_tensor *b = makeTensor(MPRT_DTYPE_I64, {3}, 5);
  mprt_tensor *s = makeTensor(MPRT_DTYPE_F16, {});
  {
    const char *names[] = {"w"};
    const mprt_tensor *tensors[] = {w};
    check(mprt_npz_write((dir + "/npz/one.npz").c_str(), names, tensors, 1),
          "one.npz");
  }
  {
    const char *names[] = {"w", "b", "s"};
    const mprt_tensor *tensors[] = {w, b, s};
    check(mprt_npz_write((dir + "/npz/three.npz").c_str(), names, tensors, 3),
          "three.npz");
    check(mprt_npz_write((dir + "/npz/empty.npz").c_str(), names, tensors, 0),
          "empty.npz");
    std::vector<mprt::NpzMember> members = {
        {"w", w, false}, {"b", b, false}, {"s", s, false}};
    mprt::NpzWriteOptions options;
    options.forceZip64 = true;
    check(mprt::writeNpz((dir + "/npz/zip64.npz").c_str(), members, options),
          "zip64.npz");
  }

  // Checkpoints: plain, with bf16 tensors (the __dtypes__ member) and with
  // metadata; one with Zip64 records.
  mprt_tensor *h = makeTensor(MPRT_DTYPE_BF16, {2, 3}, 9);
  {
    const char *names[] = {"w", "b"};
    const mprt_tensor *tensors[] = {w, b};
    check(mprt_checkpoint_save((dir + "/checkpoint/plain.ckpt").c_str(), names,
                               tensors, 2, nullptr),
          "plain.ckpt");
  }
  {
    const char *names[] = {"w", "h", "s"};
    const mprt_tensor *tensors[] = {w, h, s};
    check(mprt_checkpoint_save((dir + "/checkpoint/bf16-meta.ckpt").c_str(),
                               names, tensors, 3,
                               "{\"epoch\": 3, \"seed\": 1}"),
          "bf16-meta.ckpt");
    check(mprt_checkpoint_save((dir + "/checkpoint/meta-only.ckpt").c_str(),
                               names, tensors, 0, ""),
          "meta-only.ckpt");
  }
  {
    mprt_tensor *dtypes;
    const char tags[] = "bf16 h\n";
    int64_t length = sizeof(tags) - 1;
    check(mprt_tensor_create(MPRT_DTYPE_U8, 1, &length, &dtypes), "tags");
    memcpy(mprt_tensor_data(dtypes), tags, sizeof(tags) - 1);
    std::vector<mprt::NpzMember> members = {
        {"h", h, true}, {"w", w, false}, {"__dtypes__", dtypes, false}};
    mprt::NpzWriteOptions options;
    options.forceZip64 = true;
    check(mprt::writeNpz((dir + "/checkpoint/bf16-zip64.ckpt").c_str(), members,
                         options),
          "bf16-zip64.ckpt");
    mprt_tensor_free(dtypes);
  }
  // Archives are also checkpoints: the npz seeds serve both.
  for (const char *name : {"one", "three", "zip64"}) {
    std::string from = dir + "/npz/" + name + ".npz";
    std::string to = dir + "/checkpoint/" + name + ".npz";
    FILE *in = fopen(from.c_str(), "rb");
    FILE *out = fopen(to.c_str(), "wb");
    if (!in || !out) {
      fprintf(stderr, "mprt-fuzz-seeds: cannot copy %s\n", from.c_str());
      return 1;
    }
    char buffer[4096];
    size_t got;
    while ((got = fread(buffer, 1, sizeof(buffer), in)) > 0)
      fwrite(buffer, 1, got, out);
    fclose(in);
    fclose(out);
  }
  for (mprt_tensor *tensor : {w, b, s, h})
    mprt_tensor_free(tensor);
  return 0;
}
