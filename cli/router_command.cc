#include "cli/router_command.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/exit_codes.h"
#include "cli/parse_flags.h"
#include "cli/stop_signals.h"
#include "common/flags.h"
#include "common/status_macros.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "router/service/dispatcher.h"
#include "router/service/group_monitor.h"
#include "router/service/inference_service.h"
#include "router/tokenizer/byte_tokenizer.h"
#include "router/tokenizer/tokenizer.h"

namespace headroom::cli {
namespace {

FlagSet MakeRouterFlags() {
  FlagSet flags("headroom router",
                "Serve headroom.v1.Inference and grpc.health.v1.Health over gRPC, placing each "
                "request on the worker group with the most free KV blocks. Prints 'headroom "
                "router listening on HOST:PORT' when serving; SIGTERM/SIGINT finish streams and "
                "exit 0.");
  flags.AddInt64("grpc-port", 50051, "Port to listen on (0 = pick a free one; the line says which).");
  flags.AddString("host", "127.0.0.1", "Address to listen on.");
  flags.AddString("workers", std::nullopt,
                  "Comma-separated worker group leader addresses (host:port,host:port).");
  flags.AddString("tokenizer", std::nullopt,
                  "Directory with tokenizer.json (default: the byte tokenizer of dummy models).");
  flags.AddInt64("byte-tokenizer-vocab", 256,
                 "Vocabulary size of the byte tokenizer used without --tokenizer (256 = bytes "
                 "only; 258 adds <|bos|>/<|eos|>).");
  flags.AddInt64("max-queue-len", 1024,
                 "Requests the admission queue holds before refusing with RESOURCE_EXHAUSTED "
                 "(accepts again at 3/4 of it).");
  flags.AddInt64("request-timeout-s", 600, "Deadline of requests whose client sets none.");
  flags.AddString("served-model-name", std::nullopt,
                  "Model id in ListModels (default: the model the workers report).");
  flags.AddInt64("shutdown-timeout-s", 30,
                 "On SIGTERM/SIGINT, seconds to let open streams finish before cancelling.");
  flags.MarkRequired("workers");
  return flags;
}

absl::Status Serve(const FlagSet& flags, const sigset_t& stop_signals, std::ostream& out,
                   std::ostream& err) {
  std::vector<std::string> workers;
  for (absl::string_view w : absl::StrSplit(*flags.GetString("workers"), ',', absl::SkipWhitespace())) {
    workers.emplace_back(w);
  }
  if (workers.empty()) return absl::InvalidArgumentError("--workers lists no address");
  const int64_t port = *flags.GetInt64("grpc-port");
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--grpc-port must be in [0, 65535], got ", port));
  }
  const int64_t max_queue = *flags.GetInt64("max-queue-len");
  if (max_queue < 2 || max_queue > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-queue-len must be in [2, 2^31), got ", max_queue));
  }
  const int64_t timeout_s = *flags.GetInt64("request-timeout-s");
  if (timeout_s < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--request-timeout-s must be >= 1, got ", timeout_s));
  }
  std::unique_ptr<router::Tokenizer> tokenizer;
  if (flags.GetString("tokenizer").has_value()) {
    HR_ASSIGN_OR_RETURN(tokenizer, router::Tokenizer::FromDirectory(*flags.GetString("tokenizer")));
  } else {
    const int64_t vocab = *flags.GetInt64("byte-tokenizer-vocab");
    if (vocab < 256 || vocab > INT32_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat("--byte-tokenizer-vocab must be >= 256, got ", vocab));
    }
    HR_ASSIGN_OR_RETURN(tokenizer, router::MakeByteTokenizer(static_cast<int32_t>(vocab)));
  }
  const std::string host = *flags.GetString("host");

  router::DispatcherOptions dispatch_options;
  dispatch_options.groups = workers;
  dispatch_options.admission.high_watermark = static_cast<int32_t>(max_queue);
  dispatch_options.admission.low_watermark = static_cast<int32_t>(max_queue * 3 / 4);
  router::Dispatcher dispatcher(dispatch_options);
  router::GroupMonitor monitor(workers, &dispatcher);
  router::InferenceService service(
      {.tokenizer = tokenizer.get(),
       .served_model_name = flags.GetString("served-model-name").value_or(""),
       .default_timeout = absl::Seconds(timeout_s)},
      &dispatcher, &monitor);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(absl::StrCat(host, ":", port), grpc::InsecureServerCredentials(),
                           &selected_port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || selected_port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":", port));
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  health->SetServingStatus(false);
  dispatcher.SetUpListener([health](bool any_up) { health->SetServingStatus(any_up); });
  dispatcher.Start();
  monitor.Start();
  err << "headroom router: " << workers.size() << " worker group(s), queue "
      << max_queue << " (resume at " << max_queue * 3 / 4 << ")\n";
  out << "headroom router listening on " << host << ":" << selected_port << std::endl;

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  const int64_t shutdown_s = *flags.GetInt64("shutdown-timeout-s");
  err << "headroom router: signal " << signal_number << ", finishing streams (at most "
      << shutdown_s << " s)\n";
  health->SetServingStatus(false);
  health->Shutdown();
  // Stops accepting at once; open streams get until the deadline, then are cancelled.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(shutdown_s));
  server->Wait();
  // Worker calls of cancelled streams end shortly after their cancel.
  if (!service.WaitForIdle(absl::Now() + absl::Seconds(5))) {
    err << "headroom router: worker calls still open after shutdown\n";
  }
  monitor.Stop();
  dispatcher.Stop();
  err << "headroom router: stopped\n";
  return absl::OkStatus();
}

}  // namespace

int RunRouterCommand(absl::Span<const std::string_view> args, std::ostream& out,
                     std::ostream& err) {
  FlagSet flags = MakeRouterFlags();
  if (const std::optional<int> done = ParseFlagsOrExit(flags, args, out, err)) return *done;
  const sigset_t stop_signals = BlockStopSignals();
  if (absl::Status status = Serve(flags, stop_signals, out, err); !status.ok()) {
    err << "error: " << status.message() << "\n";
    return kExitRefused;
  }
  return kExitOk;
}

}  // namespace headroom::cli
