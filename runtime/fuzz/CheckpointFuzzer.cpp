//===- CheckpointFuzzer.cpp - fuzz target for the checkpoint loader -------===//
//
// mprt_checkpoint_load reads files, so the input goes to a scratch file
// first. What loads is looked up by every name, saved again and must load
// back the same (bf16 tags and metadata included).
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include <vector>

using namespace mprt_fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = scratchDir() + "/input.ckpt";
  writeFile(path, data, size);
  mprt_checkpoint *checkpoint = reinterpret_cast<mprt_checkpoint *>(1);
  mprt_status status = mprt_checkpoint_load(path.c_str(), &checkpoint);
  checkStatus(status, checkpoint);
  if (status != MPRT_OK)
    return 0;

  size_t count = mprt_checkpoint_count(checkpoint);
  require(mprt_checkpoint_name(checkpoint, count) == nullptr &&
              mprt_checkpoint_tensor(checkpoint, count) == nullptr,
          "entry past the end");
  std::vector<const char *> names;
  std::vector<const mprt_tensor *> tensors;
  bool unique = true;
  for (size_t i = 0; i < count; ++i) {
    const char *name = mprt_checkpoint_name(checkpoint, i);
    const mprt_tensor *tensor = mprt_checkpoint_tensor(checkpoint, i);
    require(name != nullptr && tensor != nullptr, "NULL entry");
    checkTensor(tensor);
    const mprt_tensor *found = nullptr;
    status = mprt_checkpoint_find(checkpoint, name, &found);
    require(status == MPRT_OK, "a listed name is not found");
    // With duplicate names, find returns one of them.
    if (found != tensor)
      unique = false;
    names.push_back(name);
    tensors.push_back(tensor);
  }
  const char *metadata = mprt_checkpoint_metadata(checkpoint);

  if (unique) {
    std::string saved = scratchDir() + "/roundtrip.ckpt";
    status = mprt_checkpoint_save(saved.c_str(), names.data(), tensors.data(),
                                  count, metadata);
    checkWriteStatus(status);
    if (status == MPRT_OK) {
      mprt_checkpoint *again = nullptr;
      status = mprt_checkpoint_load(saved.c_str(), &again);
      require(status == MPRT_OK, "a saved checkpoint does not load");
      require(mprt_checkpoint_count(again) == count,
              "round trip changed the count");
      for (size_t i = 0; i < count; ++i) {
        require(strcmp(mprt_checkpoint_name(again, i), names[i]) == 0,
                "round trip changed the order");
        require(sameTensor(mprt_checkpoint_tensor(again, i), tensors[i]),
                "checkpoint round trip changed a tensor");
      }
      const char *metadataAgain = mprt_checkpoint_metadata(again);
      require((metadata == nullptr) == (metadataAgain == nullptr) &&
                  (!metadata || strcmp(metadata, metadataAgain) == 0),
              "round trip changed the metadata");
      mprt_checkpoint_free(again);
    }
  }
  mprt_checkpoint_free(checkpoint);
  return 0;
}
