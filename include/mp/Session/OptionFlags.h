//===- OptionFlags.h - command-line flags of the declared options -*- C++ -*-===//
//
// mp-run's and mp-compile's --flags for the options of TrainOptions.def:
// one flag a row, with the row's name, help and default, read through the
// row's own text form. A tool registers them before it parses its command
// line and applies the ones given; it declares none of them itself.
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

class TrainOptionFlags {
public:
  /// Registers a flag in `category` for every option but those `exclude`
  /// names (a tool that does not take them, or that reads them its own
  /// way).
  explicit TrainOptionFlags(llvm::cl::OptionCategory &category,
                            llvm::ArrayRef<llvm::StringRef> exclude = {});
  ~TrainOptionFlags();

  /// Sets the options whose flags were given; false with the option's
  /// error (the flag's name and what it takes).
  bool apply(TrainOptions &options, std::string &error) const;
  /// The names of the flags given, in the table's order.
  std::vector<std::string> given() const;
  bool wasGiven(llvm::StringRef name) const;

private:
  struct Flag;
  std::vector<std::unique_ptr<Flag>> flags;
};

} // namespace mp

#endif // MP_SESSION_OPTIONFLAGS_H
