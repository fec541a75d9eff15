//===- Numerics.cpp - numerics checks over probed outputs -----------------===//

#include "mp/Session/Numerics.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mp {

namespace {

double halfToDouble(uint16_t bits) {
  int sign = bits >> 15, exponent = (bits >> 10) & 0x1f,
      mantissa = bits & 0x3ff;
  double magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(mantissa, -24); // zero or subnormal
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = std::ldexp(mantissa + 1024, exponent - 25);
  return sign ? -magnitude : magnitude;
}

double bf16ToDouble(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

template <typename T>
void widen(const void *data, int64_t n, std::vector<double> &out) {
  const T *typed = static_cast<const T *>(data);
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<double>(typed[i]);
}

} // namespace

const char *dtypeName(mprt_dtype dtype) {
  switch (dtype) {
  case MPRT_DTYPE_F32:
    return "f32";
  case MPRT_DTYPE_F16:
    return "f16";
  case MPRT_DTYPE_BF16:
    return "bf16";
  case MPRT_DTYPE_F64:
    return "f64";
  case MPRT_DTYPE_I32:
    return "i32";
  case MPRT_DTYPE_I64:
    return "i64";
  case MPRT_DTYPE_U8:
    return "u8";
  case MPRT_DTYPE_I8:
    return "i8";
  }
  return "?";
}

std::vector<double> probedValues(const void *data, int64_t numElements,
                                 mprt_dtype dtype) {
  std::vector<double> out(std::max<int64_t>(numElements, 0));
  const uint16_t *bits = static_cast<const uint16_t *>(data);
  switch (dtype) {
  case MPRT_DTYPE_F32:
    widen<float>(data, numElements, out);
    break;
  case MPRT_DTYPE_F16:
    for (int64_t i = 0; i < numElements; ++i)
      out[i] = halfToDouble(bits[i]);
    break;
  case MPRT_DTYPE_BF16:
    for (int64_t i = 0; i < numElements; ++i)
      out[i] = bf16ToDouble(bits[i]);
    break;
  case MPRT_DTYPE_F64:
    widen<double>(data, numElements, out);
    break;
  case MPRT_DTYPE_I32:
    widen<int32_t>(data, numElements, out);
    break;
  case MPRT_DTYPE_I64:
    widen<int64_t>(data, numElements, out);
    break;
  case MPRT_DTYPE_U8:
    widen<uint8_t>(data, numElements, out);
    break;
  case MPRT_DTYPE_I8:
    widen<int8_t>(data, numElements, out);
    break;
  }
  return out;
}

//===----------------------------------------------------------------------===//
// NumericsChecker
//===----------------------------------------------------------------------===//

NumericsChecker::NumericsChecker() {
  mprt_get_observer(&previousFn, &previousUser);
  mprt_set_observer(&observe, this);
}
// The observer it replaced (a checker of the run that probes for a repair
// installs its own for one step) observes again.
NumericsChecker::~NumericsChecker() {
  mprt_set_observer(previousFn, previousUser);
}

void NumericsChecker::pause() { mprt_set_observer(previousFn, previousUser); }
void NumericsChecker::resume() { mprt_set_observer(&observe, this); }

void NumericsChecker::beginStep(int64_t newStep) {
  step = newStep;
  haveNonfinite = haveOverRange = false;
}

bool NumericsChecker::peekStep(NumericsEvent &event) const {
  if (!haveNonfinite && !haveOverRange)
    return false;
  event = haveNonfinite ? firstNonfinite : firstOverRange;
  return true;
}

bool NumericsChecker::endStep(NumericsEvent &event) {
  if (!peekStep(event))
    return false;
  ++ops[event.id].firstSteps;
  return true;
}

void NumericsChecker::observe(void *user, const char *id, const void *data,
                              int64_t numElements, mprt_dtype dtype) {
  auto &self = *static_cast<NumericsChecker *>(user);
  int64_t nonfinite = 0;
  double absMax = 0;
  for (double v : probedValues(data, numElements, dtype)) {
    if (!std::isfinite(v))
      ++nonfinite;
    else
      absMax = std::max(absMax, std::fabs(v));
  }
  auto [it, inserted] = self.ops.try_emplace(id);
  PerOp &op = it->second;
  if (inserted)
    op.order = self.ops.size();
  op.absMax = std::max(op.absMax, absMax);
  NumericsEvent event{self.step, id, dtype, nonfinite, numElements, absMax};
  if (nonfinite > 0) {
    if (op.lastStep != self.step)
      ++op.nonfiniteSteps;
    op.lastStep = self.step;
    if (!self.haveNonfinite) {
      self.haveNonfinite = true;
      self.firstNonfinite = event;
    }
  }
  if (absMax > kF16Max) {
    if (op.lastOverStep != self.step)
      ++op.overRangeSteps;
    op.lastOverStep = self.step;
    if (!self.haveOverRange) {
      self.haveOverRange = true;
      self.firstOverRange = event;
    }
  }
}

void NumericsChecker::printSummary(std::FILE *out) const {
  std::vector<std::pair<std::string, PerOp>> flagged;
  for (const auto &[id, op] : ops)
    if (op.nonfiniteSteps || op.overRangeSteps)
      flagged.emplace_back(id, op);
  if (flagged.empty()) {
    std::fprintf(out,
                 "numerics check: %zu probed ops, no inf/nan and nothing "
                 "beyond FP16's range (%g)\n",
                 ops.size(), kF16Max);
    return;
  }
  std::sort(flagged.begin(), flagged.end(), [](const auto &a, const auto &b) {
    const PerOp &x = a.second, &y = b.second;
    if (x.firstSteps != y.firstSteps)
      return x.firstSteps > y.firstSteps;
    if (x.nonfiniteSteps != y.nonfiniteSteps)
      return x.nonfiniteSteps > y.nonfiniteSteps;
    if (x.overRangeSteps != y.overRangeSteps)
      return x.overRangeSteps > y.overRangeSteps;
    return x.order < y.order;
  });
  std::fprintf(out,
               "numerics check: %zu of %zu probed ops had inf/nan or values "
               "beyond FP16's range (first: steps in which the op was the "
               "earliest offender)\n"
               "  first  steps inf/nan  steps >f16  max |finite|  op\n",
               flagged.size(), ops.size());
  for (const auto &[id, op] : flagged)
    std::fprintf(out, "  %5lld  %13lld  %10lld  %12.4g  %s\n",
                 (long long)op.firstSteps, (long long)op.nonfiniteSteps,
                 (long long)op.overRangeSteps, op.absMax, id.c_str());
}

//===----------------------------------------------------------------------===//
// ProbeRecorder and the comparison
//===----------------------------------------------------------------------===//

ProbeRecorder::ProbeRecorder() { mprt_set_observer(&observe, this); }
ProbeRecorder::~ProbeRecorder() { mprt_set_observer(nullptr, nullptr); }

void ProbeRecorder::observe(void *user, const char *id, const void *data,
                            int64_t numElements, mprt_dtype dtype) {
  auto &self = *static_cast<ProbeRecorder *>(user);
  auto [it, inserted] = self.recorded.try_emplace(id);
  if (inserted)
    self.ids.push_back(id);
  // A probe that fires again (a loop) keeps its last tensor.
  it->second = {dtype, probedValues(data, numElements, dtype)};
}

namespace {

/// One op's error in the mixed-precision run against the FP32 one.
struct ComparisonRow {
  std::string id;
  mprt_dtype dtype;
  double relative, maxAbsError, refAbsMax;
};

ComparisonRow compareValues(const std::string &id,
                            const ProbeRecorder::Tensor &reference,
                            const ProbeRecorder::Tensor &low) {
  double diff2 = 0, ref2 = 0, maxAbsError = 0, refAbsMax = 0;
  for (size_t i = 0; i < low.values.size(); ++i) {
    double r = reference.values[i], d = low.values[i] - r;
    diff2 += d * d;
    ref2 += r * r;
    maxAbsError = std::max(maxAbsError, std::fabs(d));
    refAbsMax = std::max(refAbsMax, std::fabs(r));
  }
  double relative = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return {id, low.dtype, relative, maxAbsError, refAbsMax};
}

/// The mixed run's probes that have an FP32 counterpart of the same size,
/// compared; `unmatched` counts the others.
std::vector<ComparisonRow> compareRuns(const ProbeRecorder &reference,
                                       const ProbeRecorder &mixed,
                                       size_t &unmatched) {
  std::vector<ComparisonRow> rows;
  unmatched = 0;
  for (const std::string &id : mixed.order()) {
    auto ref = reference.tensors().find(id);
    const ProbeRecorder::Tensor &low = mixed.tensors().at(id);
    if (ref == reference.tensors().end() ||
        ref->second.values.size() != low.values.size()) {
      ++unmatched;
      continue;
    }
    rows.push_back(compareValues(id, ref->second, low));
  }
  // NaN sorts first: it is the worst error there is.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ComparisonRow &a, const ComparisonRow &b) {
                     if (std::isnan(a.relative) != std::isnan(b.relative))
                       return std::isnan(a.relative);
                     return a.relative > b.relative;
                   });
  return rows;
}

} // namespace

size_t printComparison(const ProbeRecorder &reference,
                       const ProbeRecorder &mixed, size_t top, std::FILE *out) {
  size_t unmatched = 0;
  std::vector<ComparisonRow> rows = compareRuns(reference, mixed, unmatched);
  if (top == 0) // every op
    top = rows.size();
  std::fprintf(out, "  rank  rel error  max abs err  max |f32|  dtype  op\n");
  for (size_t i = 0; i < rows.size() && i < top; ++i)
    std::fprintf(out, "  %4zu  %9.3e  %11.3e  %9.3g  %-5s  %s\n", i + 1,
                 rows[i].relative, rows[i].maxAbsError, rows[i].refAbsMax,
                 dtypeName(rows[i].dtype), rows[i].id.c_str());
  if (rows.size() > top)
    std::fprintf(out, "  ... %zu more ops\n", rows.size() - top);
  if (unmatched)
    std::fprintf(out,
                 "  %zu probes of the mixed-precision run have no FP32 "
                 "counterpart (not compared)\n",
                 unmatched);
  return rows.size();
}

} // namespace mp
