//===- OptionTable.h - option tables from their declarations ---*- C++ -*-===//
//
// What TrainOptions.def and InferOptions.def share: the text codec of each
// member type, and the options string, printing, JSON and lookup over a
// table of OptionSpec rows. Private to lib/Session.
//
//===----------------------------------------------------------------------===//

#ifndef MP_LIB_SESSION_OPTIONTABLE_H
#define MP_LIB_SESSION_OPTIONTABLE_H

#include "mp/Session/Options.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace mp {
namespace option_table {

inline bool badValue(llvm::StringRef name, llvm::StringRef text,
                     llvm::StringRef expected, std::string &error) {
  error = "bad --" + name.str() + " '" + text.str() + "': expected " +
          expected.str();
  return false;
}

/// How a value of one C++ type reads from and prints to text. kFlag: the
/// value may be left out (true).
template <typename T> struct Codec;

template <> struct Codec<double> {
  static constexpr bool kFlag = false, kList = false;
  static bool parse(llvm::StringRef name, llvm::StringRef text, double &value,
                    std::string &error) {
    std::string digits = text.str();
    char *end = nullptr;
    double parsed = std::strtod(digits.c_str(), &end);
    if (digits.empty() || *end != '\0' || !std::isfinite(parsed))
      return badValue(name, text, "a finite number", error);
    value = parsed;
    return true;
  }
  static std::string print(double value) {
    // The shortest text that reads back as the same double.
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
    return std::string(buffer, ec == std::errc() ? end : buffer);
  }
};

template <typename Integer> struct IntegerCodec {
  static constexpr bool kFlag = false, kList = false;
  static bool parse(llvm::StringRef name, llvm::StringRef text, Integer &value,
                    std::string &error) {
    Integer parsed;
    if (text.getAsInteger(10, parsed))
      return badValue(name, text,
                      std::is_signed_v<Integer> ? "an integer"
                                                : "a non-negative integer",
                      error);
    value = parsed;
    return true;
  }
  static std::string print(Integer value) { return std::to_string(value); }
};
template <> struct Codec<int64_t> : IntegerCodec<int64_t> {};
template <> struct Codec<uint64_t> : IntegerCodec<uint64_t> {};

template <> struct Codec<bool> {
  static constexpr bool kFlag = true, kList = false;
  static bool parse(llvm::StringRef name, llvm::StringRef text, bool &value,
                    std::string &error) {
    if (text.empty() || text == "true" || text == "1" || text == "on") {
      value = true;
      return true;
    }
    if (text == "false" || text == "0" || text == "off") {
      value = false;
      return true;
    }
    return badValue(name, text, "true or false", error);
  }
  static std::string print(bool value) { return value ? "true" : "false"; }
};

/// Unset is "auto"; the flag alone means true.
template <> struct Codec<std::optional<bool>> {
  static constexpr bool kFlag = true, kList = false;
  static bool parse(llvm::StringRef name, llvm::StringRef text,
                    std::optional<bool> &value, std::string &error) {
    if (text == "auto") {
      value.reset();
      return true;
    }
    bool parsed = false;
    if (!Codec<bool>::parse(name, text, parsed, error))
      return badValue(name, text, "true, false or auto", error);
    value = parsed;
    return true;
  }
  static std::string print(const std::optional<bool> &value) {
    return value ? Codec<bool>::print(*value) : "auto";
  }
};

/// A path or any other text, as given.
template <> struct Codec<std::string> {
  static constexpr bool kFlag = false, kList = false;
  static bool parse(llvm::StringRef, llvm::StringRef text, std::string &value,
                    std::string &) {
    value = text.str();
    return true;
  }
  static std::string print(const std::string &value) { return value; }
};

/// Each value given appends its comma-separated elements.
template <> struct Codec<std::vector<std::string>> {
  static constexpr bool kFlag = false, kList = true;
  static bool parse(llvm::StringRef, llvm::StringRef text,
                    std::vector<std::string> &value, std::string &) {
    llvm::SmallVector<llvm::StringRef> elements;
    text.split(elements, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
    for (llvm::StringRef element : elements)
      value.push_back(element.trim().str());
    return true;
  }
  static std::string print(const std::vector<std::string> &value) {
    return llvm::join(value, ",");
  }
};

/// An enum or a struct with parse and print functions of its own (they
/// name their flag in their messages).
template <typename T, auto Parse, auto Print> struct FunctionCodec {
  static constexpr bool kFlag = false, kList = false;
  static bool parse(llvm::StringRef, llvm::StringRef text, T &value,
                    std::string &error) {
    return Parse(text, value, error);
  }
  static std::string print(const T &value) { return Print(value); }
};

inline std::string printOptimizer(OptimizerAlgorithm value) {
  return mlir::mp::stringifyOptimizerAlgorithm(value).str();
}
inline std::string printWeightCopies(WeightCopies value) {
  return stringifyWeightCopies(value).str();
}
inline std::string printDevice(Device value) {
  return stringifyDevice(value).str();
}
inline std::string printLossScale(const LossScaleOption &value) {
  return value.str();
}
inline std::string
printLossKind(const std::optional<mlir::mp::LossKind> &value) {
  return value ? mlir::mp::stringifyLossKind(*value).str() : "";
}

inline std::string printQuantMethod(QuantizationMethod value) {
  return mlir::mp::stringifyQuantizationMethod(value).str();
}

template <>
struct Codec<QuantizationMethod>
    : FunctionCodec<QuantizationMethod, parseQuantMethod, printQuantMethod> {};
template <>
struct Codec<OptimizerAlgorithm>
    : FunctionCodec<OptimizerAlgorithm, parseOptimizer, printOptimizer> {};
template <>
struct Codec<WeightCopies>
    : FunctionCodec<WeightCopies, parseWeightCopies, printWeightCopies> {};
template <>
struct Codec<Device> : FunctionCodec<Device, parseDevice, printDevice> {};
template <>
struct Codec<LossScaleOption>
    : FunctionCodec<LossScaleOption, parseLossScale, printLossScale> {};
template <>
struct Codec<std::optional<mlir::mp::LossKind>>
    : FunctionCodec<std::optional<mlir::mp::LossKind>, parseLossKind,
                    printLossKind> {};

/// The class and type of a pointer to a data member.
template <typename> struct MemberPointerTraits;
template <typename Class, typename T> struct MemberPointerTraits<T Class::*> {
  using Owner = Class;
  using Value = T;
};

/// A member of an options struct read and printed by its type's codec.
template <auto Member> struct MemberCodec {
  using Owner = typename MemberPointerTraits<decltype(Member)>::Owner;
  using Value = typename MemberPointerTraits<decltype(Member)>::Value;
  static bool parse(Owner &options, llvm::StringRef name, llvm::StringRef text,
                    std::string &error) {
    return Codec<Value>::parse(name, text, options.*Member, error);
  }
  static std::string print(const Owner &options) {
    return Codec<Value>::print(options.*Member);
  }
  static void reset(Owner &options) { options.*Member = Owner().*Member; }
};

/// "a=1 b=2": a value runs to the next space, or is quoted.
struct Assignment {
  llvm::StringRef name, value;
  bool hasValue = false;
};

inline bool nextAssignment(llvm::StringRef &text, Assignment &out,
                           std::string &error) {
  text = text.ltrim();
  size_t nameEnd = text.find_first_of("= \t\n");
  out.name = text.take_front(nameEnd);
  text = text.drop_front(out.name.size());
  out.hasValue = text.consume_front("=");
  out.value = {};
  if (!out.hasValue)
    return true;
  if (!text.empty() && (text.front() == '"' || text.front() == '\'')) {
    char quote = text.front();
    size_t close = text.find(quote, 1);
    if (close == llvm::StringRef::npos) {
      error = "options: unterminated " + std::string(1, quote) + " after '" +
              out.name.str() + "='";
      return false;
    }
    out.value = text.slice(1, close);
    text = text.drop_front(close + 1);
    return true;
  }
  out.value = text.take_until([](char c) { return llvm::isSpace(c); });
  text = text.drop_front(out.value.size());
  return true;
}

inline std::string quoted(const std::string &value) {
  if (!value.empty() && value.find_first_of(" \t\n\"'") == std::string::npos)
    return value;
  char quote = value.find('"') == std::string::npos ? '"' : '\'';
  return quote + value + quote;
}

/// A table of one options struct's rows.
template <typename Options> struct Table {
  llvm::ArrayRef<OptionSpec<Options>> rows;
  /// What the messages call an option ("option", "inference option").
  const char *noun;

  const OptionSpec<Options> *find(llvm::StringRef name) const {
    for (const OptionSpec<Options> &spec : rows)
      if (spec.name == name)
        return &spec;
    return nullptr;
  }

  std::string names() const {
    std::vector<std::string> all;
    for (const OptionSpec<Options> &spec : rows)
      all.push_back(spec.name.str());
    return llvm::join(all, ", ");
  }

  bool set(Options &options, llvm::StringRef name, llvm::StringRef value,
           std::string &error) const {
    const OptionSpec<Options> *spec = find(name);
    if (!spec) {
      error = "unknown " + std::string(noun) + " '" + name.str() +
              "' (options: " + names() + ")";
      return false;
    }
    return spec->parse(options, name, value, error);
  }

  bool parse(llvm::StringRef text, Options &options, std::string &error) const {
    Assignment assignment;
    llvm::StringSet<> seen;
    while (!text.trim().empty()) {
      if (!nextAssignment(text, assignment, error))
        return false;
      const OptionSpec<Options> *spec = find(assignment.name);
      if (spec && !assignment.hasValue && !spec->flag) {
        error = "option '" + assignment.name.str() + "' needs a value (" +
                assignment.name.str() + "=...)";
        return false;
      }
      // A list the string names is the string's: its first mention
      // replaces what the options held, later ones add to it.
      if (spec && spec->list && seen.insert(assignment.name).second)
        spec->reset(options);
      if (!set(options, assignment.name, assignment.value, error))
        return false;
    }
    return true;
  }

  std::string print(const Options &options,
                    llvm::ArrayRef<OptionScope> scopes) const {
    std::vector<std::string> parts;
    for (const OptionSpec<Options> &spec : rows)
      if (scopes.empty() || llvm::is_contained(scopes, spec.scope))
        parts.push_back(spec.name.str() + "=" + quoted(spec.print(options)));
    return llvm::join(parts, " ");
  }

  llvm::json::Object json(const Options &options, OptionScope scope) const {
    llvm::json::Object object;
    for (const OptionSpec<Options> &spec : rows)
      if (spec.scope == scope)
        object[spec.name] = spec.print(options);
    return object;
  }

  bool readJson(const llvm::json::Object &object, Options &options,
                std::string &error) const {
    for (const auto &[name, value] : object) {
      std::optional<llvm::StringRef> text = value.getAsString();
      if (!text) {
        error = "option '" + name.str() + "' is not a string";
        return false;
      }
      if (const OptionSpec<Options> *spec = find(name))
        spec->reset(options);
      if (!set(options, name, *text, error))
        return false;
    }
    return true;
  }
};

/// The cache rows of both tables.
template <typename Options> struct CacheCodec {
  static constexpr bool kFlag = true;
  static bool parse(Options &options, llvm::StringRef name,
                    llvm::StringRef text, std::string &error) {
    return Codec<bool>::parse(name, text, options.cache.enabled, error);
  }
  static std::string print(const Options &options) {
    return Codec<bool>::print(options.cache.enabled);
  }
  static void reset(Options &options) {
    options.cache.enabled = Options().cache.enabled;
  }
};

template <typename Options> struct CacheDirCodec {
  static constexpr bool kFlag = false;
  static bool parse(Options &options, llvm::StringRef, llvm::StringRef text,
                    std::string &) {
    options.cache.dir = text.str();
    return true;
  }
  static std::string print(const Options &options) { return options.cache.dir; }
  static void reset(Options &options) { options.cache.dir.clear(); }
};

} // namespace option_table
} // namespace mp

#endif // MP_LIB_SESSION_OPTIONTABLE_H
