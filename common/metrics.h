// A small, thread-safe Prometheus metrics registry with the text exposition format 0.0.4.
//
// A metric is a family (name, help, label names) of children, one per set of label values;
// `WithLabels({...})` returns the child for those values, creating it once; the reference stays
// valid for the registry's lifetime, so hot paths look a child up once and keep it. A family
// without labels has one child, `WithLabels({})`.
//
// Threads: Increment/Set/Observe are lock-free (relaxed atomics); WithLabels takes the family's
// lock; Render takes the registry's lock (and each family's while it prints it). Rendering is not
// an atomic snapshot: a histogram's `_sum` may lag its buckets by an observation in flight, but its
// `_count` always equals its `+Inf` bucket.
//
// Names: counters are given without `_total` and exported with it (`vllm:prompt_tokens` ->
// `vllm:prompt_tokens_total`), as vLLM's Python client exports them. A bad metric or label name,
// a duplicate family, or a label-value count that does not match the family is a programming
// error (HR_CHECK), never input.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace headroom::metrics {

class Counter {
 public:
  // `amount` must be >= 0 (a negative one is ignored: counters never go down).
  void Increment(double amount = 1.0);
  [[nodiscard]] double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Increment(double amount = 1.0) { value_.fetch_add(amount, std::memory_order_relaxed); }
  void Decrement(double amount = 1.0) { value_.fetch_sub(amount, std::memory_order_relaxed); }
  [[nodiscard]] double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds (inclusive), strictly increasing, finite; `+Inf` is
  // implicit.
  explicit Histogram(std::vector<double> bounds);

  void Observe(double value);

  struct Snapshot {
    // Cumulative counts, one per bound plus the last for +Inf (== count).
    std::vector<uint64_t> cumulative;
    double sum = 0.0;
    uint64_t count = 0;
  };
  [[nodiscard]] Snapshot Read() const;
  [[nodiscard]] const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  // Non-cumulative counts: [i] counts values in (bounds_[i-1], bounds_[i]]; the last is +Inf.
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
};

enum class MetricType { kCounter, kGauge, kHistogram };

namespace internal {
// Append one child's samples; `labels` is the rendered `k="v",...` list (maybe empty).
void RenderSamples(const Counter& counter, const std::string& name, const std::string& labels,
                   std::string& out);
void RenderSamples(const Gauge& gauge, const std::string& name, const std::string& labels,
                   std::string& out);
void RenderSamples(const Histogram& histogram, const std::string& name, const std::string& labels,
                   std::string& out);
}  // namespace internal

// Base of the typed families: name, help, label names, and printing.
class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, std::vector<std::string> label_names,
             MetricType type);
  virtual ~FamilyBase() = default;

  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  [[nodiscard]] const std::string& name() const { return name_; }
  // Appends this family's exposition text to `out`.
  void Render(std::string& out) const;

 protected:
  // Checks the number of values against the label names.
  void CheckLabelValues(const std::vector<std::string>& values) const;
  // Appends the child's samples; `labels` is the rendered `k="v",...` list (maybe empty).
  virtual void RenderChild(const void* child, const std::string& exported_name,
                           const std::string& labels, std::string& out) const = 0;
  // Calls `fn` for every child in label-value order, under the family's lock.
  virtual void ForEachChild(
      const std::function<void(const std::vector<std::string>&, const void*)>& fn) const = 0;

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const MetricType type_;
  mutable std::mutex mu_;
};

template <typename T>
class Family final : public FamilyBase {
 public:
  Family(std::string name, std::string help, std::vector<std::string> label_names, MetricType type,
         std::function<std::unique_ptr<T>()> make)
      : FamilyBase(std::move(name), std::move(help), std::move(label_names), type),
        make_(std::move(make)) {}

  // The child for `values` (one per label name, in order); created on first use, then stable.
  T& WithLabels(const std::vector<std::string>& values) {
    CheckLabelValues(values);
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<T>& child = children_[values];
    if (child == nullptr) child = make_();
    return *child;
  }

 private:
  void RenderChild(const void* child, const std::string& exported_name, const std::string& labels,
                   std::string& out) const override {
    internal::RenderSamples(*static_cast<const T*>(child), exported_name, labels, out);
  }
  void ForEachChild(
      const std::function<void(const std::vector<std::string>&, const void*)>& fn) const override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [values, child] : children_) fn(values, child.get());
  }

  const std::function<std::unique_ptr<T>()> make_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> children_;  // guarded by mu_
};

// vLLM's histogram bounds for token counts: 1, 2, 5, 10, 20, 50, ... up to `max` (at least {1}).
std::vector<double> OneTwoFiveBounds(int64_t max);

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Families print in the order they were added. `name` without `_total` for counters.
  Family<Counter>& AddCounter(const std::string& name, const std::string& help,
                              const std::vector<std::string>& label_names = {});
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help,
                          const std::vector<std::string>& label_names = {});
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                  const std::vector<std::string>& label_names,
                                  const std::vector<double>& bounds);

  // `hook` runs at the start of every Render (e.g. to copy polled statistics into gauges), one
  // Render at a time, under the registry lock: it must not call Render or Add*.
  void AddCollectHook(std::function<void()> hook);

  // The exposition text (format 0.0.4) of every family.
  [[nodiscard]] std::string Render() const;

 private:
  void Add(std::unique_ptr<FamilyBase> family);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_;  // guarded by mu_
  std::vector<std::function<void()>> hooks_;           // guarded by mu_
};

// The Content-Type of Render()'s text.
inline constexpr char kExpositionContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Exposition helpers (exposed for tests).
// A sample value: shortest round-trip decimal, `+Inf`, `-Inf`, `NaN`.
std::string FormatValue(double value);
// Label value escaping: backslash, double quote and newline.
std::string EscapeLabelValue(const std::string& value);
// HELP text escaping: backslash and newline.
std::string EscapeHelp(const std::string& help);

}  // namespace headroom::metrics
