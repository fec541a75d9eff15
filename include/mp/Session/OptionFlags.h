//===- OptionFlags.h - command-line flags of the declared options -*- C++
//-*-===//
//
// mp-run's and mp-compile's --flags for the options of TrainOptions.def and
// InferOptions.def: one flag a row, with the row's name, help and default,
// read through the row's own text form. A tool registers them before it
// parses its command line and applies the ones given; it declares none of
// them itself.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SESSION_OPTIONFLAGS_H
#define MP_SESSION_OPTIONFLAGS_H

#include "mp/Session/Options.h"

#include "llvm/Support/CommandLine.h"

#include <memory>
#include <string>
#include <vector>

namespace mp {

template <typename Options> class OptionFlags {
public:
  /// Registers a flag in `category` for every option but the derived ones
  /// and those `exclude` names (a tool that does not take them, that reads
  /// them its own way, or whose other table has a flag of that name).
  explicit OptionFlags(llvm::cl::OptionCategory &category,
                       llvm::ArrayRef<llvm::StringRef> exclude = {});
  ~OptionFlags();

  /// Sets the options whose flags were given; false with the option's
  /// error (the flag's name and what it takes).
  bool apply(Options &options, std::string &error) const;
  /// The names of the flags given, in the table's order.
  std::vector<std::string> given() const;
  bool wasGiven(llvm::StringRef name) const;

private:
  struct Flag;
  std::vector<std::unique_ptr<Flag>> flags;
};

using TrainOptionFlags = OptionFlags<TrainOptions>;
using InferOptionFlags = OptionFlags<InferOptions>;
extern template class OptionFlags<TrainOptions>;
extern template class OptionFlags<InferOptions>;

} // namespace mp

#endif // MP_SESSION_OPTIONFLAGS_H
