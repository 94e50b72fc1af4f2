#include "router/frontend/responses_writer.h"

#include <functional>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"

namespace headroom::router {
namespace {

class ResponsesWriterImpl final : public http::ResponseWriter {
 public:
  ResponsesWriterImpl(std::shared_ptr<http::ResponseWriter> inner,
                      const openai::ResponsesRequest& request, std::string id, int64_t created_at)
      : inner_(std::move(inner)),
        echo_(request.echo),
        id_(id),
        created_at_(created_at),
        stream_(request.echo, std::move(id), created_at) {}

  void Respond(int status, std::string content_type, std::string body,
               std::vector<std::pair<std::string, std::string>> extra_headers) override {
    if (status == 200) {
      const nlohmann::ordered_json chat = nlohmann::ordered_json::parse(body, nullptr, false);
      body = openai::ResponsesBody(echo_, chat, id_, created_at_);
    }
    inner_->Respond(status, std::move(content_type), std::move(body), std::move(extra_headers));
  }
  void StartStream(int status, std::string content_type,
                   std::vector<std::pair<std::string, std::string>> extra_headers) override {
    inner_->StartStream(status, std::move(content_type), std::move(extra_headers));
  }
  bool Write(std::string data) override { return inner_->Write(stream_.Translate(data)); }
  void End() override { inner_->End(); }
  void OnDisconnect(std::function<void()> callback) override {
    inner_->OnDisconnect(std::move(callback));
  }

 private:
  const std::shared_ptr<http::ResponseWriter> inner_;
  // The request's settings a Response repeats (not its chat body, which may be large).
  const nlohmann::ordered_json echo_;
  const std::string id_;
  const int64_t created_at_;
  openai::ResponsesStream stream_;  // the Generation writes under its lock: one writer at a time
};

}  // namespace

std::shared_ptr<http::ResponseWriter> ResponsesWriter(std::shared_ptr<http::ResponseWriter> inner,
                                                      const openai::ResponsesRequest& request,
                                                      std::string id, int64_t created_at) {
  return std::make_shared<ResponsesWriterImpl>(std::move(inner), request, std::move(id),
                                               created_at);
}

}  // namespace headroom::router
