#include "common/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "common/check.h"

namespace headroom::metrics {
namespace {

bool IsMetricName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool IsLabelName(const std::string& name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// `name{labels} value\n`, or `name value\n` without labels.
void AppendSample(const std::string& name, const std::string& labels, double value,
                  std::string& out) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    out += labels;
    out += '}';
  }
  out += ' ';
  out += FormatValue(value);
  out += '\n';
}

}  // namespace

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(const std::string& help) {
  std::string out;
  out.reserve(help.size());
  for (const char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Counter::Increment(double amount) {
  if (!(amount >= 0.0)) return;  // also drops NaN
  value_.fetch_add(amount, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    HR_CHECK_MSG(std::isfinite(bounds_[i]), "histogram bounds must be finite");
    HR_CHECK_MSG(i == 0 || bounds_[i - 1] < bounds_[i], "histogram bounds must increase");
  }
}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  // The first bound >= value: buckets are `le` (inclusive upper bounds).
  const size_t index = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                           bounds_.begin());
  counts_[index].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot snapshot;
  snapshot.cumulative.resize(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    snapshot.cumulative[i] = total;
  }
  snapshot.count = total;
  snapshot.sum = sum_.load(std::memory_order_relaxed);
  return snapshot;
}

namespace internal {

void RenderSamples(const Counter& counter, const std::string& name, const std::string& labels,
                   std::string& out) {
  AppendSample(name, labels, counter.Value(), out);
}

void RenderSamples(const Gauge& gauge, const std::string& name, const std::string& labels,
                   std::string& out) {
  AppendSample(name, labels, gauge.Value(), out);
}

void RenderSamples(const Histogram& histogram, const std::string& name, const std::string& labels,
                   std::string& out) {
  const Histogram::Snapshot snapshot = histogram.Read();
  const std::string bucket = name + "_bucket";
  const std::string prefix = labels.empty() ? std::string() : labels + ",";
  const std::vector<double>& bounds = histogram.bounds();
  for (size_t i = 0; i <= bounds.size(); ++i) {
    const std::string le = i < bounds.size() ? FormatValue(bounds[i]) : std::string("+Inf");
    AppendSample(bucket, prefix + "le=\"" + le + "\"", static_cast<double>(snapshot.cumulative[i]),
                 out);
  }
  AppendSample(name + "_sum", labels, snapshot.sum, out);
  AppendSample(name + "_count", labels, static_cast<double>(snapshot.count), out);
}

}  // namespace internal

FamilyBase::FamilyBase(std::string name, std::string help, std::vector<std::string> label_names,
                       MetricType type)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      type_(type) {
  HR_CHECK_MSG(IsMetricName(name_), "bad metric name");
  for (const std::string& label : label_names_) {
    HR_CHECK_MSG(IsLabelName(label), "bad label name");
    HR_CHECK_MSG(type_ != MetricType::kHistogram || label != "le",
                 "a histogram cannot have a label named le");
  }
}

void FamilyBase::CheckLabelValues(const std::vector<std::string>& values) const {
  HR_CHECK_MSG(values.size() == label_names_.size(), "wrong number of label values");
}

void FamilyBase::Render(std::string& out) const {
  const std::string exported = type_ == MetricType::kCounter ? name_ + "_total" : name_;
  out += "# HELP " + exported + " " + EscapeHelp(help_) + "\n";
  out += "# TYPE " + exported + " " + TypeName(type_) + "\n";
  ForEachChild([&](const std::vector<std::string>& values, const void* child) {
    std::string labels;
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) labels += ',';
      labels += label_names_[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
    }
    RenderChild(child, exported, labels, out);
  });
}

void Registry::Add(std::unique_ptr<FamilyBase> family) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& existing : families_) {
    HR_CHECK_MSG(existing->name() != family->name(), "duplicate metric family");
  }
  families_.push_back(std::move(family));
}

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help,
                                      const std::vector<std::string>& label_names) {
  HR_CHECK_MSG(!name.ends_with("_total"), "give counter names without _total");
  auto family = std::make_unique<Family<Counter>>(name, help, label_names, MetricType::kCounter,
                                                  [] { return std::make_unique<Counter>(); });
  Family<Counter>& result = *family;
  Add(std::move(family));
  if (label_names.empty()) result.WithLabels({});
  return result;
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help,
                                  const std::vector<std::string>& label_names) {
  auto family = std::make_unique<Family<Gauge>>(name, help, label_names, MetricType::kGauge,
                                                [] { return std::make_unique<Gauge>(); });
  Family<Gauge>& result = *family;
  Add(std::move(family));
  if (label_names.empty()) result.WithLabels({});
  return result;
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          const std::vector<std::string>& label_names,
                                          const std::vector<double>& bounds) {
  Histogram check(bounds);  // validates the bounds now rather than at first use
  auto family =
      std::make_unique<Family<Histogram>>(name, help, label_names, MetricType::kHistogram,
                                          [bounds] { return std::make_unique<Histogram>(bounds); });
  Family<Histogram>& result = *family;
  Add(std::move(family));
  if (label_names.empty()) result.WithLabels({});
  return result;
}

void Registry::AddCollectHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  hooks_.push_back(std::move(hook));
}

std::string Registry::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& hook : hooks_) hook();
  std::string out;
  for (const auto& family : families_) family->Render(out);
  return out;
}

std::vector<double> OneTwoFiveBounds(int64_t max) {
  std::vector<double> bounds;
  for (int64_t decade = 1; bounds.empty() || decade <= max; decade *= 10) {
    for (int64_t step : {1, 2, 5}) {
      if (decade * step <= max || bounds.empty()) {
        bounds.push_back(static_cast<double>(decade * step));
      }
    }
  }
  return bounds;
}

}  // namespace headroom::metrics
