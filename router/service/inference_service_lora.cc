// InferenceService's run-time LoRA adapter loads and unloads (docs/router.md, "LoRA adapters").
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "router/service/inference_service.h"

namespace headroom::router {
namespace {

// A load reads the adapter on every rank of a group between steps; its files may be large.
constexpr absl::Duration kLoraCallTimeout = absl::Seconds(120);
// Reports follow a change within ~50 ms (WorkerServiceOptions::min_report_interval).
constexpr absl::Duration kLoraReportTimeout = absl::Seconds(10);

}  // namespace

grpc::Status InferenceService::LoadLoraAdapter(const std::string& name, const std::string& path,
                                               bool load_inplace) {
  v1::LoadLoraAdapterRequest request;
  request.set_lora_name(name);
  request.set_lora_path(path);
  request.set_load_inplace(load_inplace);
  return UpdateLora(name, /*load=*/true,
                    [&](v1::Worker::Stub& stub, grpc::ClientContext& context, uint64_t* sequence) {
                      v1::LoadLoraAdapterResponse response;
                      const grpc::Status status =
                          stub.LoadLoraAdapter(&context, request, &response);
                      *sequence = response.report_sequence();
                      return status;
                    });
}

grpc::Status InferenceService::UnloadLoraAdapter(const std::string& name) {
  v1::UnloadLoraAdapterRequest request;
  request.set_lora_name(name);
  return UpdateLora(name, /*load=*/false,
                    [&](v1::Worker::Stub& stub, grpc::ClientContext& context, uint64_t* sequence) {
                      v1::UnloadLoraAdapterResponse response;
                      const grpc::Status status =
                          stub.UnloadLoraAdapter(&context, request, &response);
                      *sequence = response.report_sequence();
                      return status;
                    });
}

grpc::Status InferenceService::UpdateLora(
    const std::string& name, bool load,
    const std::function<grpc::Status(v1::Worker::Stub&, grpc::ClientContext&,
                                     uint64_t* report_sequence)>& call) {
  const std::vector<size_t> groups = monitor_->current();
  if (groups.empty()) {
    return {grpc::StatusCode::UNAVAILABLE, "no worker group is up to serve the adapter"};
  }
  std::vector<grpc::Status> results(groups.size());
  std::vector<uint64_t> sequences(groups.size(), 0);
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < groups.size(); ++i) {
      threads.emplace_back([&, i] {
        grpc::ClientContext context;
        context.set_deadline(absl::ToChronoTime(absl::Now() + kLoraCallTimeout));
        results[i] = call(*monitor_->stub(groups[i]), context, &sequences[i]);
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  std::vector<LoraChange> done;
  std::vector<std::string> failures;
  const grpc::Status* first_failure = nullptr;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (results[i].ok()) {
      done.push_back({.group = groups[i], .report_sequence = sequences[i]});
      continue;
    }
    if (first_failure == nullptr) first_failure = &results[i];
    failures.push_back(
        absl::StrCat("group ", monitor_->address(groups[i]), ": ", results[i].error_message()));
  }
  if (!done.empty() &&
      !dispatcher_->AwaitLoraReports(done, name, load, absl::Now() + kLoraReportTimeout)) {
    failures.push_back(absl::StrCat("the groups that ", load ? "loaded" : "unloaded",
                                    " it did not report so within ",
                                    absl::FormatDuration(kLoraReportTimeout)));
  }
  if (failures.empty()) {
    // vLLM's answers, word for word.
    return {grpc::StatusCode::OK,
            load ? absl::StrCat("Success: LoRA adapter '", name, "' added successfully.")
                 : absl::StrCat("Success: LoRA adapter '", name, "' removed successfully.")};
  }
  std::vector<std::string> succeeded;
  for (const LoraChange& change : done) succeeded.push_back(monitor_->address(change.group));
  const std::string message =
      absl::StrCat("LoRA adapter '", name, "' was not ", load ? "loaded" : "unloaded",
                   done.empty() ? ": " : " everywhere: ", absl::StrJoin(failures, "; "),
                   succeeded.empty() ? std::string()
                                     : absl::StrCat(" (", load ? "loaded" : "unloaded", " on ",
                                                    absl::StrJoin(succeeded, ", "), ")"));
  return {first_failure != nullptr ? first_failure->error_code() : grpc::StatusCode::UNAVAILABLE,
          message};
}

}  // namespace headroom::router
