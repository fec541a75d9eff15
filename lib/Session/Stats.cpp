//===- Stats.cpp - a training run's history as a JSON file ----------------===//

#include "mp/Session/Stats.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <charconv>
#include <cmath>

namespace mp {

StatsHeader describeRun(const std::string &model, const TrainOptions &options) {
  StatsHeader header;
  header.model = model;
  header.precision = mlir::mp::stringifyFloatPrecision(options.precision).str();
  LossScalingMode mode;
  std::string ignored;
  if (!resolveLossScale(options.lossScale, options.precision, mode, ignored))
    mode = options.lossScale.mode;
  LossScaleOption resolved = options.lossScale;
  resolved.mode = mode;
  header.lossScale = resolved.str();
  return header;
}

namespace {

/// The shortest text that reads back as the same value; JSON has no
/// NaN or infinity, so those are strings.
template <typename T> void writeNumber(llvm::json::OStream &j, T value) {
  if (std::isnan(value))
    return j.value("nan");
  if (std::isinf(value))
    return j.value(value > 0 ? "inf" : "-inf");
  char text[48];
  auto [end, ec] = std::to_chars(text, text + sizeof(text), value);
  j.rawValue(llvm::StringRef(text, ec == std::errc() ? end - text : 0));
}

template <typename T>
void numberAttribute(llvm::json::OStream &j, llvm::StringRef key, T value) {
  j.attributeBegin(key);
  writeNumber(j, value);
  j.attributeEnd();
}

/// One object per line inside the top level, so that the file reads (and
/// diffs) a step a line.
void writeContents(llvm::raw_ostream &os, const StatsHeader &header,
                   const StabilityMonitor &monitor,
                   const std::vector<EpochReport> &epochs) {
  using Body = llvm::function_ref<void(llvm::json::OStream &)>;
  bool first = true;
  auto key = [&](llvm::StringRef name) {
    os << (first ? "{\n  " : ",\n  ");
    first = false;
    llvm::json::OStream(os).value(name);
    os << ": ";
  };
  auto field = [&](llvm::StringRef name, Body body) {
    key(name);
    llvm::json::OStream j(os);
    body(j);
  };
  auto list =
      [&](llvm::StringRef name, size_t size,
          llvm::function_ref<void(llvm::json::OStream &, size_t)> item) {
        key(name);
        os << "[";
        for (size_t i = 0; i < size; ++i) {
          os << (i ? ",\n    " : "\n    ");
          llvm::json::OStream j(os);
          j.object([&] { item(j, i); });
        }
        os << (size ? "\n  ]" : "]");
      };

  field("version", [&](auto &j) { j.value(kStatsVersion); });
  field("model", [&](auto &j) { j.value(header.model); });
  field("precision", [&](auto &j) { j.value(header.precision); });
  field("loss_scale", [&](auto &j) { j.value(header.lossScale); });
  field("monitor", [&](llvm::json::OStream &j) {
    const MonitorOptions &o = header.options;
    j.object([&] {
      j.attribute("checks", header.checks);
      j.attribute("history", o.historyLength);
      numberAttribute(j, "spike_factor", o.spikeFactor);
      j.attribute("overflow_window", o.overflowWindow);
      j.attribute("overflow_limit", o.overflowLimit);
      j.attribute("underflow_steps", o.underflowSteps);
    });
  });
  const std::vector<StepRecord> &steps = monitor.steps();
  list("steps", steps.size(), [&](llvm::json::OStream &j, size_t i) {
    const StepRecord &r = steps[i];
    j.attribute("step", r.step);
    j.attribute("epoch", r.epoch);
    numberAttribute(j, "loss", r.loss);
    if (r.optimizerStep)
      numberAttribute(j, "grad_norm", r.gradNorm);
    else
      j.attribute("grad_norm", nullptr);
    numberAttribute(j, "scale", r.scale);
    j.attribute("skipped", r.optimizerStep && !r.stepped);
    j.attribute("optimizer_step", r.optimizerStep);
  });
  const std::vector<StabilityReport> &reports = monitor.reports();
  list("reports", reports.size(), [&](llvm::json::OStream &j, size_t i) {
    const StabilityReport &r = reports[i];
    j.attribute("step", r.step);
    j.attribute("issue", stringifyStabilityIssue(r.issue));
    j.attribute("message", r.message);
    if (!r.op.empty())
      j.attribute("op", r.op);
  });
  const std::vector<PrecisionChange> &changes = monitor.precisionChanges();
  list("precision_changes", changes.size(),
       [&](llvm::json::OStream &j, size_t i) {
         j.attribute("step", changes[i].step);
         j.attribute("change", changes[i].change);
         j.attributeArray("kept_f32", [&] {
           for (const std::string &location : changes[i].keptF32)
             j.value(location);
         });
       });
  list("epochs", epochs.size(), [&](llvm::json::OStream &j, size_t i) {
    const EpochReport &e = epochs[i];
    j.attribute("epoch", e.epoch);
    numberAttribute(j, "loss", e.meanLoss);
    if (e.accuracy >= 0)
      numberAttribute(j, "accuracy", e.accuracy);
    else
      j.attribute("accuracy", nullptr);
    j.attribute("skipped", e.skipped);
    numberAttribute(j, "scale", e.scale);
  });
  os << "\n}\n";
}

} // namespace

bool writeStats(const std::string &path, const StatsHeader &header,
                const StabilityMonitor &monitor,
                const std::vector<EpochReport> &epochs, std::string &error) {
  auto failed = [&](const std::string &why) {
    error = "cannot write stats file '" + path + "': " + why;
    return false;
  };
  // Written next to the file, then renamed over it: a reader (or a run
  // killed now) sees the old file or the new one, never half of one.
  llvm::SmallString<256> temp;
  int fd;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%", fd, temp))
    return failed(ec.message());
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    writeContents(os, header, monitor, epochs);
    os.close();
    if (os.has_error()) {
      std::string why = os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(temp);
      return failed(why);
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    return failed(ec.message());
  }
  return true;
}

namespace {

/// A number as writeNumber wrote it (a number, or "nan"/"inf"/"-inf").
std::optional<double> readNumber(const llvm::json::Value *value) {
  if (!value)
    return std::nullopt;
  if (std::optional<double> number = value->getAsNumber())
    return number;
  if (std::optional<llvm::StringRef> text = value->getAsString()) {
    if (*text == "nan")
      return NAN;
    if (*text == "inf")
      return INFINITY;
    if (*text == "-inf")
      return -INFINITY;
  }
  return std::nullopt;
}

/// A number field of a stats file (readNumber), for ObjectMapper.
struct StatsNumber {
  double value = 0;
};

bool fromJSON(const llvm::json::Value &json, StatsNumber &number,
              llvm::json::Path path) {
  std::optional<double> value = readNumber(&json);
  if (!value) {
    path.report("expected a number, \"nan\", \"inf\" or \"-inf\"");
    return false;
  }
  number.value = *value;
  return true;
}

/// A step's record: step, loss, grad_norm, scale and skipped required.
bool fromJSON(const llvm::json::Value &json, StepRecord &r,
              llvm::json::Path path) {
  llvm::json::ObjectMapper o(json, path);
  if (!o)
    return false;
  const llvm::json::Object &object = *json.getAsObject();
  r.optimizerStep = object.getBoolean("optimizer_step").value_or(true);
  // null for a micro-batch that only accumulated
  StatsNumber loss, norm{NAN}, scale;
  bool skipped = false;
  if (!o.map("step", r.step) || !o.map("loss", loss) ||
      (r.optimizerStep && !o.map("grad_norm", norm)) ||
      !o.map("scale", scale) || !o.map("skipped", skipped))
    return false;
  r.epoch = object.getInteger("epoch").value_or(0);
  r.loss = loss.value;
  r.gradNorm = norm.value;
  r.scale = scale.value;
  r.stepped = !skipped;
  return true;
}

/// A report: its step and a known issue required.
bool fromJSON(const llvm::json::Value &json, StabilityReport &r,
              llvm::json::Path path) {
  llvm::json::ObjectMapper o(json, path);
  std::string issue;
  if (!o || !o.map("step", r.step) || !o.map("issue", issue))
    return false;
  std::optional<StabilityIssue> kind = symbolizeStabilityIssue(issue);
  if (!kind)
    return false;
  const llvm::json::Object &object = *json.getAsObject();
  r.issue = *kind;
  r.message = object.getString("message").value_or("").str();
  r.op = object.getString("op").value_or("").str();
  return true;
}

/// A precision change: its step and text required; the locations it kept
/// in f32 as far as they are strings.
bool fromJSON(const llvm::json::Value &json, PrecisionChange &c,
              llvm::json::Path path) {
  llvm::json::ObjectMapper o(json, path);
  if (!o || !o.map("step", c.step) || !o.map("change", c.change))
    return false;
  if (const llvm::json::Array *pins = json.getAsObject()->getArray("kept_f32"))
    for (const llvm::json::Value &pin : *pins)
      if (std::optional<llvm::StringRef> text = pin.getAsString())
        c.keptF32.push_back(text->str());
  return true;
}

/// An epoch: its number required, the rest as far as it is there.
bool fromJSON(const llvm::json::Value &json, EpochReport &e,
              llvm::json::Path path) {
  llvm::json::ObjectMapper o(json, path);
  if (!o || !o.map("epoch", e.epoch))
    return false;
  const llvm::json::Object &object = *json.getAsObject();
  e.meanLoss = readNumber(object.get("loss")).value_or(NAN);
  e.accuracy = readNumber(object.get("accuracy")).value_or(-1);
  e.skipped = object.getInteger("skipped").value_or(0);
  e.scale = readNumber(object.get("scale")).value_or(NAN);
  return true;
}

/// Appends each of `array`'s records to `out`; false at the first that
/// fromJSON refuses.
template <typename Record>
bool readRecords(const llvm::json::Array &array, std::vector<Record> &out) {
  llvm::json::Path::Root root;
  for (const llvm::json::Value &value : array) {
    Record record;
    if (!fromJSON(value, record, root))
      return false;
    out.push_back(std::move(record));
  }
  return true;
}

/// The steps, reports, precision changes and epochs: "" or what is wrong.
std::string readStatsRecords(const llvm::json::Object &root,
                             StatsContents &contents) {
  const llvm::json::Array *steps = root.getArray("steps"),
                          *reports = root.getArray("reports"),
                          *changes = root.getArray("precision_changes"),
                          *epochs = root.getArray("epochs");
  if (!steps || !reports || !changes || !epochs)
    return "lacks one of steps, reports, precision_changes, epochs";
  contents = StatsContents();
  if (!readRecords(*steps, contents.steps))
    return "a step lacks step, loss, grad_norm, scale or skipped";
  if (!readRecords(*reports, contents.reports))
    return "a report lacks its step or a known issue";
  if (!readRecords(*changes, contents.precisionChanges))
    return "a precision change lacks its step or text";
  if (!readRecords(*epochs, contents.epochs))
    return "an epoch lacks its number";
  return "";
}

} // namespace

bool readStats(const std::string &path, StatsContents &contents,
               std::string &error) {
  auto bad = [&](const std::string &why) {
    error = "stats file '" + path + "': " + why;
    return false;
  };
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return bad(buffer.getError().message());
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buffer)->getBuffer());
  if (!parsed)
    return bad("not JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return bad("not a JSON object");
  if (root->getInteger("version") != kStatsVersion)
    return bad("version is not " + std::to_string(kStatsVersion));
  std::string problem = readStatsRecords(*root, contents);
  if (!problem.empty())
    return bad(problem);
  return true;
}

} // namespace mp
