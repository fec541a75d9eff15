//===- OptionFlags.cpp - command-line flags of the declared options -------===//

#include "mp/Session/OptionFlags.h"

#include "llvm/ADT/STLExtras.h"

namespace mp {

namespace cl = llvm::cl;

namespace {
template <typename Options> llvm::ArrayRef<OptionSpec<Options>> specsOf();
template <> llvm::ArrayRef<OptionSpec<TrainOptions>> specsOf<TrainOptions>() {
  return trainOptionSpecs();
}
template <> llvm::ArrayRef<OptionSpec<InferOptions>> specsOf<InferOptions>() {
  return inferOptionSpecs();
}
} // namespace

/// One option's flag: a list for a list option, a value that may be left
/// out for a flag option ("--qat"), else a value.
template <typename Options> struct OptionFlags<Options>::Flag {
  const OptionSpec<Options> &spec;
  std::string help;
  std::unique_ptr<cl::opt<std::string>> value;
  std::unique_ptr<cl::list<std::string>> values;

  Flag(const OptionSpec<Options> &spec, cl::OptionCategory &category)
      : spec(spec), help(describe(spec)) {
    if (spec.list) {
      values = std::make_unique<cl::list<std::string>>(
          llvm::StringRef(spec.name), cl::desc(help), cl::cat(category));
      return;
    }
    value = std::make_unique<cl::opt<std::string>>(
        llvm::StringRef(spec.name), cl::desc(help), cl::cat(category),
        spec.flag ? cl::ValueOptional : cl::ValueRequired);
  }

  static std::string describe(const OptionSpec<Options> &spec) {
    std::string text = spec.help;
    std::string initial = spec.print(Options());
    if (!spec.list && !initial.empty())
      text += " (default: " + initial + ")";
    return text;
  }

  int occurrences() const {
    return values ? values->getNumOccurrences() : value->getNumOccurrences();
  }
};

template <typename Options>
OptionFlags<Options>::OptionFlags(cl::OptionCategory &category,
                                  llvm::ArrayRef<llvm::StringRef> exclude) {
  for (const OptionSpec<Options> &spec : specsOf<Options>())
    if (spec.scope != OptionScope::Derived &&
        !llvm::is_contained(exclude, spec.name))
      flags.push_back(std::make_unique<Flag>(spec, category));
}

template <typename Options> OptionFlags<Options>::~OptionFlags() = default;

template <typename Options>
bool OptionFlags<Options>::apply(Options &options, std::string &error) const {
  for (const std::unique_ptr<Flag> &flag : flags) {
    if (!flag->occurrences())
      continue;
    if (flag->values) {
      flag->spec.reset(options);
      for (const std::string &value : *flag->values)
        if (!flag->spec.parse(options, flag->spec.name, value, error))
          return false;
    } else if (!flag->spec.parse(options, flag->spec.name, *flag->value,
                                 error)) {
      return false;
    }
  }
  return true;
}

template <typename Options>
std::vector<std::string> OptionFlags<Options>::given() const {
  std::vector<std::string> names;
  for (const std::unique_ptr<Flag> &flag : flags)
    if (flag->occurrences())
      names.push_back(flag->spec.name.str());
  return names;
}

template <typename Options>
bool OptionFlags<Options>::wasGiven(llvm::StringRef name) const {
  return llvm::any_of(flags, [&](const std::unique_ptr<Flag> &flag) {
    return flag->spec.name == name && flag->occurrences();
  });
}

template class OptionFlags<TrainOptions>;
template class OptionFlags<InferOptions>;

} // namespace mp
