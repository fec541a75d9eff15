//===- Session.cpp - the C API over mp::Session ---------------------------===//
//
// include/mp-c/Session.h: what bindings (python/mp/runtime.py) call.
// Every entry point catches bad arguments and reports them through
// mp_last_error instead of crashing.
//
//===----------------------------------------------------------------------===//

#include "mp-c/Session.h"

#include "mp/Session/Calibration.h"
#include "mp/Session/Environment.h"
#include "mp/Session/Hardware.h"
#include "mp/Session/InferSession.h"
#include "mp/Session/MonitorObserver.h"
#include "mp/Session/Session.h"
#include "mp/Session/Trainer.h"

#include "mprt/mprt.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <mutex>

struct mp_session {
  std::unique_ptr<mp::Session> session;
  std::string model; // the path it came from (stats files name it)
  float gradNorm = std::numeric_limits<float>::quiet_NaN();
  mutable std::string optionsText; // mp_session_options_text's
  mutable std::string ioJson;      // mp_session_io_json's
};

struct mp_infer {
  std::unique_ptr<mp::InferSession> session;
};

struct mp_trainer {
  std::unique_ptr<mp::Trainer> trainer;
  std::string line; // the last epoch's progress line
  std::unique_ptr<mp::MonitorObserver> monitor;
  // The last epoch's reports (a deque: views point into its elements) and
  // their C view.
  std::deque<mp::StabilityReport> reports;
  std::vector<mp_stability_report> reportViews;
  // The run's repairs as C views (their lines and location pointers),
  // made when asked.
  mutable std::vector<std::string> repairLines;
  mutable std::vector<std::vector<const char *>> repairKept;
  mutable std::vector<mp_precision_repair> repairViews;
};

namespace {

thread_local std::string lastError;

int fail(const std::string &message) {
  lastError = message;
  return 1;
}

int succeed() {
  lastError.clear();
  return 0;
}

std::vector<mp::HostTensor> *tensorsOf(const mp_session *s, int kind) {
  if (!s || !s->session || (kind != 0 && kind != 1))
    return nullptr;
  return kind == 0 ? &s->session->parameters() : &s->session->optimizerState();
}

mp::HostTensor *tensorAt(const mp_session *s, int kind, size_t index) {
  std::vector<mp::HostTensor> *tensors = tensorsOf(s, kind);
  if (!tensors || index >= tensors->size())
    return nullptr;
  return &(*tensors)[index];
}

} // namespace

extern "C" {

void mp_session_options_init(mp_session_options *options) {
  if (!options)
    return;
  // The library's defaults, as text (static: the strings outlive the call).
  static const mp::TrainOptions defaults;
  static const std::string precision =
      mlir::mp::stringifyFloatPrecision(defaults.precision).str();
  static const std::string lossScale = defaults.lossScale.str();
  static const std::string optimizer =
      mlir::mp::stringifyOptimizerAlgorithm(defaults.optimizer).str();
  static const std::string device = mp::stringifyDevice(defaults.device).str();
  static const std::string weightCopies =
      mp::stringifyWeightCopies(defaults.weightCopies).str();
  options->precision = precision.c_str();
  options->loss_scale = lossScale.c_str();
  options->optimizer = optimizer.c_str();
  options->lr = defaults.lr;
  options->momentum = defaults.momentum;
  options->weight_decay = defaults.weightDecay;
  options->seed = defaults.seed;
  options->device = device.c_str();
  options->tf32 = -1;
  options->accumulate = defaults.accumulate;
  options->keep_f32 = nullptr;
  options->keep_f32_count = 0;
  options->scale_margin = defaults.scaleMargin;
  options->scale_hysteresis = defaults.scaleHysteresis;
  options->cache = defaults.cache.enabled ? 1 : 0;
  options->cache_dir = nullptr;
  options->loss = nullptr;
  options->batch_size = 0;
  options->qat = defaults.qat ? 1 : 0;
  options->qat_freeze_after = defaults.qatFreezeAfter;
  options->distributed = defaults.distributed ? 1 : 0;
  options->weight_copies = weightCopies.c_str();
}

const char *mp_last_error(void) { return lastError.c_str(); }

/// The end of both creation functions: compile, or the session's error.
static int compileSession(const char *model_path,
                          const mp::TrainOptions &options, mp_session **out) {
  std::string error;
  std::unique_ptr<mp::Session> session =
      mp::Session::create(model_path, options, error);
  if (!session)
    return fail(error);
  *out = new mp_session{std::move(session), model_path};
  return succeed();
}

int mp_session_create(const char *model_path, const mp_session_options *options,
                      mp_session **out) {
  if (!out)
    return fail("mp_session_create: output pointer is NULL");
  *out = nullptr;
  if (!model_path)
    return fail("mp_session_create: model path is NULL");
  mp_session_options defaults;
  mp_session_options_init(&defaults);
  const mp_session_options &o = options ? *options : defaults;
  mp::TrainOptions train; // a NULL string keeps the library's default
  std::string error;
  if (!mp::readOptionEnvironment(train, error) ||
      (o.precision && !mp::parseTrainPrecision(o.precision, train, error)) ||
      (o.loss_scale &&
       !mp::parseLossScale(o.loss_scale, train.lossScale, error)) ||
      (o.optimizer &&
       !mp::parseOptimizer(o.optimizer, train.optimizer, error)) ||
      (o.device && !mp::parseDevice(o.device, train.device, error)) ||
      (o.loss && !mp::parseLossKind(o.loss, train.addLoss, error)) ||
      (o.weight_copies &&
       !mp::parseWeightCopies(o.weight_copies, train.weightCopies, error)))
    return fail(error);
  train.modelBatch = o.batch_size;
  train.lr = o.lr;
  train.momentum = o.momentum;
  train.weightDecay = o.weight_decay;
  train.seed = o.seed;
  train.accumulate = o.accumulate;
  train.scaleMargin = o.scale_margin;
  train.scaleHysteresis = o.scale_hysteresis;
  train.qat = o.qat != 0;
  train.qatFreezeAfter = o.qat_freeze_after;
  train.distributed = o.distributed != 0;
  if (o.keep_f32_count < 0 || (o.keep_f32_count > 0 && !o.keep_f32))
    return fail("mp_session_create: keep_f32 is NULL or its count negative");
  for (int64_t i = 0; i < o.keep_f32_count; ++i) {
    if (!o.keep_f32[i])
      return fail("mp_session_create: keep_f32[" + std::to_string(i) +
                  "] is NULL");
    train.keepF32.push_back(o.keep_f32[i]);
  }
  if (o.tf32 >= 0)
    train.tf32 = o.tf32 != 0;
  // MP_CACHE=off holds whatever the struct's default says.
  train.cache.enabled = train.cache.enabled && o.cache != 0;
  if (o.cache_dir && *o.cache_dir)
    train.cache.dir = o.cache_dir;
  return compileSession(model_path, train, out);
}

int mp_session_create_with(const char *model_path, const char *options,
                           mp_session **out) {
  if (!out)
    return fail("mp_session_create_with: output pointer is NULL");
  *out = nullptr;
  if (!model_path)
    return fail("mp_session_create_with: model path is NULL");
  mp::TrainOptions train;
  std::string error;
  // The environment first: the string's options win.
  if (!mp::readOptionEnvironment(train, error) ||
      (options && !mp::parseTrainOptions(options, train, error)))
    return fail(error);
  return compileSession(model_path, train, out);
}

const char *mp_session_options_text(const mp_session *s) {
  if (!s || !s->session)
    return "";
  s->optionsText = mp::printTrainOptions(s->session->trainOptions());
  return s->optionsText.c_str();
}

const char *mp_session_io_json(const mp_session *s) {
  if (!s || !s->session)
    return "";
  const mp::CompiledEntries &e = s->session->compiledEntries();
  auto tensor = [](const std::vector<int64_t> &shape,
                   mp::CompiledEntries::Element element) {
    static const char *const names[] = {"f32", "i32", "i64"};
    llvm::json::Array dims;
    for (int64_t d : shape)
      dims.push_back(d);
    return llvm::json::Object{{"shape", std::move(dims)},
                              {"dtype", names[static_cast<int>(element)]}};
  };
  llvm::json::Object io{
      {"x", tensor(e.inputShape, e.inputElement)},
      {"labels", tensor(e.labelShape, e.labelElement)},
      {"logits", tensor(e.logitsShape, mp::CompiledEntries::Element::F32)}};
  s->ioJson = llvm::formatv("{0}", llvm::json::Value(std::move(io))).str();
  return s->ioJson.c_str();
}

const char *mp_session_pipelines(const mp_session *s) {
  return s && s->session ? s->session->pipelines().c_str() : "";
}

int mp_session_open(const char *artifact_path, mp_session **out) {
  if (!out)
    return fail("mp_session_open: output pointer is NULL");
  *out = nullptr;
  if (!artifact_path)
    return fail("mp_session_open: artifact path is NULL");
  std::string error;
  std::unique_ptr<mp::Session> session =
      mp::Session::open(artifact_path, error);
  if (!session)
    return fail(error);
  *out = new mp_session{std::move(session), artifact_path};
  return succeed();
}

void mp_session_free(mp_session *session) { delete session; }

int64_t mp_session_batch_size(const mp_session *s) {
  return s ? s->session->batchSize() : 0;
}
int mp_distributed_available(void) { return mprt_dist_available(); }
void mp_distributed_abort(int code) { mprt_dist_abort(code); }
int64_t mp_session_process_rank(const mp_session *s) {
  return s ? s->session->rank() : 0;
}
int64_t mp_session_process_count(const mp_session *s) {
  return s ? s->session->ranks() : 1;
}
int64_t mp_session_num_features(const mp_session *s) {
  return s ? s->session->numFeatures() : 0;
}
int64_t mp_session_num_classes(const mp_session *s) {
  return s ? s->session->numClasses() : 0;
}

size_t mp_session_count(const mp_session *s, int kind) {
  std::vector<mp::HostTensor> *tensors = tensorsOf(s, kind);
  return tensors ? tensors->size() : 0;
}

int64_t mp_session_kept_f32_count(const mp_session *s) {
  return s && s->session
             ? static_cast<int64_t>(s->session->trainOptions().keepF32.size())
             : 0;
}

const char *mp_session_kept_f32(const mp_session *s, int64_t index) {
  if (!s || !s->session || index < 0 || index >= mp_session_kept_f32_count(s))
    return nullptr;
  return s->session->trainOptions().keepF32[index].c_str();
}

const char *mp_session_precision(const mp_session *s) {
  if (!s || !s->session)
    return "";
  return mlir::mp::stringifyFloatPrecision(s->session->trainOptions().precision)
      .data(); // ODS spellings are string literals
}

const char *mp_session_precision_decision(const mp_session *s) {
  return s && s->session ? s->session->precisionDecision().c_str() : "";
}

const char *mp_session_cache_use(const mp_session *s) {
  return s && s->session ? mp::stringifyCacheUse(s->session->cacheUse())
                         : "off";
}

const char *mp_session_cache_note(const mp_session *s) {
  return s && s->session ? s->session->cacheNote().c_str() : "";
}

const char *mp_hardware_report(void) {
  thread_local std::string report; // as mp_last_error: one per thread
  report = mp::describeHardware(mp::detectHardware());
  return report.c_str();
}

const char *mp_session_name(const mp_session *s, int kind, size_t index) {
  mp::HostTensor *t = tensorAt(s, kind, index);
  return t ? t->name.c_str() : nullptr;
}

size_t mp_session_rank(const mp_session *s, int kind, size_t index) {
  mp::HostTensor *t = tensorAt(s, kind, index);
  return t ? t->shape.size() : 0;
}

const int64_t *mp_session_shape(const mp_session *s, int kind, size_t index) {
  mp::HostTensor *t = tensorAt(s, kind, index);
  return t ? t->shape.data() : nullptr;
}

int mp_session_get(const mp_session *s, int kind, size_t index, float *out,
                   size_t count) {
  mp::HostTensor *t = tensorAt(s, kind, index);
  if (!t)
    return fail("mp_session_get: no tensor " + std::to_string(index) +
                " of kind " + std::to_string(kind));
  if (!out || count != t->data.size())
    return fail("mp_session_get: '" + t->name + "' has " +
                std::to_string(t->data.size()) + " elements, the buffer " +
                std::to_string(count));
  std::copy(t->data.begin(), t->data.end(), out);
  return succeed();
}

int mp_session_set(mp_session *s, int kind, size_t index, const float *values,
                   size_t count) {
  mp::HostTensor *t = tensorAt(s, kind, index);
  if (!t)
    return fail("mp_session_set: no tensor " + std::to_string(index) +
                " of kind " + std::to_string(kind));
  if (!values || count != t->data.size())
    return fail("mp_session_set: '" + t->name + "' has " +
                std::to_string(t->data.size()) + " elements, got " +
                std::to_string(count));
  std::copy(values, values + count, t->data.begin());
  return succeed();
}

int mp_session_train_step(mp_session *s, const void *x, const void *labels,
                          float *loss, int *stepped) {
  if (!s || !x || !labels)
    return fail("mp_session_train_step: NULL session, x or labels");
  mp::StepResult result;
  std::string error;
  if (!s->session->trainStep(x, labels, result, error))
    return fail(error);
  if (result.optimizerStep)
    s->gradNorm = result.gradNorm;
  if (loss)
    *loss = result.loss;
  if (stepped)
    *stepped = result.stepped ? 1 : 0;
  return succeed();
}

int mp_session_predict(mp_session *s, const void *x, float *logits) {
  if (!s || !x || !logits)
    return fail("mp_session_predict: NULL session, x or logits");
  std::string error;
  if (!s->session->predict(x, logits, error))
    return fail(error);
  return succeed();
}

int64_t mp_session_find(const mp_session *s, int kind, const char *name) {
  std::vector<mp::HostTensor> *tensors = tensorsOf(s, kind);
  if (!tensors || !name)
    return -1;
  for (size_t i = 0; i < tensors->size(); ++i)
    if ((*tensors)[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}

/// The C enum as the session's scheme; false for a value outside it.
static bool toInitScheme(int scheme, mp::InitScheme &out) {
  switch (scheme) {
  case MP_INIT_ZEROS:
    out = mp::InitScheme::Zeros;
    return true;
  case MP_INIT_HE_UNIFORM:
    out = mp::InitScheme::HeUniform;
    return true;
  case MP_INIT_HE_NORMAL:
    out = mp::InitScheme::HeNormal;
    return true;
  case MP_INIT_XAVIER_UNIFORM:
    out = mp::InitScheme::XavierUniform;
    return true;
  case MP_INIT_XAVIER_NORMAL:
    out = mp::InitScheme::XavierNormal;
    return true;
  }
  return false;
}

int mp_session_init_parameter(mp_session *s, const char *name, int scheme,
                              uint64_t seed) {
  if (!s || !name)
    return fail("mp_session_init_parameter: NULL session or name");
  mp::InitScheme init;
  if (!toInitScheme(scheme, init))
    return fail("mp_session_init_parameter: unknown scheme " +
                std::to_string(scheme));
  int64_t index = mp_session_find(s, 0, name);
  if (index < 0)
    return fail(std::string("mp_session_init_parameter: the model has no "
                            "parameter named '") +
                name + "'");
  std::mt19937_64 rng(seed);
  std::string error;
  if (!mp::initialiseTensor(s->session->parameters()[index], init, rng, error))
    return fail("mp_session_init_parameter: " + error);
  return succeed();
}

int mp_session_init_parameters(mp_session *s, int scheme, uint64_t seed) {
  if (!s)
    return fail("mp_session_init_parameters: NULL session");
  mp::InitScheme init;
  if (!toInitScheme(scheme, init))
    return fail("mp_session_init_parameters: unknown scheme " +
                std::to_string(scheme));
  s->session->initialiseParameters(seed, init);
  return succeed();
}

int32_t mp_session_step(const mp_session *s) {
  return s ? s->session->stepState().step : 0;
}
float mp_session_loss_scale(const mp_session *s) {
  return s ? s->session->stepState().scale : 0.0f;
}
int32_t mp_session_growth_tracker(const mp_session *s) {
  return s ? s->session->stepState().growthTracker : 0;
}
float mp_session_grad_norm(const mp_session *s) {
  return s ? s->gradNorm : std::numeric_limits<float>::quiet_NaN();
}
int64_t mp_session_accumulation(const mp_session *s) {
  return s ? s->session->accumulation() : 0;
}
int64_t mp_session_window_position(const mp_session *s) {
  return s ? s->session->stepState().micro : 0;
}
int64_t mp_session_skipped_steps(const mp_session *s) {
  return s ? s->session->stepState().skipped : 0;
}

int mp_session_save(const mp_session *s, const char *path) {
  if (!s || !path)
    return fail("mp_session_save: NULL session or path");
  // At the start of an epoch: `mp-run train --resume` continues from it.
  std::string error;
  if (!s->session->saveCheckpoint(path, mp::RunPosition{}, "", error))
    return fail(error);
  return succeed();
}

int mp_session_load(mp_session *s, const char *path) {
  if (!s || !path)
    return fail("mp_session_load: NULL session or path");
  mp::RunPosition position;
  std::string error;
  if (!s->session->loadCheckpoint(path, /*withState=*/true, position, error))
    return fail(error);
  return succeed();
}

int mp_session_load_parameters(mp_session *s, const char *path) {
  if (!s || !path)
    return fail("mp_session_load_parameters: NULL session or path");
  mp::RunPosition position;
  std::string error;
  if (!s->session->loadCheckpoint(path, /*withState=*/false, position, error))
    return fail(error);
  return succeed();
}

void mp_trainer_options_init(mp_trainer_options *options) {
  if (!options)
    return;
  static const mp::TrainerOptions defaults;
  static const mp::MonitorConfig monitor;
  options->epochs = defaults.epochs;
  options->seed = defaults.seed;
  options->checkpoint = defaults.checkpointPath.c_str();
  options->checkpoint_every = defaults.checkpointEvery;
  options->resume = defaults.resume ? 1 : 0;
  options->monitor = monitor.checks ? 1 : 0;
  options->stats_path = monitor.statsPath.c_str();
  options->spike_factor = monitor.options.spikeFactor;
  options->overflow_window = monitor.options.overflowWindow;
  options->overflow_limit = monitor.options.overflowLimit;
  options->precision_repair = -1;
}

int mp_epoch_order(int64_t rows, uint64_t seed, int64_t epoch, int64_t *order) {
  if (rows < 0 || (rows > 0 && !order))
    return fail("mp_epoch_order: negative row count or NULL output");
  std::vector<int64_t> result = mp::epochOrder(rows, seed, epoch);
  std::copy(result.begin(), result.end(), order);
  return succeed();
}

int mp_trainer_create(mp_session *s, const float *x_train, const float *y_train,
                      int64_t train_rows, const float *x_test,
                      const float *y_test, int64_t test_rows,
                      const mp_trainer_options *options, mp_trainer **out) {
  if (!out)
    return fail("mp_trainer_create: output pointer is NULL");
  *out = nullptr;
  if (!s || !s->session || !x_train || !y_train)
    return fail("mp_trainer_create: NULL session or training rows");
  mp_trainer_options defaults;
  mp_trainer_options_init(&defaults);
  const mp_trainer_options &o = options ? *options : defaults;
  mp::TrainerOptions run;
  run.epochs = o.epochs;
  run.seed = o.seed;
  run.checkpointPath = o.checkpoint ? o.checkpoint : "";
  run.checkpointEvery = o.checkpoint_every;
  run.resume = o.resume != 0;
  if (o.precision_repair < -1 || o.precision_repair > 1)
    return fail("mp_trainer_create: precision_repair is -1 (default), 0 or "
                "1, got " +
                std::to_string(o.precision_repair));
  run.repair.mode = o.precision_repair < 0    ? mp::RepairMode::Auto
                    : o.precision_repair == 0 ? mp::RepairMode::Off
                                              : mp::RepairMode::On;
  std::string error;
  std::unique_ptr<mp::Trainer> trainer =
      mp::Trainer::create(*s->session, {x_train, y_train, train_rows},
                          {x_test, y_test, test_rows}, run, error);
  if (!trainer)
    return fail(error);
  auto created = std::make_unique<mp_trainer>();
  created->trainer = std::move(trainer);
  mp::MonitorConfig monitor;
  monitor.checks = o.monitor != 0;
  monitor.statsPath = o.stats_path ? o.stats_path : "";
  monitor.options.spikeFactor = o.spike_factor;
  monitor.options.overflowWindow = o.overflow_window;
  monitor.options.overflowLimit = o.overflow_limit;
  monitor.header = mp::describeRun(s->model, s->session->trainOptions());
  mp_trainer *raw = created.get();
  monitor.onReport = [raw](const mp::StabilityReport &report) {
    const mp::StabilityReport &r = raw->reports.emplace_back(report);
    raw->reportViews.push_back({r.step,
                                mp::stringifyStabilityIssue(r.issue).data(),
                                r.message.c_str(), r.op.c_str()});
  };
  created->monitor = mp::MonitorObserver::create(std::move(monitor), nullptr,
                                                 *created->trainer, error);
  if (!created->monitor)
    return fail(error);
  *out = created.release();
  return succeed();
}

void mp_trainer_free(mp_trainer *trainer) { delete trainer; }

int64_t mp_trainer_epoch(const mp_trainer *trainer) {
  return trainer ? trainer->trainer->position().epoch : 0;
}
int64_t mp_trainer_batch(const mp_trainer *trainer) {
  return trainer ? trainer->trainer->position().batch : 0;
}
int mp_trainer_finished(const mp_trainer *trainer) {
  return trainer ? trainer->trainer->finished() : 1;
}

int mp_trainer_run_epoch(mp_trainer *trainer, mp_epoch_report *report) {
  if (!trainer)
    return fail("mp_trainer_run_epoch: NULL trainer");
  mp::EpochReport epoch;
  std::string error;
  trainer->reports.clear();
  trainer->reportViews.clear();
  if (!trainer->trainer->runEpoch(epoch, error, trainer->monitor.get())) {
    std::string ignored; // what the run did up to the failure, for plots
    trainer->monitor->writeStats(ignored);
    return fail(error);
  }
  trainer->line = mp::formatEpochLine(epoch);
  if (report) {
    report->epoch = epoch.epoch;
    report->epochs = epoch.epochs;
    report->steps = epoch.steps;
    report->samples = epoch.samples;
    report->loss = epoch.meanLoss;
    report->seconds = epoch.seconds;
    report->accuracy = epoch.accuracy;
    report->skipped = epoch.skipped;
    report->scale = epoch.scale;
  }
  return succeed();
}

const char *mp_trainer_line(const mp_trainer *trainer) {
  return trainer ? trainer->line.c_str() : "";
}

int64_t mp_trainer_repairs(const mp_trainer *trainer,
                           const mp_precision_repair **repairs) {
  if (repairs)
    *repairs = nullptr;
  if (!trainer)
    return 0;
  const mp_trainer *t = trainer; // the repairs only grow
  const std::vector<mp::RepairReport> &all = t->trainer->repairs();
  if (t->repairViews.size() != all.size()) {
    t->repairLines.clear();
    t->repairKept.clear();
    t->repairViews.clear();
    for (const mp::RepairReport &r : all) {
      t->repairLines.push_back(r.line());
      std::vector<const char *> &kept = t->repairKept.emplace_back();
      for (const mp::RepairedOp &op : r.kept)
        kept.push_back(op.location.c_str());
    }
    for (size_t i = 0; i < all.size(); ++i)
      t->repairViews.push_back({all[i].step, all[i].repaired ? 1 : 0,
                                t->repairLines[i].c_str(),
                                static_cast<int64_t>(t->repairKept[i].size()),
                                t->repairKept[i].data(), all[i].seconds});
  }
  if (repairs)
    *repairs = t->repairViews.data();
  return static_cast<int64_t>(t->repairViews.size());
}

int64_t mp_trainer_reports(const mp_trainer *trainer,
                           const mp_stability_report **reports) {
  if (reports)
    *reports = nullptr;
  if (!trainer)
    return 0;
  if (reports)
    *reports = trainer->reportViews.data();
  return static_cast<int64_t>(trainer->reportViews.size());
}

void mp_infer_options_init(mp_infer_options *options) {
  if (!options)
    return;
  // The library's defaults, as text (static: the strings outlive the call).
  static const mp::InferOptions defaults;
  static const std::string precision =
      mlir::mp::stringifyFloatPrecision(defaults.precision).str();
  static const std::string method =
      mlir::mp::stringifyQuantizationMethod(defaults.method).str();
  static const std::string device = mp::stringifyDevice(defaults.device).str();
  options->precision = precision.c_str();
  options->calibration_path = defaults.calibrationPath.c_str();
  options->method = method.c_str();
  options->percentile = defaults.percentile;
  options->per_channel = defaults.perChannel ? 1 : 0;
  options->max_error = defaults.maxError;
  options->device = device.c_str();
  options->measure_x = nullptr;
  options->measure_rows = 0;
  options->measure_batches = 0;
  options->batch_size = 0;
  options->cache = defaults.cache.enabled ? 1 : 0;
  options->cache_dir = nullptr;
}

const char *mp_infer_precision(const mp_infer *infer) {
  if (!infer || !infer->session)
    return "";
  return mlir::mp::stringifyFloatPrecision(infer->session->precision())
      .data(); // ODS spellings are string literals
}

const char *mp_infer_precision_decision(const mp_infer *infer) {
  return infer && infer->session ? infer->session->precisionDecision().c_str()
                                 : "";
}

/// What both inference constructors do once their options are read: the
/// batch and the QAT ranges from the weights session, the measured
/// fallback, compiling. `function` and `calibrationName` name the
/// constructor and its calibration option in messages.
static int createInfer(const char *function, const char *calibrationName,
                       const char *model_path, mp::InferOptions infer,
                       const mp_session *weights, const float *measure_x,
                       int64_t measure_rows, int64_t measure_batches,
                       mp_infer **out) {
  std::string error, name = function;
  if (infer.modelBatch == 0)
    infer.modelBatch = weights->session->trainOptions().modelBatch;
  bool staticInt8 = infer.mode == mp::InferOptions::Mode::Int8 &&
                    infer.quantization == mlir::mp::QuantizationMode::Int8;
  // A session trained with qat carries its activation ranges.
  if (staticInt8 && infer.calibrationPath.empty()) {
    infer.qatObservers =
        mp::scalarStateTensors(weights->session->optimizerState());
    if (infer.qatObservers.empty())
      return fail(name + ": precision int8 needs " + calibrationName +
                  " (statistics from mp_calibrate), a weights session "
                  "trained with qat, or precision int8-dynamic");
  }
  if (measure_batches < 0 ||
      (measure_batches > 0 && (!measure_x || measure_rows < 1)))
    return fail(name +
                ": measure_batches needs measure_x with "
                "measure_rows > 0, got " +
                std::to_string(measure_rows) + " rows and " +
                std::to_string(measure_batches) + " batches");
  if (infer.mode == mp::InferOptions::Mode::Int8 && measure_batches > 0) {
    std::map<std::string, double> errors;
    if (!mp::planMeasuredFallback(model_path, weights->session->parameters(),
                                  infer, {measure_x, measure_rows},
                                  measure_batches, errors, error))
      return fail(error);
  }
  std::unique_ptr<mp::InferSession> session = mp::InferSession::create(
      model_path, infer, weights->session->parameters(), error);
  if (!session)
    return fail(error);
  *out = new mp_infer{std::move(session)};
  return succeed();
}

int mp_infer_create(const char *model_path, const mp_infer_options *options,
                    const mp_session *weights, mp_infer **out) {
  if (!out)
    return fail("mp_infer_create: output pointer is NULL");
  *out = nullptr;
  if (!model_path)
    return fail("mp_infer_create: model path is NULL");
  if (!weights || !weights->session)
    return fail("mp_infer_create: no session to take the parameters from");
  mp_infer_options defaults;
  mp_infer_options_init(&defaults);
  const mp_infer_options &o = options ? *options : defaults;
  mp::InferOptions infer; // a NULL string keeps the library's default
  std::string error;
  if (!mp::readOptionEnvironment(infer, error) ||
      (o.precision && !mp::parseInferPrecision(o.precision, infer, error)) ||
      (o.device && !mp::parseDevice(o.device, infer.device, error)))
    return fail(error);
  if (infer.mode == mp::InferOptions::Mode::Int8) {
    if (o.calibration_path)
      infer.calibrationPath = o.calibration_path;
    if (o.method && !mp::parseQuantMethod(o.method, infer.method, error))
      return fail(error);
    infer.percentile = o.percentile;
    infer.perChannel = o.per_channel != 0;
    infer.maxError = o.max_error;
  }
  infer.modelBatch = o.batch_size;
  infer.cache.enabled = infer.cache.enabled && o.cache != 0;
  if (o.cache_dir && *o.cache_dir)
    infer.cache.dir = o.cache_dir;
  return createInfer("mp_infer_create", "calibration_path", model_path, infer,
                     weights, o.measure_x, o.measure_rows, o.measure_batches,
                     out);
}

int mp_infer_create_with(const char *model_path, const char *options,
                         const mp_session *weights, const float *measure_x,
                         int64_t measure_rows, int64_t measure_batches,
                         mp_infer **out) {
  if (!out)
    return fail("mp_infer_create_with: output pointer is NULL");
  *out = nullptr;
  if (!model_path)
    return fail("mp_infer_create_with: model path is NULL");
  if (!weights || !weights->session)
    return fail("mp_infer_create_with: no session to take the parameters from");
  mp::InferOptions infer;
  std::string error;
  // The environment first: the string's options win.
  if (!mp::readOptionEnvironment(infer, error) ||
      (options && !mp::parseInferOptions(options, infer, error)))
    return fail(error);
  return createInfer("mp_infer_create_with", "calibration", model_path, infer,
                     weights, measure_x, measure_rows, measure_batches, out);
}

const char *mp_infer_pipelines(const mp_infer *infer) {
  return infer && infer->session ? infer->session->pipelines().c_str() : "";
}

void mp_infer_free(mp_infer *infer) { delete infer; }

int64_t mp_infer_batch_size(const mp_infer *infer) {
  return infer ? infer->session->batchSize() : 0;
}
int64_t mp_infer_num_features(const mp_infer *infer) {
  return infer ? infer->session->numFeatures() : 0;
}
int64_t mp_infer_num_classes(const mp_infer *infer) {
  return infer ? infer->session->numClasses() : 0;
}
int64_t mp_infer_weight_bytes(const mp_infer *infer) {
  return infer ? infer->session->weightBytes() : 0;
}

const char *mp_infer_cache_use(const mp_infer *infer) {
  return infer && infer->session
             ? mp::stringifyCacheUse(infer->session->cacheUse())
             : "off";
}

const char *mp_infer_cache_note(const mp_infer *infer) {
  return infer && infer->session ? infer->session->cacheNote().c_str() : "";
}

int mp_infer_predict(mp_infer *infer, const float *x, float *logits) {
  if (!infer || !x || !logits)
    return fail("mp_infer_predict: NULL inference session or buffer");
  std::string error;
  if (!infer->session->predict(x, logits, error))
    return fail(error);
  return succeed();
}

int mp_calibrate(const char *model_path, const mp_session *weights,
                 const float *x, int64_t rows, int64_t batches,
                 const char *out_path) {
  if (!model_path || !weights || !weights->session || !x || !out_path)
    return fail("mp_calibrate: NULL model path, session, data or output");
  if (rows < 1 || batches < 1)
    return fail("mp_calibrate: rows and batches must be positive, got " +
                std::to_string(rows) + " and " + std::to_string(batches));
  mp::InferOptions options;
  options.mode = mp::InferOptions::Mode::Calibrate;
  std::string error;
  if (!mp::readOptionEnvironment(options, error))
    return fail(error);
  std::unique_ptr<mp::InferSession> session = mp::InferSession::create(
      model_path, options, weights->session->parameters(), error);
  if (!session)
    return fail(error);
  if (mp::writeCalibration(*session, {x, rows}, batches, out_path, error) < 0)
    return fail(error);
  return succeed();
}

} // extern "C"
