// The writer a /v1/responses request's chat generation answers through: it turns the chat answer
// into the Responses API's (openai::ResponsesBody for a whole answer, openai::ResponsesStream for
// a stream) and passes errors and everything else through unchanged.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "router/http/http_server.h"
#include "router/openai/responses_api.h"

namespace headroom::router {

std::shared_ptr<http::ResponseWriter> ResponsesWriter(std::shared_ptr<http::ResponseWriter> inner,
                                                      const openai::ResponsesRequest& request,
                                                      std::string id, int64_t created_at);

}  // namespace headroom::router
