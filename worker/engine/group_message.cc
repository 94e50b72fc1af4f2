#include "worker/engine/group_message.h"

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace headroom::worker {
namespace {

constexpr uint32_t kMagic = 0x4d475248;  // "HRGM"

class Writer {
 public:
  template <typename T>
  void Put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_.append(bytes, sizeof(T));
  }
  void PutString(const std::string& text) {
    Put(static_cast<uint32_t>(text.size()));
    out_.append(text);
  }
  template <typename T, typename F>
  void PutList(const std::vector<T>& items, F&& each) {
    Put(static_cast<uint32_t>(items.size()));
    for (const T& item : items) each(item);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  template <typename T>
  absl::StatusOr<T> Get(const char* what) {
    if (in_.size() < sizeof(T)) {
      return absl::DataLossError(absl::StrCat("group message truncated at ", what));
    }
    T value;
    std::memcpy(&value, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return value;
  }
  // A list length, refused when the bytes left cannot hold `min_item_bytes` per item.
  absl::StatusOr<uint32_t> Count(const char* what, size_t min_item_bytes) {
    HR_ASSIGN_OR_RETURN(const uint32_t n, Get<uint32_t>(what));
    if (static_cast<uint64_t>(n) * min_item_bytes > in_.size()) {
      return absl::DataLossError(
          absl::StrCat("group message claims ", n, " ", what, " in ", in_.size(), " bytes"));
    }
    return n;
  }
  absl::StatusOr<std::string> GetString(const char* what) {
    HR_ASSIGN_OR_RETURN(const uint32_t n, Count(what, 1));
    std::string text(in_.substr(0, n));
    in_.remove_prefix(n);
    return text;
  }
  [[nodiscard]] bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

absl::Status ReadIds(Reader& r, const char* what, std::vector<RequestId>* ids) {
  HR_ASSIGN_OR_RETURN(const uint32_t n, r.Count(what, sizeof(int64_t)));
  for (uint32_t i = 0; i < n; ++i) {
    HR_ASSIGN_OR_RETURN(const int64_t id, r.Get<int64_t>(what));
    ids->push_back(RequestId{id});
  }
  return absl::OkStatus();
}

absl::Status ReadPlan(Reader& r, StepPlan* plan) {
  HR_ASSIGN_OR_RETURN(plan->step, r.Get<int64_t>("step"));
  HR_ASSIGN_OR_RETURN(plan->num_tokens, r.Get<int32_t>("num_tokens"));
  HR_ASSIGN_OR_RETURN(const uint32_t seqs, r.Count("sequences", 29));
  for (uint32_t s = 0; s < seqs; ++s) {
    ScheduledSequence& seq = plan->sequences.emplace_back();
    HR_ASSIGN_OR_RETURN(const int64_t id, r.Get<int64_t>("sequence id"));
    seq.id = RequestId{id};
    HR_ASSIGN_OR_RETURN(seq.num_computed_tokens, r.Get<int32_t>("num_computed_tokens"));
    HR_ASSIGN_OR_RETURN(const uint32_t tokens, r.Count("token ids", sizeof(int32_t)));
    for (uint32_t i = 0; i < tokens; ++i) {
      HR_ASSIGN_OR_RETURN(const int32_t token, r.Get<int32_t>("token id"));
      seq.token_ids.push_back(token);
    }
    HR_ASSIGN_OR_RETURN(const uint32_t blocks, r.Count("block ids", sizeof(int32_t)));
    for (uint32_t i = 0; i < blocks; ++i) {
      HR_ASSIGN_OR_RETURN(const int32_t block, r.Get<int32_t>("block id"));
      seq.new_block_ids.push_back(kvcache::BlockId{block});
    }
    HR_ASSIGN_OR_RETURN(const uint32_t groups, r.Count("layer groups", sizeof(int32_t)));
    for (uint32_t g = 0; g < groups; ++g) {
      HR_ASSIGN_OR_RETURN(const int32_t released, r.Get<int32_t>("num_released_blocks"));
      seq.num_released_blocks.push_back(released);
    }
    HR_ASSIGN_OR_RETURN(const uint8_t sample, r.Get<uint8_t>("sample"));
    seq.sample = sample != 0;
    HR_ASSIGN_OR_RETURN(seq.prompt_logprobs_end, r.Get<int32_t>("prompt_logprobs_end"));
    HR_ASSIGN_OR_RETURN(seq.lora_slot, r.Get<int32_t>("lora_slot"));
  }
  HR_RETURN_IF_ERROR(ReadIds(r, "released ids", &plan->released));
  return ReadIds(r, "preempted ids", &plan->preempted);
}

}  // namespace

std::string EncodeGroupMessage(const GroupMessage& message) {
  Writer w;
  w.Put(kMagic);
  w.Put(static_cast<uint8_t>(message.kind));
  if (message.kind == GroupMessageKind::kLoadLora) {
    w.Put(message.lora_load.slot);
    w.PutString(message.lora_load.name);
    w.PutString(message.lora_load.path);
    return w.Take();
  }
  if (message.kind != GroupMessageKind::kPlan) return w.Take();
  const StepPlan& plan = message.plan;
  w.Put(plan.step);
  w.Put(plan.num_tokens);
  w.PutList(plan.sequences, [&](const ScheduledSequence& seq) {
    w.Put(seq.id.value());
    w.Put(seq.num_computed_tokens);
    w.PutList(seq.token_ids, [&](int32_t token) { w.Put(token); });
    w.PutList(seq.new_block_ids, [&](kvcache::BlockId block) { w.Put(block.value()); });
    w.PutList(seq.num_released_blocks, [&](int32_t released) { w.Put(released); });
    w.Put(static_cast<uint8_t>(seq.sample ? 1 : 0));
    w.Put(seq.prompt_logprobs_end);
    w.Put(seq.lora_slot);
  });
  w.PutList(plan.released, [&](RequestId id) { w.Put(id.value()); });
  w.PutList(plan.preempted, [&](RequestId id) { w.Put(id.value()); });
  return w.Take();
}

absl::StatusOr<GroupMessage> DecodeGroupMessage(std::string_view bytes) {
  Reader r(bytes);
  HR_ASSIGN_OR_RETURN(const uint32_t magic, r.Get<uint32_t>("magic"));
  if (magic != kMagic) {
    return absl::DataLossError(absl::StrCat("not a group message (magic ", magic, ")"));
  }
  HR_ASSIGN_OR_RETURN(const uint8_t kind, r.Get<uint8_t>("kind"));
  if (kind > static_cast<uint8_t>(GroupMessageKind::kLoadLora)) {
    return absl::DataLossError(absl::StrCat("unknown group message kind ", kind));
  }
  GroupMessage message;
  message.kind = static_cast<GroupMessageKind>(kind);
  if (message.kind == GroupMessageKind::kPlan) HR_RETURN_IF_ERROR(ReadPlan(r, &message.plan));
  if (message.kind == GroupMessageKind::kLoadLora) {
    HR_ASSIGN_OR_RETURN(message.lora_load.slot, r.Get<int32_t>("LoRA slot"));
    HR_ASSIGN_OR_RETURN(message.lora_load.name, r.GetString("LoRA name bytes"));
    HR_ASSIGN_OR_RETURN(message.lora_load.path, r.GetString("LoRA path bytes"));
  }
  if (!r.done()) return absl::DataLossError("group message has trailing bytes");
  return message;
}

absl::StatusOr<std::vector<int>> RanksThatFailed(Communicator& comm, bool failed) {
  std::vector<int> ranks;
  for (int root = 0; root < comm.world_size(); ++root) {
    uint8_t flag = root == comm.rank() && failed ? 1 : 0;
    HR_RETURN_IF_ERROR(comm.Broadcast(&flag, sizeof(flag), root));
    if (flag != 0) ranks.push_back(root);
  }
  return ranks;
}

}  // namespace headroom::worker
