#include "worker/model/llama_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/cpu/rotary.h"
#include "worker/model/rotary_layout.h"
#include "worker/model/shard_weights.h"

namespace headroom::worker {

absl::StatusOr<std::unique_ptr<LlamaModel>> LlamaModel::Create(
    const ModelConfig& config, const ModelWeights& weights, const ModelLimits& limits,
    Backend* backend, Communicator* comm, absl::Span<const LoraAdapter> adapters) {
  if (limits.max_num_batched_tokens <= 0 || limits.max_num_seqs <= 0 || limits.max_model_len <= 0 ||
      limits.num_kv_blocks < 2 || limits.block_size <= 0) {
    return absl::InvalidArgumentError("model limits must be positive (and at least 2 KV blocks)");
  }
  if (comm != nullptr) {
    HR_RETURN_IF_ERROR(
        CheckShardable(config, {.tensor_parallel_size = comm->world_size(), .rank = comm->rank()}));
  }
  std::unique_ptr<LlamaModel> model(new LlamaModel(config, limits, backend, comm));
  HR_RETURN_IF_ERROR(model->CheckShard(weights));
  HR_RETURN_IF_ERROR(model->Upload(weights));
  HR_RETURN_IF_ERROR(model->UploadLora(adapters));
  HR_RETURN_IF_ERROR(model->AllocateArena());
  return model;
}

LlamaModel::LlamaModel(const ModelConfig& config, const ModelLimits& limits, Backend* backend,
                       Communicator* comm)
    : config_(config),
      limits_(limits),
      backend_(backend),
      comm_(comm != nullptr ? comm : &single_rank_),
      tp_(comm_->world_size()),
      shard_(kvcache::ShardOf(ModelDimsOf(config), tp_)),
      offsets_(kvcache::ShardOffsetsOf(ModelDimsOf(config), tp_, comm_->rank())),
      max_blocks_per_seq_((limits.max_model_len + limits.block_size - 1) / limits.block_size),
      kv_groups_(KvCacheLayerGroups(config)) {}

absl::StatusOr<float*> LlamaModel::AllocateFloats(int64_t count, const std::string& what) {
  HR_ASSIGN_OR_RETURN(void* buffer,
                      backend_->Allocate(static_cast<size_t>(count) * sizeof(float), what));
  return static_cast<float*>(buffer);
}

absl::StatusOr<const float*> LlamaModel::UploadTensor(const std::vector<float>& host,
                                                      const std::string& what) {
  if (host.empty()) return nullptr;
  HR_ASSIGN_OR_RETURN(float* device, AllocateFloats(static_cast<int64_t>(host.size()), what));
  backend_->CopyToDevice(device, host.data(), host.size() * sizeof(float));
  return device;
}

absl::StatusOr<const float*> LlamaModel::UploadNorm(const std::vector<float>& host,
                                                    const std::string& what, double factor) {
  if (!config_.norm_weight_offset) return UploadScaled(host, factor, what);
  std::vector<float> weight = host;
  for (float& w : weight) w += 1.0f;
  return UploadScaled(weight, factor, what);
}

absl::StatusOr<const float*> LlamaModel::UploadScaled(const std::vector<float>& host, double factor,
                                                      const std::string& what) {
  if (factor == 1.0) return UploadTensor(host, what);
  std::vector<float> scaled = host;
  for (float& v : scaled) v = static_cast<float>(static_cast<double>(v) * factor);
  return UploadTensor(scaled, what);
}

absl::StatusOr<const float*> LlamaModel::UploadQueryKeyRows(const std::vector<float>& host,
                                                            int64_t row_width,
                                                            const std::string& what) {
  if (!config_.interleaved_rotary) return UploadTensor(host, what);
  std::vector<float> rows = host;
  HR_RETURN_IF_ERROR(
      InterleavedToRotateHalfRows(rows, row_width, config_.head_dim, RotaryDim(config_)));
  return UploadTensor(rows, what);
}

absl::Status LlamaModel::CheckShard(const ModelWeights& w) const {
  const auto rows = [](const HostTensor& t) { return t.shape.empty() ? int64_t{0} : t.shape[0]; };
  const int64_t layers = static_cast<int64_t>(w.layers.size());
  // The MLP's rows: a dense layer's gate_proj, or its first expert's.
  const auto mlp_rows = [&rows](const LayerWeights& l) {
    return rows(l.experts.empty() ? l.gate_proj : l.experts.front().gate_proj);
  };
  const int64_t first_mlp_rows =
      LayerHasExperts(config_, 0) ? shard_.intermediate : shard_.dense_intermediate;
  if (layers != config_.num_hidden_layers || rows(w.embed_tokens) != shard_.vocab_rows ||
      (layers > 0 &&
       (rows(w.layers[0].q_proj) != shard_.q_dim || rows(w.layers[0].k_proj) != shard_.kv_dim ||
        mlp_rows(w.layers[0]) != first_mlp_rows))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the weights are not rank ", comm_->rank(), "'s shard of a group of ", tp_, ": expected ",
        config_.num_hidden_layers, " layers, ", shard_.vocab_rows, " embedding rows, ",
        shard_.q_dim, " q_proj rows, ", shard_.kv_dim, " k_proj rows and ", first_mlp_rows,
        " gate_proj rows, got ", layers, " layers, ", rows(w.embed_tokens), " embedding rows",
        layers > 0 ? absl::StrCat(", ", rows(w.layers[0].q_proj), ", ", rows(w.layers[0].k_proj),
                                  " and ", mlp_rows(w.layers[0]))
                   : std::string()));
  }
  return absl::OkStatus();
}

absl::Status LlamaModel::Upload(const ModelWeights& w) {
  if (tp_ == 1) {
    HR_ASSIGN_OR_RETURN(embed_tokens_, UploadTensor(w.embed_tokens.data, "embed_tokens"));
  } else {
    std::vector<float> table = w.embed_tokens.data;
    table.resize(table.size() + static_cast<size_t>(config_.hidden_size), 0.0f);  // the zero row
    HR_ASSIGN_OR_RETURN(embed_tokens_, UploadTensor(table, "embed_tokens shard"));
    local_ids_.reserve(static_cast<size_t>(limits_.max_num_batched_tokens));
  }
  // Granite divides the logits by logits_scaling: folded into the final norm's weight, which only
  // the LM head reads (lm_head(norm(x) * w / s) = lm_head(norm(x) * w) / s, up to rounding).
  HR_ASSIGN_OR_RETURN(final_norm_, UploadNorm(w.norm.data, "norm", 1.0 / config_.logits_scaling));
  // transformers multiplies by the multiplier as a float32 tensor (Gemma: sqrt(hidden), rounded
  // from double as torch.tensor(hidden ** 0.5) is).
  embed_scale_ = static_cast<float>(config_.embedding_multiplier);
  if (config_.tie_word_embeddings) {
    lm_head_ = embed_tokens_;
  } else {
    HR_ASSIGN_OR_RETURN(lm_head_, UploadTensor(w.lm_head.data, "lm_head"));
  }
  std::optional<kernels::cpu::Llama3RopeScaling> scaling;
  if (config_.rope_scaling && config_.rope_scaling->type == RopeScalingType::kLlama3) {
    scaling = kernels::cpu::Llama3RopeScaling{
        .factor = config_.rope_scaling->factor,
        .low_freq_factor = config_.rope_scaling->low_freq_factor,
        .high_freq_factor = config_.rope_scaling->high_freq_factor,
        .original_max_position_embeddings = config_.rope_scaling->original_max_position_embeddings};
  }
  // Frequencies for the rotated values of a head (Phi-4-mini: 96 of 128), as transformers
  // computes them for partial_rotary_factor.
  const int64_t rotary_dim = RotaryDim(config_);
  // LongRoPE: one factor list for the whole life of the server, so a sequence's cached keys are
  // never rotated with two of them (docs/engine.md): the long factors when max_model_len exceeds
  // the pretrained context, else the short ones.
  std::vector<float> inv_freq;
  if (config_.long_rope) {
    const LongRope& long_rope = *config_.long_rope;
    const bool long_context = limits_.max_model_len > long_rope.original_max_position_embeddings;
    HR_ASSIGN_OR_RETURN(inv_freq,
                        kernels::cpu::LongRopeInvFreq(
                            rotary_dim, config_.rope_theta,
                            long_context ? long_rope.long_factor : long_rope.short_factor));
  } else if (config_.rope_scaling && config_.rope_scaling->type == RopeScalingType::kYarn) {
    const RopeScaling& yarn = *config_.rope_scaling;
    HR_ASSIGN_OR_RETURN(
        inv_freq, kernels::cpu::YarnInvFreq(
                      rotary_dim, config_.rope_theta,
                      {.factor = yarn.factor,
                       .original_max_position_embeddings = yarn.original_max_position_embeddings,
                       .beta_fast = yarn.beta_fast,
                       .beta_slow = yarn.beta_slow}));
  } else {
    HR_ASSIGN_OR_RETURN(inv_freq,
                        kernels::cpu::RopeInvFreq(rotary_dim, config_.rope_theta, scaling));
    // Linear: transformers divides the fp32 frequencies by the factor in fp32.
    if (config_.rope_scaling && config_.rope_scaling->type == RopeScalingType::kLinear) {
      for (float& f : inv_freq) f /= static_cast<float>(config_.rope_scaling->factor);
    }
  }
  HR_ASSIGN_OR_RETURN(inv_freq_, UploadTensor(inv_freq, "rope inv_freq"));
  // LongRoPE's and YaRN's attention factors multiply cos and sin, so only the rotated values of q
  // and k (a partial rotary's others stay as they are): they cannot be folded into the attention
  // scale.
  float rotary_scale = 1.0f;
  if (config_.long_rope) {
    rotary_scale = static_cast<float>(config_.long_rope->attention_factor);
  } else if (config_.rope_scaling && config_.rope_scaling->type == RopeScalingType::kYarn) {
    rotary_scale = static_cast<float>(config_.rope_scaling->attention_factor);
  }
  // Gemma 3 and OLMo 3: the sliding-window layers rotate with a base of their own, unscaled.
  const float* local_inv_freq = inv_freq_;
  if (config_.rope_local_theta > 0) {
    HR_ASSIGN_OR_RETURN(
        const std::vector<float> local,
        kernels::cpu::RopeInvFreq(rotary_dim, config_.rope_local_theta, std::nullopt));
    HR_ASSIGN_OR_RETURN(local_inv_freq, UploadTensor(local, "rope inv_freq (sliding layers)"));
  }

  // The pool: one K and one V tensor per slot of a layer group; a layer uses its slot's tensor
  // at the block ids of its group's tables (kvcache/layer_groups.h).
  const int64_t kv_floats = int64_t{limits_.num_kv_blocks} * limits_.block_size * shard_.kv_dim;
  std::vector<KvCacheLayer> pool(static_cast<size_t>(kv_groups_.group_size));
  for (size_t t = 0; t < pool.size(); ++t) {
    const std::string what = absl::StrCat("KV pool tensor ", t, " ");
    HR_ASSIGN_OR_RETURN(pool[t].k_cache, AllocateFloats(kv_floats, what + "k_cache"));
    HR_ASSIGN_OR_RETURN(pool[t].v_cache, AllocateFloats(kv_floats, what + "v_cache"));
    pool[t].num_blocks = limits_.num_kv_blocks;
    pool[t].block_size = limits_.block_size;
    pool[t].num_kv_heads = static_cast<int32_t>(shard_.kv_heads);
    pool[t].head_dim = static_cast<int32_t>(config_.head_dim);
  }
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& lw = w.layers[i];
    const std::string p = absl::StrCat("layer ", i, " ");
    DeviceLayer d;
    HR_ASSIGN_OR_RETURN(d.input_norm, UploadNorm(lw.input_layernorm.data, p + "input_layernorm"));
    const int64_t hidden = config_.hidden_size;
    HR_ASSIGN_OR_RETURN(d.q_proj, UploadQueryKeyRows(lw.q_proj.data, hidden, p + "q_proj"));
    HR_ASSIGN_OR_RETURN(d.k_proj, UploadQueryKeyRows(lw.k_proj.data, hidden, p + "k_proj"));
    HR_ASSIGN_OR_RETURN(d.v_proj, UploadTensor(lw.v_proj.data, p + "v_proj"));
    HR_ASSIGN_OR_RETURN(d.q_bias, UploadQueryKeyRows(lw.q_proj_bias.data, 1, p + "q_bias"));
    HR_ASSIGN_OR_RETURN(d.k_bias, UploadQueryKeyRows(lw.k_proj_bias.data, 1, p + "k_bias"));
    HR_ASSIGN_OR_RETURN(d.v_bias, UploadTensor(lw.v_proj_bias.data, p + "v_bias"));
    HR_ASSIGN_OR_RETURN(d.q_norm, UploadNorm(lw.q_norm.data, p + "q_norm"));
    HR_ASSIGN_OR_RETURN(d.k_norm, UploadNorm(lw.k_norm.data, p + "k_norm"));
    // Granite's residual_multiplier scales the attention and MLP outputs: folded into o_proj and
    // down_proj (and their biases), whose products are those outputs.
    const double residual = config_.residual_multiplier;
    HR_ASSIGN_OR_RETURN(d.o_proj, UploadScaled(lw.o_proj.data, residual, p + "o_proj"));
    HR_ASSIGN_OR_RETURN(d.o_bias, UploadScaled(lw.o_proj_bias.data, residual, p + "o_bias"));
    if (config_.sandwich_norms) {
      // Gemma 2 / GLM-4: post_attention_layernorm normalizes the attention output; the MLP's
      // input norm is pre_feedforward_layernorm (GLM-4's names: checkpoint.h, NormNames).
      HR_ASSIGN_OR_RETURN(d.attn_out_norm, UploadNorm(lw.post_attention_layernorm.data,
                                                      p + "post_attention_layernorm"));
      HR_ASSIGN_OR_RETURN(d.post_norm, UploadNorm(lw.pre_feedforward_layernorm.data,
                                                  p + "pre_feedforward_layernorm"));
      HR_ASSIGN_OR_RETURN(d.mlp_out_norm, UploadNorm(lw.post_feedforward_layernorm.data,
                                                     p + "post_feedforward_layernorm"));
    } else {
      HR_ASSIGN_OR_RETURN(d.post_norm,
                          UploadNorm(lw.post_attention_layernorm.data, p + "post_norm"));
    }
    const double score_scalar = config_.query_pre_attn_scalar > 0
                                    ? config_.query_pre_attn_scalar
                                    : static_cast<double>(config_.head_dim);
    const float scale = config_.attention_multiplier > 0
                            ? static_cast<float>(config_.attention_multiplier)
                            : 1.0f / std::sqrt(static_cast<float>(score_scalar));
    d.attention = AttentionParams{.scale = scale,
                                  .softcap = static_cast<float>(config_.attn_logit_softcapping),
                                  .sliding_window = static_cast<int32_t>(std::min<int64_t>(
                                      LayerSlidingWindow(config_, static_cast<int64_t>(i)),
                                      std::numeric_limits<int32_t>::max()))};
    const bool nope = i < config_.nope_layers.size() && config_.nope_layers[i];
    const bool local_rope =
        config_.rope_local_theta > 0 && LayerIsSlidingKind(config_, static_cast<int64_t>(i));
    d.inv_freq = nope ? nullptr : local_rope ? local_inv_freq : inv_freq_;
    d.rotary_scale = local_rope ? 1.0f : rotary_scale;
    // gate and up are fused into one GEMM: [gate rows; up rows].
    std::vector<float> gate_up = lw.gate_proj.data;
    gate_up.insert(gate_up.end(), lw.up_proj.data.begin(), lw.up_proj.data.end());
    HR_ASSIGN_OR_RETURN(d.gate_up, UploadTensor(gate_up, p + "gate_up_proj"));
    if (!lw.gate_proj_bias.data.empty()) {
      std::vector<float> bias = lw.gate_proj_bias.data;
      bias.insert(bias.end(), lw.up_proj_bias.data.begin(), lw.up_proj_bias.data.end());
      HR_ASSIGN_OR_RETURN(d.gate_up_bias, UploadTensor(bias, p + "gate_up_bias"));
    }
    HR_ASSIGN_OR_RETURN(d.down_proj, UploadScaled(lw.down_proj.data, residual, p + "down_proj"));
    HR_ASSIGN_OR_RETURN(d.down_bias,
                        UploadScaled(lw.down_proj_bias.data, residual, p + "down_bias"));
    if (!lw.experts.empty()) HR_RETURN_IF_ERROR(UploadExperts(lw, p, d.moe));
    d.kv = pool[static_cast<size_t>(kv_groups_.layer_slot[i])];
    d.kv_group = kv_groups_.layer_group[i];
    layers_.push_back(d);
  }
  return absl::OkStatus();
}

absl::Status LlamaModel::UploadExperts(const LayerWeights& lw, const std::string& p,
                                       MoeExperts& moe) {
  // Each expert's gate and up rows fused as the dense MLP's are, experts one after another.
  std::vector<float> gate_up;
  std::vector<float> down;
  for (const ExpertWeights& expert : lw.experts) {
    gate_up.insert(gate_up.end(), expert.gate_proj.data.begin(), expert.gate_proj.data.end());
    gate_up.insert(gate_up.end(), expert.up_proj.data.begin(), expert.up_proj.data.end());
    down.insert(down.end(), expert.down_proj.data.begin(), expert.down_proj.data.end());
  }
  HR_ASSIGN_OR_RETURN(moe.router, UploadTensor(lw.moe_router.data, p + "moe router"));
  HR_ASSIGN_OR_RETURN(moe.gate_up, UploadTensor(gate_up, p + "experts gate_up_proj"));
  // Granite-MoE's residual_multiplier scales the experts' sum: folded into each down_proj.
  HR_ASSIGN_OR_RETURN(moe.down,
                      UploadScaled(down, config_.residual_multiplier, p + "experts down_proj"));
  moe.num_experts = config_.num_experts;
  moe.top_k = config_.num_experts_per_tok;
  moe.inter = shard_.intermediate;
  moe.renormalize = config_.norm_topk_prob;
  moe.sigmoid_scores = config_.moe_sigmoid_scores;
  HR_ASSIGN_OR_RETURN(moe.correction_bias,
                      UploadTensor(lw.moe_correction_bias.data, p + "moe correction bias"));
  moe.num_groups = config_.moe_num_groups;
  moe.topk_groups = config_.moe_topk_groups;
  moe.routed_scale = static_cast<float>(config_.routed_scaling_factor);
  if (lw.shared_gate_proj.empty()) return absl::OkStatus();
  // The shared expert (Qwen2-MoE's, GLM-4.5's): gate and up fused the same way.
  std::vector<float> shared_gate_up = lw.shared_gate_proj.data;
  shared_gate_up.insert(shared_gate_up.end(), lw.shared_up_proj.data.begin(),
                        lw.shared_up_proj.data.end());
  HR_ASSIGN_OR_RETURN(moe.shared_gate_up,
                      UploadTensor(shared_gate_up, p + "shared_expert gate_up_proj"));
  HR_ASSIGN_OR_RETURN(moe.shared_down,
                      UploadScaled(lw.shared_down_proj.data, config_.residual_multiplier,
                                   p + "shared_expert down_proj"));
  HR_ASSIGN_OR_RETURN(moe.shared_gate,  // null for GLM-4.5's ungated shared experts
                      UploadTensor(lw.shared_expert_gate.data, p + "shared_expert_gate"));
  moe.shared_inter = shard_.shared_intermediate;
  return absl::OkStatus();
}

absl::Status LlamaModel::UploadLora(absl::Span<const LoraAdapter> adapters) {
  const int64_t given = static_cast<int64_t>(adapters.size());
  // Slots for adapters loaded later too (any rank up to the reserved one, any target), or just
  // those given: the memory planner counts the same.
  const bool reserved = limits_.lora_slots > 0;
  if (reserved && (given > limits_.lora_slots || limits_.lora_rank <= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("LoRA reservation of ", limits_.lora_slots,
                                                   " slots at rank ", limits_.lora_rank,
                                                   " cannot hold the ", given, " adapters given"));
  }
  const kvcache::LoraDims held =
      reserved ? ReservedLoraDims(limits_.lora_slots, limits_.lora_rank) : LoraDimsOf(adapters);
  num_lora_slots_ = static_cast<int32_t>(held.num_adapters);
  lora_rank_ = held.max_rank;
  const auto& targets = held.targets;
  if (num_lora_slots_ == 0) return absl::OkStatus();
  // [in, out] of each target on this rank, as the memory planner counts them.
  const auto dims = kvcache::LoraProjectionShapes(ModelDimsOf(config_), tp_);
  // Zeros: a slot without an adapter, or whose adapter leaves the target alone, adds nothing.
  // One host buffer, as large as the largest factor.
  int64_t widest = 0;
  for (size_t t = 0; t < kNumLoraTargets; ++t) {
    if (targets[t]) widest = std::max({widest, dims[t].first, dims[t].second});
  }
  const std::vector<float> zeros(static_cast<size_t>(num_lora_slots_ * lora_rank_ * widest), 0.0f);
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (size_t t = 0; t < kNumLoraTargets; ++t) {
      if (!targets[t]) continue;
      const auto [in, out] = dims[t];
      const std::string what =
          absl::StrCat("layer ", i, " ", LoraTargetName(static_cast<LoraTarget>(t)), " LoRA ");
      LoraWeights& lora = layers_[i].lora[t];
      HR_ASSIGN_OR_RETURN(float* a, AllocateFloats(num_lora_slots_ * lora_rank_ * in, what + "A"));
      HR_ASSIGN_OR_RETURN(float* b, AllocateFloats(num_lora_slots_ * out * lora_rank_, what + "B"));
      backend_->CopyToDevice(
          a, zeros.data(), static_cast<size_t>(num_lora_slots_ * lora_rank_ * in) * sizeof(float));
      backend_->CopyToDevice(
          b, zeros.data(), static_cast<size_t>(num_lora_slots_ * out * lora_rank_) * sizeof(float));
      lora = {
          .a = a, .b = b, .num_slots = num_lora_slots_, .rank = lora_rank_, .in = in, .out = out};
    }
  }
  for (int32_t slot = 0; slot < static_cast<int32_t>(given); ++slot) {
    HR_RETURN_IF_ERROR(LoadLoraSlot(slot, adapters[static_cast<size_t>(slot)]));
  }
  return absl::OkStatus();
}

absl::Status LlamaModel::LoadLoraSlot(int32_t slot, const LoraAdapter& adapter) {
  if (slot < 0 || slot >= num_lora_slots_) {
    return absl::InvalidArgumentError(
        absl::StrCat("LoRA slot ", slot, " is outside the model's ", num_lora_slots_, " slots"));
  }
  if (adapter.rank > lora_rank_ || adapter.layers.size() != layers_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("LoRA adapter \"", adapter.name, "\" has rank ",
                                                   adapter.rank, " and ", adapter.layers.size(),
                                                   " layers; the model's slots hold rank ",
                                                   lora_rank_, " and ", layers_.size(), " layers"));
  }
  const int64_t rank = lora_rank_;
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (size_t t = 0; t < kNumLoraTargets; ++t) {
      const auto target = static_cast<LoraTarget>(t);
      const LoraWeights& lora = layers_[i].lora[t];
      const HostTensor& la = adapter.layers[i].a[t];
      const HostTensor& lb = adapter.layers[i].b[t];
      if (lora.a == nullptr) {
        if (la.empty()) continue;
        return absl::InvalidArgumentError(absl::StrCat(
            "LoRA adapter \"", adapter.name, "\" changes ", LoraTargetName(target),
            ", which no adapter given at start changes (reserve slots for run-time loads)"));
      }
      const int64_t in = lora.in;
      const int64_t out = lora.out;
      // A's r rows, then zero rows up to the slots' rank; B's rows scaled, each padded with zero
      // columns. A target the adapter leaves alone is all zeros (it may have held another).
      std::vector<float> a(static_cast<size_t>(rank * in), 0.0f);
      std::vector<float> b(static_cast<size_t>(out * rank), 0.0f);
      if (!la.empty()) {
        const int64_t r = adapter.rank;
        if (la.shape != std::vector<int64_t>{r, in} || lb.shape != std::vector<int64_t>{out, r}) {
          return absl::InvalidArgumentError(absl::StrCat(
              "LoRA adapter \"", adapter.name, "\" layer ", i, " ", LoraTargetName(target),
              " is not rank ", comm_->rank(), "'s shard of a group of ", tp_, ": expected A [", r,
              ", ", in, "] and B [", out, ", ", r, "]"));
        }
        std::copy(la.data.begin(), la.data.end(), a.begin());
        // o_proj's and down_proj's outputs are scaled by Granite's residual_multiplier, the
        // adapter's update included: folded into B like the base weights.
        const bool residual = target == LoraTarget::kO || target == LoraTarget::kDown;
        const double scale = adapter.scale * (residual ? config_.residual_multiplier : 1.0);
        for (int64_t row = 0; row < out; ++row) {
          for (int64_t c = 0; c < r; ++c) {
            b[static_cast<size_t>(row * rank + c)] = static_cast<float>(
                static_cast<double>(lb.data[static_cast<size_t>(row * r + c)]) * scale);
          }
        }
        // GLM: q's and k's output rows in the rotate-half order, as their base weights.
        if (config_.interleaved_rotary && (target == LoraTarget::kQ || target == LoraTarget::kK)) {
          HR_RETURN_IF_ERROR(
              InterleavedToRotateHalfRows(b, rank, config_.head_dim, RotaryDim(config_)));
        }
      }
      // The model allocated these buffers (UploadLora); the view is read-only for the kernels.
      backend_->CopyToDevice(const_cast<float*>(lora.a) + slot * rank * in, a.data(),
                             a.size() * sizeof(float));
      backend_->CopyToDevice(const_cast<float*>(lora.b) + slot * out * rank, b.data(),
                             b.size() * sizeof(float));
    }
  }
  return absl::OkStatus();
}

absl::Status LlamaModel::AllocateArena() {
  const int64_t t = limits_.max_num_batched_tokens;
  const int64_t s = limits_.max_num_seqs;
  const int64_t hidden = config_.hidden_size;
  const int64_t q_width = shard_.q_dim;
  const int64_t kv_width = shard_.kv_dim;
  // The dense MLP's width, and at least an expert's (experts run in the backend's own scratch).
  const int64_t inter = std::max(shard_.dense_intermediate, shard_.intermediate);
  auto ints = [&](int64_t count, const char* what) -> absl::StatusOr<int32_t*> {
    HR_ASSIGN_OR_RETURN(void* p, backend_->Allocate(static_cast<size_t>(count) * 4, what));
    return static_cast<int32_t*>(p);
  };
  HR_ASSIGN_OR_RETURN(arena_.token_ids, ints(t, "token_ids"));
  HR_ASSIGN_OR_RETURN(void* positions, backend_->Allocate(static_cast<size_t>(t) * 8, "positions"));
  arena_.positions = static_cast<int64_t*>(positions);
  const int64_t groups = kv_groups_.num_groups();
  HR_ASSIGN_OR_RETURN(void* slots,
                      backend_->Allocate(static_cast<size_t>(groups * t) * 8, "slot_mapping"));
  arena_.slot_mapping = static_cast<int64_t*>(slots);
  HR_ASSIGN_OR_RETURN(arena_.query_start, ints(s + 1, "query_start"));
  HR_ASSIGN_OR_RETURN(arena_.context_lens, ints(s, "context_lens"));
  HR_ASSIGN_OR_RETURN(arena_.block_tables, ints(groups * s * max_blocks_per_seq_, "block_tables"));
  HR_ASSIGN_OR_RETURN(arena_.logits_rows, ints(s, "logits_rows"));
  HR_ASSIGN_OR_RETURN(arena_.residual, AllocateFloats(t * hidden, "residual"));
  HR_ASSIGN_OR_RETURN(arena_.hidden, AllocateFloats(t * hidden, "hidden"));
  HR_ASSIGN_OR_RETURN(arena_.q, AllocateFloats(t * q_width, "q"));
  HR_ASSIGN_OR_RETURN(arena_.k, AllocateFloats(t * kv_width, "k"));
  HR_ASSIGN_OR_RETURN(arena_.v, AllocateFloats(t * kv_width, "v"));
  HR_ASSIGN_OR_RETURN(arena_.attn, AllocateFloats(t * q_width, "attn"));
  HR_ASSIGN_OR_RETURN(arena_.proj, AllocateFloats(t * hidden, "proj"));
  HR_ASSIGN_OR_RETURN(arena_.gate_up, AllocateFloats(t * 2 * inter, "gate_up"));
  HR_ASSIGN_OR_RETURN(arena_.act, AllocateFloats(t * inter, "act"));
  HR_ASSIGN_OR_RETURN(arena_.last_hidden, AllocateFloats(s * hidden, "last_hidden"));
  HR_ASSIGN_OR_RETURN(arena_.logits, AllocateFloats(s * shard_.vocab_rows, "logits"));
  if (num_lora_slots_ > 0) {
    HR_ASSIGN_OR_RETURN(arena_.lora_starts, ints(s + 1, "LoRA segment starts"));
    HR_ASSIGN_OR_RETURN(arena_.lora_slots, ints(s, "LoRA segment slots"));
    HR_ASSIGN_OR_RETURN(arena_.lora_scratch, AllocateFloats(t * lora_rank_, "LoRA scratch"));
    lora_starts_host_.reserve(static_cast<size_t>(s + 1));
    lora_slots_host_.reserve(static_cast<size_t>(s));
  }
  if (tp_ > 1 && config_.qk_norm_across_heads) {
    HR_ASSIGN_OR_RETURN(arena_.norm_sums, AllocateFloats(2 * t, "q/k sums of squares"));
  }
  if (tp_ > 1) {
    HR_ASSIGN_OR_RETURN(arena_.gathered,
                        AllocateFloats(tp_ * s * shard_.vocab_rows, "gathered logits"));
    gathered_host_.resize(static_cast<size_t>(tp_ * s * shard_.vocab_rows));
  }
  return absl::OkStatus();
}

absl::Status LlamaModel::CopyInput(const ForwardInput& in) {
  const int32_t n = in.num_tokens();
  const int32_t seqs = in.num_seqs();
  if (n == 0 || n > limits_.max_num_batched_tokens || seqs > limits_.max_num_seqs ||
      static_cast<int32_t>(in.logits_rows.size()) > limits_.max_num_seqs ||
      in.block_tables.size() != static_cast<size_t>(kv_groups_.num_groups()) *
                                    static_cast<size_t>(seqs) *
                                    static_cast<size_t>(max_blocks_per_seq_) ||
      in.slot_mapping.size() !=
          static_cast<size_t>(kv_groups_.num_groups()) * in.token_ids.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("step of ", n, " tokens in ", seqs, " sequences with ", in.logits_rows.size(),
                     " logits rows exceeds the model's limits (", limits_.max_num_batched_tokens,
                     " tokens, ", limits_.max_num_seqs, " sequences and logits rows)"));
  }
  const int32_t* ids = in.token_ids.data();
  if (tp_ > 1) {
    // Rows of this rank's embedding slice; ids of other slices read the zero row after it.
    local_ids_.clear();
    for (const int32_t id : in.token_ids) {
      if (id < 0 || id >= config_.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "token id ", id, " is outside the vocabulary [0, ", config_.vocab_size, ")"));
      }
      const int64_t row = id - offsets_.vocab_row;
      local_ids_.push_back(
          static_cast<int32_t>(row >= 0 && row < shard_.vocab_rows ? row : shard_.vocab_rows));
    }
    ids = local_ids_.data();
  }
  backend_->CopyToDevice(arena_.token_ids, ids, in.token_ids.size() * 4);
  backend_->CopyToDevice(arena_.positions, in.positions.data(), in.positions.size() * 8);
  backend_->CopyToDevice(arena_.slot_mapping, in.slot_mapping.data(), in.slot_mapping.size() * 8);
  backend_->CopyToDevice(arena_.query_start, in.query_start.data(), in.query_start.size() * 4);
  backend_->CopyToDevice(arena_.context_lens, in.context_lens.data(), in.context_lens.size() * 4);
  backend_->CopyToDevice(arena_.block_tables, in.block_tables.data(), in.block_tables.size() * 4);
  backend_->CopyToDevice(arena_.logits_rows, in.logits_rows.data(), in.logits_rows.size() * 4);
  for (const int32_t row : in.prompt_logits_rows) {
    if (row < 0 || row >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("prompt logits row ", row, " is outside the step's ", n, " tokens"));
    }
  }
  return CopyLoraSegments(in);
}

absl::Status LlamaModel::CopyLoraSegments(const ForwardInput& in) {
  lora_segments_ = LoraSegments{};
  if (in.lora_slots.empty()) return absl::OkStatus();
  const int32_t seqs = in.num_seqs();
  if (static_cast<int32_t>(in.lora_slots.size()) != seqs ||
      static_cast<int32_t>(in.query_start.size()) != seqs + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("step has ", in.lora_slots.size(), " LoRA slots for ", seqs, " sequences"));
  }
  // Neighbouring sequences of one adapter share a segment.
  lora_starts_host_.assign(1, 0);
  lora_slots_host_.clear();
  bool any = false;
  for (int32_t s = 0; s < seqs; ++s) {
    const int32_t slot = in.lora_slots[static_cast<size_t>(s)];
    if (slot < -1 || slot >= num_lora_slots_) {
      return absl::InvalidArgumentError(absl::StrCat("sequence ", s, " names LoRA slot ", slot,
                                                     "; the model has ", num_lora_slots_));
    }
    any |= slot >= 0;
    const int32_t end = in.query_start[static_cast<size_t>(s) + 1];
    if (!lora_slots_host_.empty() && lora_slots_host_.back() == slot) {
      lora_starts_host_.back() = end;
    } else {
      lora_slots_host_.push_back(slot);
      lora_starts_host_.push_back(end);
    }
  }
  if (!any) return absl::OkStatus();
  backend_->CopyToDevice(arena_.lora_starts, lora_starts_host_.data(),
                         lora_starts_host_.size() * sizeof(int32_t));
  backend_->CopyToDevice(arena_.lora_slots, lora_slots_host_.data(),
                         lora_slots_host_.size() * sizeof(int32_t));
  lora_segments_ = LoraSegments{.starts = arena_.lora_starts,
                                .slots = arena_.lora_slots,
                                .count = static_cast<int32_t>(lora_slots_host_.size())};
  return absl::OkStatus();
}

absl::Status LlamaModel::AddLora(const DeviceLayer& layer, LoraTarget target, const float* x,
                                 int64_t n, int64_t ld_out, float* out) {
  const LoraWeights& lora = layer.lora[static_cast<size_t>(target)];
  if (lora_segments_.count == 0 || lora.a == nullptr) return absl::OkStatus();
  return backend_->LoraAdd(x, lora, lora_segments_, n, ld_out, arena_.lora_scratch, out);
}

absl::Status LlamaModel::Layer(const DeviceLayer& l, const float* in, int64_t n,
                               const int64_t* slot_mapping, const AttentionBatch& batch) {
  const int64_t hidden = config_.hidden_size;
  const int64_t heads = shard_.heads;
  const int64_t kv_heads = shard_.kv_heads;
  const int64_t head_dim = config_.head_dim;
  const int64_t inter = shard_.dense_intermediate;  // a dense layer's MLP
  Backend& b = *backend_;
  // Attention block.
  HR_RETURN_IF_ERROR(b.Linear(in, l.q_proj, l.q_bias, n, heads * head_dim, hidden, arena_.q));
  HR_RETURN_IF_ERROR(AddLora(l, LoraTarget::kQ, in, n, heads * head_dim, arena_.q));
  HR_RETURN_IF_ERROR(b.Linear(in, l.k_proj, l.k_bias, n, kv_heads * head_dim, hidden, arena_.k));
  HR_RETURN_IF_ERROR(AddLora(l, LoraTarget::kK, in, n, kv_heads * head_dim, arena_.k));
  HR_RETURN_IF_ERROR(b.Linear(in, l.v_proj, l.v_bias, n, kv_heads * head_dim, hidden, arena_.v));
  HR_RETURN_IF_ERROR(AddLora(l, LoraTarget::kV, in, n, kv_heads * head_dim, arena_.v));
  if (l.q_norm != nullptr) HR_RETURN_IF_ERROR(NormalizeQueryKey(l, n));
  if (l.inv_freq != nullptr) {  // else a NoPE layer (SmolLM3): positions only through the mask
    HR_RETURN_IF_ERROR(b.Rotary(arena_.q, arena_.k, arena_.positions, l.inv_freq, n, heads,
                                kv_heads, head_dim, RotaryDim(config_), l.rotary_scale));
  }
  HR_RETURN_IF_ERROR(b.WriteKvCache(arena_.k, arena_.v, slot_mapping, n, l.kv));
  HR_RETURN_IF_ERROR(b.PagedAttention(arena_.q, l.kv, batch, n, heads, l.attention, arena_.attn));
  HR_RETURN_IF_ERROR(
      b.Linear(arena_.attn, l.o_proj, l.o_bias, n, hidden, heads * head_dim, arena_.proj));
  HR_RETURN_IF_ERROR(AddLora(l, LoraTarget::kO, arena_.attn, n, hidden, arena_.proj));
  HR_RETURN_IF_ERROR(AllReduce(arena_.proj, n));
  HR_RETURN_IF_ERROR(NormalizeOutput(l.attn_out_norm, n));
  // MLP block: x += attention out; its input norm2(x), or x.
  HR_ASSIGN_OR_RETURN(const float* mlp_in, AddResidual(l.post_norm, n));
  if (l.moe.num_experts > 0) {
    HR_RETURN_IF_ERROR(b.MoeMlp(mlp_in, l.moe, n, hidden, arena_.proj));
  } else {
    HR_RETURN_IF_ERROR(
        b.Linear(mlp_in, l.gate_up, l.gate_up_bias, n, 2 * inter, hidden, arena_.gate_up));
    // Each row of the fused output: its gate columns, then its up columns.
    HR_RETURN_IF_ERROR(AddLora(l, LoraTarget::kGate, mlp_in, n, 2 * inter, arena_.gate_up));
    HR_RETURN_IF_ERROR(AddLora(l, LoraTarget::kUp, mlp_in, n, 2 * inter, arena_.gate_up + inter));
    HR_RETURN_IF_ERROR(config_.hidden_activation == Activation::kGeluTanh
                           ? b.GeluTanhAndMul(arena_.gate_up, n, inter, arena_.act)
                           : b.SiluAndMul(arena_.gate_up, n, inter, arena_.act));
    HR_RETURN_IF_ERROR(
        b.Linear(arena_.act, l.down_proj, l.down_bias, n, hidden, inter, arena_.proj));
    HR_RETURN_IF_ERROR(AddLora(l, LoraTarget::kDown, arena_.act, n, hidden, arena_.proj));
  }
  HR_RETURN_IF_ERROR(AllReduce(arena_.proj, n));
  return NormalizeOutput(l.mlp_out_norm, n);
}

absl::StatusOr<const float*> LlamaModel::AddResidual(const float* norm, int64_t n) {
  const int64_t hidden = config_.hidden_size;
  if (norm == nullptr) {
    HR_RETURN_IF_ERROR(backend_->Add(arena_.residual, arena_.proj, n * hidden));
    return arena_.residual;
  }
  HR_RETURN_IF_ERROR(backend_->AddRmsNorm(arena_.residual, arena_.proj, norm, n, hidden,
                                          static_cast<float>(config_.rms_norm_eps), arena_.hidden));
  return arena_.hidden;
}

absl::Status LlamaModel::NormalizeQueryKey(const DeviceLayer& l, int64_t n) {
  Backend& b = *backend_;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const int64_t head_dim = config_.head_dim;
  if (!config_.qk_norm_across_heads) {
    // Qwen3: each head's q and k RMS-normalized over head_dim, in place, before rotary.
    HR_RETURN_IF_ERROR(b.RmsNorm(arena_.q, l.q_norm, n * shard_.heads, head_dim, eps, arena_.q));
    return b.RmsNorm(arena_.k, l.k_norm, n * shard_.kv_heads, head_dim, eps, arena_.k);
  }
  if (tp_ == 1) {
    HR_RETURN_IF_ERROR(b.RmsNorm(arena_.q, l.q_norm, n, shard_.q_dim, eps, arena_.q));
    return b.RmsNorm(arena_.k, l.k_norm, n, shard_.kv_dim, eps, arena_.k);
  }
  // OLMo 2 across ranks: each row's sum of squares over every rank's heads. A KV head replicated
  // onto tp / kv_heads ranks is counted that many times, so k's mean divides by that many widths.
  float* q_sums = arena_.norm_sums;
  float* k_sums = arena_.norm_sums + n;
  HR_RETURN_IF_ERROR(b.SumSquares(arena_.q, n, shard_.q_dim, q_sums));
  HR_RETURN_IF_ERROR(b.SumSquares(arena_.k, n, shard_.kv_dim, k_sums));
  HR_RETURN_IF_ERROR(comm_->AllReduceSum(arena_.norm_sums, static_cast<size_t>(2 * n)));
  const int64_t kv_heads = config_.num_key_value_heads;
  const int64_t kv_copies = kv_heads % tp_ == 0 ? 1 : tp_ / kv_heads;
  HR_RETURN_IF_ERROR(b.RmsNormFromSumSquares(arena_.q, q_sums, l.q_norm, n, shard_.q_dim,
                                             config_.num_attention_heads * head_dim, eps,
                                             arena_.q));
  return b.RmsNormFromSumSquares(arena_.k, k_sums, l.k_norm, n, shard_.kv_dim,
                                 kv_copies * kv_heads * head_dim, eps, arena_.k);
}

absl::Status LlamaModel::NormalizeOutput(const float* norm, int64_t n) {
  if (norm == nullptr) return absl::OkStatus();
  // After the all-reduce: the norm needs the whole sum, and every rank computes the same rows.
  return backend_->RmsNorm(arena_.proj, norm, n, config_.hidden_size,
                           static_cast<float>(config_.rms_norm_eps), arena_.proj);
}

absl::Status LlamaModel::AllReduce(float* data, int64_t n) {
  if (tp_ == 1) return absl::OkStatus();
  return comm_->AllReduceSum(data, static_cast<size_t>(n * config_.hidden_size));
}

absl::Status LlamaModel::Forward(const ForwardInput& input, std::vector<float>* logits,
                                 const PromptLogitsSink& prompt_sink,
                                 std::vector<float>* hidden_states,
                                 const PooledRowsSink& pooled_sink) {
  HR_RETURN_IF_ERROR(CopyInput(input));
  const int64_t n = input.num_tokens();
  const int64_t hidden = config_.hidden_size;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  // Each layer group's block tables and slot mapping ([groups, S, max_blocks] and [groups, n]).
  batches_.clear();
  for (int32_t g = 0; g < kv_groups_.num_groups(); ++g) {
    batches_.push_back(AttentionBatch{
        .query_start = arena_.query_start,
        .context_lens = arena_.context_lens,
        .block_tables = arena_.block_tables + int64_t{g} * input.num_seqs() * max_blocks_per_seq_,
        .num_seqs = input.num_seqs(),
        .max_blocks_per_seq = max_blocks_per_seq_});
  }
  Backend& b = *backend_;
  const int64_t embed_rows = tp_ == 1 ? config_.vocab_size : shard_.vocab_rows + 1;
  HR_RETURN_IF_ERROR(b.Embedding(embed_tokens_, arena_.token_ids, n, embed_rows, hidden,
                                 embed_scale_, arena_.residual));
  HR_RETURN_IF_ERROR(AllReduce(arena_.residual, n));  // the vocabulary slices' lookups
  // The first block's input: norm1(x), or x itself (OLMo 2).
  const float* in = arena_.residual;
  if (const float* norm = layers_.front().input_norm; norm != nullptr) {
    HR_RETURN_IF_ERROR(b.RmsNorm(arena_.residual, norm, n, hidden, eps, arena_.hidden));
    in = arena_.hidden;
  }
  for (size_t i = 0; i < layers_.size(); ++i) {
    const DeviceLayer& layer = layers_[i];
    const auto group = static_cast<size_t>(layer.kv_group);
    HR_RETURN_IF_ERROR(Layer(layer, in, n, arena_.slot_mapping + static_cast<int64_t>(group) * n,
                             batches_[group]));
    // x += MLP out; the next layer's input, or the final norm's output in arena_.hidden.
    const float* next_norm = i + 1 < layers_.size() ? layers_[i + 1].input_norm : final_norm_;
    HR_ASSIGN_OR_RETURN(in, AddResidual(next_norm, n));
  }
  const int64_t rows = static_cast<int64_t>(input.logits_rows.size());
  logits->resize(static_cast<size_t>(rows * config_.vocab_size));
  // Host memory (at most max_num_seqs x hidden, grown on first use).
  if (hidden_states != nullptr) hidden_states->resize(static_cast<size_t>(rows * hidden));
  if (rows > 0) {
    HR_RETURN_IF_ERROR(
        b.GatherRows(arena_.hidden, arena_.logits_rows, rows, hidden, arena_.last_hidden));
    if (hidden_states != nullptr) {
      // Queued before the LM head, whose copy of the logits synchronizes the stream for both.
      b.CopyToHost(hidden_states->data(), arena_.last_hidden,
                   hidden_states->size() * sizeof(float));
    }
    HR_RETURN_IF_ERROR(Logits(rows, logits));
  }
  // Prompt logprobs: the same gather and LM head, max_num_seqs rows at a time. Host memory,
  // grown on first use to at most max_num_seqs x vocab (a worker that never serves prompt
  // logprobs does not hold it); no device memory.
  const absl::Status prompt_logprobs =
      ForEachRowSlice(input.prompt_logits_rows, [&](size_t first, int64_t count) {
        prompt_logits_.resize(static_cast<size_t>(count * config_.vocab_size));
        HR_RETURN_IF_ERROR(Logits(count, &prompt_logits_));
        return prompt_sink ? prompt_sink(first, count, prompt_logits_.data()) : absl::OkStatus();
      });
  HR_RETURN_IF_ERROR(prompt_logprobs);
  // Pooled embeddings (mean, CLS): the same gather, copied out (at most max_num_seqs x hidden of
  // host memory).
  if (!pooled_sink) return absl::OkStatus();
  return ForEachRowSlice(input.pooled_rows, [&](size_t first, int64_t count) {
    pooled_hidden_.resize(static_cast<size_t>(count * hidden));
    b.CopyToHost(pooled_hidden_.data(), arena_.last_hidden, pooled_hidden_.size() * sizeof(float));
    b.Synchronize();
    return pooled_sink(first, count, pooled_hidden_.data());
  });
}

absl::Status LlamaModel::ForEachRowSlice(
    const std::vector<int32_t>& rows,
    const std::function<absl::Status(size_t first, int64_t count)>& fn) {
  Backend& b = *backend_;
  for (size_t first = 0; first < rows.size(); first += static_cast<size_t>(limits_.max_num_seqs)) {
    const int64_t count =
        std::min<int64_t>(limits_.max_num_seqs, static_cast<int64_t>(rows.size() - first));
    b.CopyToDevice(arena_.logits_rows, rows.data() + first,
                   static_cast<size_t>(count) * sizeof(int32_t));
    HR_RETURN_IF_ERROR(b.GatherRows(arena_.hidden, arena_.logits_rows, count, config_.hidden_size,
                                    arena_.last_hidden));
    HR_RETURN_IF_ERROR(fn(first, count));
  }
  return absl::OkStatus();
}

absl::Status LlamaModel::Logits(int64_t rows, std::vector<float>* logits) {
  Backend& b = *backend_;
  const int64_t slice = shard_.vocab_rows;
  HR_RETURN_IF_ERROR(b.Linear(arena_.last_hidden, lm_head_, nullptr, rows, slice,
                              config_.hidden_size, arena_.logits));
  if (config_.final_logit_softcapping > 0) {
    HR_RETURN_IF_ERROR(b.SoftCap(arena_.logits, rows * slice,
                                 static_cast<float>(config_.final_logit_softcapping)));
  }
  if (tp_ == 1) {
    // NOTE: host <-> device synchronisation, once per step: the sampler reads the logits.
    b.CopyToHost(logits->data(), arena_.logits, logits->size() * sizeof(float));
    b.Synchronize();
    return absl::OkStatus();
  }
  HR_RETURN_IF_ERROR(
      comm_->AllGather(arena_.logits, static_cast<size_t>(rows * slice), arena_.gathered));
  // NOTE: host <-> device synchronisation, once per step: the sampler reads the logits.
  b.CopyToHost(gathered_host_.data(), arena_.gathered,
               static_cast<size_t>(tp_ * rows * slice) * sizeof(float));
  b.Synchronize();
  // [tp, rows, slice] -> [rows, vocab], dropping the padding past the vocabulary.
  const int64_t vocab = config_.vocab_size;
  for (int64_t r = 0; r < tp_; ++r) {
    const int64_t width = std::min(slice, vocab - r * slice);
    for (int64_t row = 0; row < rows && width > 0; ++row) {
      std::copy_n(gathered_host_.begin() + (r * rows + row) * slice, width,
                  logits->begin() + row * vocab + r * slice);
    }
  }
  return absl::OkStatus();
}

}  // namespace headroom::worker
