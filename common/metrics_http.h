// MetricsHttpServer: a minimal HTTP/1.1 server for Prometheus scrapes and health probes.
//
//   GET /metrics -> 200, text/plain; version=0.0.4, the registry's exposition text
//   GET /health  -> 200 "ok" when health_fn() is true, else 503 "not serving"
//   other paths -> 404; other methods on those paths -> 405; a malformed request -> 400 and close.
//
// Threads: one io_context on its own thread serves every connection (a scrape is small and rare).
// Connections are kept alive, each with a 30 s idle timeout; headers are capped at 8 KiB and
// bodies at 64 KiB, so garbage input ends in a 400 or a closed connection, never a crash.
// Stop() (or the destructor) closes the listener and every connection and joins the thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics.h"

namespace headroom::metrics {

class MetricsHttpServer {
 public:
  // Listens on host:port (port 0 = pick a free one; port() says which) and starts serving.
  // `registry` must outlive the server; `health_fn` is called on the server thread.
  // Unavailable if the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& host, int port, const Registry* registry,
      std::function<bool()> health_fn);
  ~MetricsHttpServer();

  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  [[nodiscard]] int port() const;
  // Stops serving and joins; idempotent.
  void Stop();

  struct Impl;

 private:
  explicit MetricsHttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace headroom::metrics
