// Conversions between headroom.v1 worker messages and the engine's native structs, done once at
// the gRPC edge (the engine never sees protobuf), and absl::Status -> grpc::Status.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/support/status.h"
#include "headroom/v1/worker.pb.h"
#include "kvcache/prefix_cache_delta.h"
#include "worker/engine/engine.h"
#include "worker/engine/request.h"
#include "worker/model/generation_config.h"

namespace headroom::worker {

// Parses a Submit into an engine request with id `id`. Unset sampling fields take `defaults`
// (the model's generation_config.json, as vLLM's --generation-config auto), else vLLM's
// (temperature 1, top_p 1, top_k all, min_p 0, repetition_penalty 1, max_tokens 16).
// InvalidArgument naming the field for values the proto allows but the engine cannot mean
// (negative top_k or logprobs); the engine checks the rest (vocabulary, lengths, blocks) with the
// numbers, and resolves a lora_name (NotFound naming the adapters served).
[[nodiscard]] absl::StatusOr<Request> RequestFromProto(const v1::SubmitRequest& proto, RequestId id,
                                                       const SamplingDefaults& defaults = {});

[[nodiscard]] v1::FinishReason FinishReasonToProto(FinishReason reason);

// Appends `token` (with its logprobs) to `response`; sets finish_reason when it is the last.
void AppendToken(const StepToken& token, v1::SubmitResponse& response);

// Fields of a load report that come from the engine (sequence, draining and model are the
// service's).
void FillLoadReport(const EngineStats& stats, v1::LoadReport& report);

// A prefix-cache delta on the wire and back (hashes packed by kvcache::PackBlockHashes); nullopt
// when a field's size is not a multiple of 16 bytes.
[[nodiscard]] v1::PrefixCacheDelta ToProto(const kvcache::PrefixCacheDelta& delta);
[[nodiscard]] std::optional<kvcache::PrefixCacheDelta> FromProto(const v1::PrefixCacheDelta& delta);

// Same canonical code and message.
[[nodiscard]] grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace headroom::worker
