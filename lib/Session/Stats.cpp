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
  auto array = [&](llvm::StringRef key) { return root->getArray(key); };
  const llvm::json::Array *steps = array("steps"), *reports = array("reports"),
                          *changes = array("precision_changes"),
                          *epochs = array("epochs");
  if (!steps || !reports || !changes || !epochs)
    return bad("lacks one of steps, reports, precision_changes, epochs");

  contents = StatsContents();
  for (const llvm::json::Value &v : *steps) {
    const llvm::json::Object *o = v.getAsObject();
    std::optional<int64_t> step = o ? o->getInteger("step") : std::nullopt;
    std::optional<double> loss, norm, scale;
    std::optional<bool> skipped;
    bool update = true;
    if (o) {
      update = o->getBoolean("optimizer_step").value_or(true);
      loss = readNumber(o->get("loss"));
      // null for a micro-batch that only accumulated
      norm = update ? readNumber(o->get("grad_norm")) : NAN;
      scale = readNumber(o->get("scale"));
      skipped = o->getBoolean("skipped");
    }
    if (!step || !loss || !norm || !scale || !skipped)
      return bad("a step lacks step, loss, grad_norm, scale or skipped");
    StepRecord r;
    r.step = *step;
    r.epoch = o->getInteger("epoch").value_or(0);
    r.loss = *loss;
    r.gradNorm = *norm;
    r.scale = *scale;
    r.stepped = !*skipped;
    r.optimizerStep = update;
    contents.steps.push_back(r);
  }
  for (const llvm::json::Value &v : *reports) {
    const llvm::json::Object *o = v.getAsObject();
    std::optional<int64_t> step = o ? o->getInteger("step") : std::nullopt;
    std::optional<llvm::StringRef> issue =
        o ? o->getString("issue") : std::nullopt;
    std::optional<StabilityIssue> kind =
        issue ? symbolizeStabilityIssue(*issue) : std::nullopt;
    if (!step || !kind)
      return bad("a report lacks its step or a known issue");
    contents.reports.push_back({*step, *kind,
                                o->getString("message").value_or("").str(),
                                o->getString("op").value_or("").str()});
  }
  for (const llvm::json::Value &v : *changes) {
    const llvm::json::Object *o = v.getAsObject();
    std::optional<int64_t> step = o ? o->getInteger("step") : std::nullopt;
    std::optional<llvm::StringRef> change =
        o ? o->getString("change") : std::nullopt;
    if (!step || !change)
      return bad("a precision change lacks its step or text");
    std::vector<std::string> kept;
    if (const llvm::json::Array *pins = o->getArray("kept_f32"))
      for (const llvm::json::Value &pin : *pins)
        if (std::optional<llvm::StringRef> text = pin.getAsString())
          kept.push_back(text->str());
    contents.precisionChanges.push_back({*step, change->str(), kept});
  }
  for (const llvm::json::Value &v : *epochs) {
    const llvm::json::Object *o = v.getAsObject();
    std::optional<int64_t> epoch = o ? o->getInteger("epoch") : std::nullopt;
    if (!epoch)
      return bad("an epoch lacks its number");
    EpochReport e;
    e.epoch = *epoch;
    e.meanLoss = readNumber(o->get("loss")).value_or(NAN);
    e.accuracy = readNumber(o->get("accuracy")).value_or(-1);
    e.skipped = o->getInteger("skipped").value_or(0);
    e.scale = readNumber(o->get("scale")).value_or(NAN);
    contents.epochs.push_back(e);
  }
  return true;
}

} // namespace mp
