// GroupMessage: what a tensor-parallel leader broadcasts to its followers before each step
// (docs/tensor_parallel.md): the StepPlan, a keep-alive while idle, stop, or a LoRA adapter to
// load into a slot between steps (after which every rank all-reduces whether it could).
//
// Wire format (little-endian, what every rank of a group runs, so no versioning):
//   u32 magic "HRGM", u8 kind, then for kPlan:
//   i64 step, i32 num_tokens, u32 #sequences, each: i64 id, i32 num_computed_tokens,
//   u32 #token_ids, i32..., u32 #new_block_ids, i32... (group by group), u32 #layer groups,
//   i32 num_released_blocks per group, u8 sample,
//   i32 prompt_logprobs_end, i32 lora_slot;
//   u32 #released, i64...; u32 #preempted, i64...
// and for kLoadLora: i32 slot, u32 #name bytes, name, u32 #path bytes, path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/comm/communicator.h"
#include "worker/engine/step_plan.h"

namespace headroom::worker {

enum class GroupMessageKind : uint8_t {
  kPlan = 0,       // run this step
  kKeepAlive = 1,  // the leader is idle; nothing to run (bounds the followers' wait)
  kStop = 2,       // the leader is stopping; exit cleanly
  kLoadLora = 3,   // load an adapter into a slot (Engine::LoadLora)
};

// kLoadLora: every rank loads its shard of the PEFT adapter at `path` into `slot`.
struct LoraLoad {
  int32_t slot = 0;
  std::string name;
  std::string path;
};

struct GroupMessage {
  GroupMessageKind kind = GroupMessageKind::kPlan;
  StepPlan plan;         // kPlan only
  LoraLoad lora_load{};  // kLoadLora only
};

[[nodiscard]] std::string EncodeGroupMessage(const GroupMessage& message);
// DataLossError naming what is malformed (truncated, bad magic or kind, trailing bytes).
[[nodiscard]] absl::StatusOr<GroupMessage> DecodeGroupMessage(std::string_view bytes);

// Every rank of `comm` calls it with whether it failed at something (a kLoadLora); each learns
// which ranks did, in order. Each rank broadcasts its answer in turn, through host memory.
[[nodiscard]] absl::StatusOr<std::vector<int>> RanksThatFailed(Communicator& comm, bool failed);

}  // namespace headroom::worker
