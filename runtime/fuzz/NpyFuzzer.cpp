//===- NpyFuzzer.cpp - fuzz target for the .npy reader --------------------===//
//
// Parses the input with mprt_npy_read_buffer. What parses must survive a
// write and a re-read unchanged (for dtypes .npy can hold).
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

using namespace mprt_fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mprt_tensor *tensor = reinterpret_cast<mprt_tensor *>(1);
  mprt_status status = mprt_npy_read_buffer(data, size, &tensor);
  checkStatus(status, tensor);
  if (status != MPRT_OK)
    return 0;
  checkTensor(tensor);

  std::string path = scratchDir() + "/roundtrip.npy";
  status = mprt_npy_write(path.c_str(), tensor);
  require(status == MPRT_OK, "a tensor read from .npy cannot be written back");
  mprt_tensor *again = nullptr;
  status = mprt_npy_read(path.c_str(), &again);
  checkStatus(status, again);
  require(status == MPRT_OK, "mprt_npy_write wrote a file it cannot read");
  require(sameTensor(tensor, again), ".npy round trip changed the tensor");
  mprt_tensor_free(again);
  mprt_tensor_free(tensor);
  return 0;
}
