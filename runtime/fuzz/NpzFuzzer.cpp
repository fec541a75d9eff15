//===- NpzFuzzer.cpp - fuzz target for the .npz reader --------------------===//
//
// Opens the input with mprt_npz_open_buffer and reads every member (by its
// name, which also covers lookups). When every member reads, the archive is
// written again and must read back the same.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include <vector>

using namespace mprt_fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mprt_npz *npz = reinterpret_cast<mprt_npz *>(1);
  mprt_status status = mprt_npz_open_buffer(data, size, &npz);
  checkStatus(status, npz);
  if (status != MPRT_OK)
    return 0;

  size_t count = mprt_npz_count(npz);
  require(mprt_npz_name(npz, count) == nullptr, "name past the end");
  std::vector<std::string> names;
  std::vector<mprt_tensor *> tensors;
  bool allRead = true;
  for (size_t i = 0; i < count; ++i) {
    const char *name = mprt_npz_name(npz, i);
    require(name != nullptr, "NULL member name");
    mprt_tensor *tensor = reinterpret_cast<mprt_tensor *>(1);
    status = mprt_npz_get(npz, name, &tensor);
    checkStatus(status, tensor);
    if (status != MPRT_OK) {
      allRead = false;
      continue;
    }
    checkTensor(tensor);
    names.push_back(name);
    tensors.push_back(tensor);
  }
  mprt_tensor *missing = reinterpret_cast<mprt_tensor *>(1);
  status = mprt_npz_get(npz, "no such member \x01", &missing);
  checkStatus(status, missing);
  mprt_npz_close(npz);

  // Duplicate names (possible in a zip) cannot be written; skip those.
  if (allRead && count > 0) {
    std::vector<const char *> nameArray;
    for (const std::string &name : names)
      nameArray.push_back(name.c_str());
    std::string path = scratchDir() + "/roundtrip.npz";
    status =
        mprt_npz_write(path.c_str(), nameArray.data(), tensors.data(), count);
    checkWriteStatus(status);
    if (status == MPRT_OK) {
      mprt_npz *again = nullptr;
      status = mprt_npz_open(path.c_str(), &again);
      require(status == MPRT_OK, "mprt_npz_write wrote an unreadable archive");
      require(mprt_npz_count(again) == count, "round trip changed the count");
      for (size_t i = 0; i < count; ++i) {
        mprt_tensor *tensor = nullptr;
        require(mprt_npz_get(again, nameArray[i], &tensor) == MPRT_OK,
                "round trip lost a member");
        require(sameTensor(tensor, tensors[i]),
                ".npz round trip changed a tensor");
        mprt_tensor_free(tensor);
      }
      mprt_npz_close(again);
    }
  }
  for (mprt_tensor *tensor : tensors)
    mprt_tensor_free(tensor);
  return 0;
}
