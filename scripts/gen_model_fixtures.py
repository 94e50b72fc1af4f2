#!/usr/bin/env python3
"""Builds the model parity fixtures with Hugging Face transformers + torch (CPU, no downloads).

Writes tests/worker/fixtures/<name>/ for three small SEEDED RANDOM checkpoints:

  llama-gqa   LlamaForCausalLM, 2 layers, hidden 64, 4 heads / 2 kv heads (head_dim 16),
              intermediate 128, vocab 256, rope_theta 1e4 with a "llama3" rope_scaling block
              (factor 8, low 1, high 4, original_max_position_embeddings 64: at head_dim 16 the
              wavelengths 6.3 / 19.9 / 62.8 / 199+ fall in the keep / interpolate / interpolate /
              divide bands), rms_norm_eps 1e-5, saved in bfloat16 and SHARDED into 2 files
              (model.safetensors.index.json).
  qwen2-bias  Qwen2ForCausalLM with q/k/v biases, 2 layers, hidden 64, 4 heads / 2 kv heads,
              intermediate 128, vocab 256, rope_theta 1e6, untied LM head, saved in float16.
  llama-tied  LlamaForCausalLM with tie_word_embeddings=True (lm_head.weight is not saved), MHA
              with an explicit head_dim 32 != hidden/heads (q_proj is [128, 64]), saved in float32.
  qwen3-qknorm  Qwen3ForCausalLM (Qwen3-0.6B's layout): per-head RMSNorm of q and k after their
              projections (q_norm, k_norm: weight [head_dim]) and before rotary, no biases, tied
              embeddings, 2 layers, hidden 64, 4 heads / 2 kv heads, head_dim 16, saved in
              bfloat16. transformers 4.46 (the newest on Debian's torch 1.13) predates Qwen3, so
              the reference is its Qwen2ForCausalLM with the q/k/v biases zeroed and the two
              norms applied to q_proj's and k_proj's outputs by forward hooks: transformers'
              Qwen3Attention is exactly `q_norm(q_proj(x).view(..., head_dim))` (likewise k)
              before apply_rotary_pos_emb, and Qwen3RMSNorm is Qwen2RMSNorm.
  mixtral-moe MixtralForCausalLM: every layer's MLP is 4 experts (intermediate 48), the top 2 per
              token by the router's softmax, renormalized; GQA 4/2, untied, saved in bfloat16.
  gemma2-softcap  Gemma2ForCausalLM (Gemma 2's layout) with transformers' own Gemma2 in eager
              attention: (1 + w) RMSNorms, embeddings times sqrt(hidden), norms on the attention
              and MLP outputs (pre/post_feedforward_layernorm), gelu_pytorch_tanh, tied embeddings,
              query_pre_attn_scalar 24 (not head_dim 16), attention scores soft-capped at 5 and
              logits at 5 (small caps, so tanh bends them), and a 16-token sliding window on layer 0
              (even layers) that prompts of 23 and 61 tokens exceed; 2 layers, hidden 64, 4 heads /
              2 kv heads, saved in bfloat16.
  gemma-mqa   GemmaForCausalLM (Gemma 1's layout, gemma-2b's multi-query attention) with
              transformers' own Gemma: (1 + w) RMSNorms, embeddings times sqrt(hidden),
              gelu_pytorch_tanh, one KV head for 4 query heads, head_dim 32 so that q_proj
              [128, 64] is wider than the residual (gemma-7b: 16 x 256 over 3072), attention
              scaled by head_dim^-0.5, tied embeddings, Llama's two norms per layer; 2 layers,
              saved in bfloat16.
  gemma3-local-rope  Gemma3ForCausalLM (Gemma-3-1B's layout): gemma2-softcap's block without the
              softcaps, plus per-head q_norm / k_norm ((1 + w), like Gemma's other norms) and a
              rotary base of its own for the sliding layers (rope_local_base_freq 10000 against
              rope_theta 1e6); 6 layers with sliding_window_pattern 6 (layers 0-4 slide over 16
              tokens, layer 5 is global), hidden 64, 4 heads / 1 kv head, saved in bfloat16.
              transformers 4.46 predates Gemma 3, so the reference is its Gemma2ForCausalLM with
              the softcaps off, each layer's window and rotary base set as Gemma 3's, and the two
              norms applied to q_proj's and k_proj's outputs by forward hooks: transformers'
              Gemma3Attention is exactly `q_norm(q_proj(x).view(..., head_dim))` (likewise k)
              before apply_rotary_pos_emb, with Gemma3RMSNorm = Gemma2RMSNorm.
  gemma3-mm-text  Gemma3ForConditionalGeneration (Gemma 3 4B/12B/27B's layout) served as text:
              gemma3-local-rope's model with the global layer's rotary scaled linearly by 8 (its
              frequencies divided by 8, as transformers' "linear" rope_type; the sliding layers
              unscaled, as Gemma3's rotary_emb_local), saved as the multimodal checkpoint:
              config.json with the language model's settings in text_config (leaving out those
              that equal Gemma3TextConfig's defaults), the tensors under "language_model.model.",
              and two small vision tensors the server must ignore. Same hooked-Gemma2 reference.
  granite-mup GraniteForCausalLM (Granite 3.x's layout) with transformers' own Granite: Llama's
              block with its four muP multipliers, each far from 1 so that dropping one changes
              the tokens (embedding_multiplier 12, attention_multiplier 0.1 in place of
              head_dim^-0.5 = 0.25, residual_multiplier 0.22, logits_scaling 8), GQA 4/2, tied,
              saved in bfloat16.
  granite-moe GraniteMoeForCausalLM (Granite 3.x MoE's layout) with transformers' own GraniteMoe:
              granite-mup's multipliers, and every layer's MLP 4 experts of intermediate 48, the
              top 2 (a softmax over the top 2 router logits), stored stacked: input_linear
              [experts, 2 x intermediate, hidden] (gate rows, then up rows) and output_linear
              [experts, hidden, intermediate]; GQA 4/2, tied, saved in bfloat16.
  phi3-fused  Phi3ForCausalLM (Phi-3 / Phi-4's layout) with transformers' own Phi3: q, k and v in
              one fused qkv_proj [q + 2 kv, hidden] and gate and up in one gate_up_proj
              [2 intermediate, hidden], GQA 4/2, untied, and a 12-token sliding window on every
              layer (Phi-3-mini-4k's 2047, scaled down) that the longer prompts exceed; saved in
              bfloat16 and sharded into 2 files.
  phi3-longrope Phi3ForCausalLM with LongRoPE (Phi-3.5 / Phi-3-128k's rope scaling) in
              transformers' own Phi3LongRoPEScaledRotaryEmbedding: pretrained length 16, maximum
              256, 8 short and 8 long per-dimension factors far from 1, attention factor sqrt 2;
              no window. transformers picks the list per forward by the sequence's length (long
              beyond 16) and recomputes the whole sequence at each greedy step here, so the
              prompts of 1 and 7 tokens start short and those of 23 and 61 are long throughout.
  phi4-partial-rotary Phi3ForCausalLM with Phi-4-mini's partial rotary embedding
              (partial_rotary_factor 0.75: the leading 12 of each head's 16 values turn, the last
              4 pass through) and LongRoPE over those 12 (6 short and 6 long factors, pretrained
              length 16, maximum 256), tied embeddings as in Phi-4-mini, GQA 4/2, saved in
              bfloat16. transformers 4.46's Phi3 rotates whole heads, so the reference is its
              Phi3ForCausalLM with each layer's Phi3LongRoPEScaledRotaryEmbedding built for 12
              dimensions and apply_rotary_pos_emb applied to the leading 12 values of q and k
              (the rest concatenated back unchanged), which is what transformers' Phi3 does for
              partial_rotary_factor in the releases that load Phi-4-mini.
  qwen2-yarn  Qwen2ForCausalLM with YaRN rope scaling (Qwen2.5's long-context block) in
              transformers' own yarn rotary: pretrained at 64 positions (max_position_embeddings
              64, which transformers 4.46 reads as the original length; rope_scaling's
              original_max_position_embeddings 64 says the same for vLLM and newer transformers),
              factor 4, beta_fast 2 and beta_slow 0.25 (so the correction ramp spans dimensions 1
              to 4 of 8 at head_dim 16; Qwen's 32/1 would span 0 to 3), the default attention
              factor 0.1 ln 4 + 1; rope_theta 1e4, GQA 4/2, saved in bfloat16. The prompts of 61
              tokens and their continuations run past position 64.
  qwen2-moe   Qwen2MoeForCausalLM (Qwen1.5-MoE / Qwen2-57B-A14B's layout) with transformers' own
              Qwen2Moe: 8 experts of intermediate 32, the top 2 NOT renormalized (norm_topk_prob
              false, Qwen2MoeConfig's default), and a shared expert of intermediate 48 whose output
              is scaled by sigmoid(shared_expert_gate . x); q/k/v biases, GQA 4/2, untied,
              bfloat16. The generator checks that the gate and the shared expert each move the
              logits.
  olmoe       OlmoeForCausalLM (OLMoE-1B-7B's layout) with transformers' own Olmoe: Llama's
              pre-norm block, q_norm / k_norm over the WHOLE q and k projections (as OLMo 2), and
              8 experts of intermediate 32, the top 3 NOT renormalized (norm_topk_prob false,
              OlmoeConfig's default); GQA 4/2, untied, bfloat16.
  qwen3-moe   Qwen3MoeForCausalLM (Qwen3-30B-A3B's layout): qwen3-qknorm's attention, untied, and
              8 experts of intermediate 32, top 2, norm_topk_prob. The reference is transformers
              4.46's Qwen2MoeForCausalLM (the same sparse block: softmax, top-k, renormalized
              when norm_topk_prob) with its shared expert zeroed (Qwen3-MoE has none) and not
              saved, plus qwen3-qknorm's hooks.

  smollm3-nope  SmolLM3ForCausalLM (SmolLM3-3B's layout): Llama's block with no rotary on the
              layers no_rope_layers marks 0 (here every 2nd of 4, from no_rope_layer_interval 2;
              SmolLM3-3B: every 4th) and, with use_sliding_window, a 16-token window on those
              NoPE layers (SmolLM3Config's derived layer_types); GQA 4/2, tied, bfloat16. Needs
              transformers >= 4.53 (SmolLM3), so it is written only when named:
                PYTHONPATH=build/pydeps-tf457 build/venv-fixtures/bin/python \
                  scripts/gen_model_fixtures.py smollm3-nope
              after `build/venv-fixtures/bin/pip install --target build/pydeps-tf457
              transformers==4.57.1` (4.57.1 wrote the committed one; it runs on the same torch).
  glm4-sandwich Glm4ForCausalLM (GLM-4-0414's layout) with transformers' own Glm4: rotary over
              the INTERLEAVED pairs (2i, 2i+1) of the leading half of each head
              (partial_rotary_factor 0.5: 8 of 16 values turn), q/k/v biases (attention_bias) and
              no o_proj bias, gate and up fused in one gate_up_proj, and four norms per layer
              (input_layernorm; post_self_attn_layernorm on the attention output;
              post_attention_layernorm before the MLP; post_mlp_layernorm on its output); GQA 4/2,
              untied, bfloat16. Before writing, the generator checks that rotate-half rotary in
              place of the interleaved one changes the logits. Needs transformers >= 4.51 (Glm4):
              written only when named, like smollm3-nope.
  glm-interleaved GlmForCausalLM (glm-4-9b-chat-hf's layout): glm4-sandwich's attention and MLP in
              Llama's two-norm block, head_dim 32 (16 of 32 values turn), GQA 4/2, untied,
              bfloat16; the same check. Written only when named (transformers >= 4.46 has Glm).
  olmo2-postnorm Olmo2ForCausalLM (OLMo 2's layout) with transformers' own Olmo2: no norm before
              attention or the MLP, an RMSNorm of each block's OUTPUT (post_attention_layernorm,
              post_feedforward_layernorm) before its residual add, and q_norm / k_norm over the
              WHOLE q and k projections (weights [heads x head_dim], [kv_heads x head_dim]), not
              per head; GQA 4/2, untied, rope_theta 5e5, bfloat16. Written only when named
              (transformers >= 4.47 has Olmo2; 4.57.1 wrote the committed one).
  olmo3-hybrid Olmo3ForCausalLM (OLMo 3's layout) with transformers' own Olmo3: olmo2-postnorm's
              block with layer_types [sliding_attention, full_attention], a 16-token window on the
              first layer, and YaRN on the FULL layer only (max_position_embeddings 256,
              rope_scaling factor 4 over original_max_position_embeddings 64, beta_fast 2,
              beta_slow 0.25, as qwen2-yarn): the sliding layer rotates unscaled. The generator
              checks that the window, YaRN's frequencies, its attention factor, and the sliding
              layer's unscaled rotary each change the logits. Written only when named
              (transformers >= 4.57 has Olmo3; 4.57.1 wrote the committed one).
  seed-oss-bias SeedOssForCausalLM (Seed-OSS-36B's layout) with transformers' own SeedOss:
              Llama's block with q/k/v biases (attention_bias) and an o_proj bias of its own
              (attention_out_bias, set here though Seed-OSS-36B leaves it false, so both flags
              are read), head_dim 32 (not hidden / heads), GQA 4/2, untied, bfloat16. Written
              only when named (transformers >= 4.56 has SeedOss; 4.57.1 wrote the committed one).
  glm4-moe    Glm4MoeForCausalLM (GLM-4.5's layout) with transformers' own Glm4Moe: layer 0
              dense (first_k_dense_replace 1, intermediate 128), layer 1 a mixture of 8 experts
              of width 32 routed by sigmoid scores plus a non-negative random correction bias
              (e_score_correction_bias), in 4 groups of which the best 2 (top-2 sums) stay
              eligible, top 3, renormalized and scaled by routed_scaling_factor 2.5, beside 2
              ungated shared experts (one MLP of 64); q/k/v biases, per-head q/k norms, head_dim
              32 with rotary on its first half (rotate-half layout), GQA 4/2, untied, bfloat16.
              The generator checks that the correction bias, the groups, the routed scale and
              the shared experts each change the logits. Written only when named (transformers
              >= 4.54 has Glm4Moe; 4.57.1 wrote the committed one).
  dots1-moe   Dots1ForCausalLM (dots.llm1's layout) with transformers' own Dots1: Qwen3's
              attention (per-head q/k norms, no biases) with a 16-token window on layer 1
              (max_window_layers 1), layer 0 dense, layer 1 glm4-moe's routing with 8 experts in 2
              groups of which 1 stays eligible, the top 2 NOT renormalized and scaled x2, one
              shared expert; GQA 4/2, untied, bfloat16. The generator checks glm4-moe's four
              parts and the window. Written only when named (transformers >= 4.53 has Dots1;
              4.57.1 wrote the committed one).
  exaone4-hybrid Exaone4ForCausalLM (EXAONE 4.0's layout) with transformers' own Exaone4:
              olmo2-postnorm's output norms (no input norms) with Qwen3's PER-HEAD q_norm / k_norm,
              layer_types [sliding_attention, full_attention] with a 16-token window, and rotary
              on the sliding layer only (the full layer is NoPE); GQA 4/2, untied, bfloat16. The
              generator checks that the window and the full layer's missing rotary each change
              the logits. Written only when named (transformers >= 4.54 has Exaone4; 4.57.1 wrote
              the committed one).

Each directory holds config.json, the safetensors file(s), and:
  expected.json       reference outputs computed in float32 from the SAVED weights (the checkpoint
                      is reloaded and upcast, so both sides start from identical numbers): 4 prompts
                      (lengths 1, 7, 23, 61) of token ids; the full prompt logits [len, vocab] of
                      prompts 1 and 2; for every prompt a 32-token greedy continuation (EOS ignored,
                      full recompute each step, no KV cache) with the top-5 (id, logprob) and the
                      top-1/top-2 logit margin at each generated step.
  weights_probe.json  per tensor (HF name): dtype, shape, sum and sum of squares of the float32
                      upcast (float64 accumulation), the first 4 and the last element (exact
                      float32 values) and the raw 16-bit patterns of the first 4 elements.

Also writes tests/worker/fixtures/safetensors/dtypes.safetensors: F16 and BF16 tensors holding
selected bit patterns (every exponent incl. subnormals, inf, nan, -0) next to torch's float32
upcast of them, float32 sources next to torch's round-to-nearest-even float16/bfloat16 casts of
them, plus I64, scalar and empty tensors and a __metadata__ block, for the C++ reader's tests.

The random init is scaled (std 0.25 instead of HF's 0.02; norms 1 + N(0, 0.2); biases N(0, 0.2))
so logits are far from flat and greedy tokens are not decided by rounding noise: the script prints
the smallest top-1/top-2 margin per model.

Install (Debian bookworm; PyPI's torch wheel would pull GBs of CUDA libraries, Debian's is CPU-only):
  apt-get update && apt-get install -y python3-torch python3-venv
  /usr/bin/python3 -m venv --system-site-packages build/venv-fixtures
  build/venv-fixtures/bin/pip install -r scripts/requirements-model-fixtures.txt
Run (fixture names as arguments write only those):
  build/venv-fixtures/bin/python scripts/gen_model_fixtures.py [llama-gqa qwen3-qknorm ...]
The output is deterministic for a given torch/transformers; the fixtures are committed so the C++
tests never need Python.
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import (AutoModelForCausalLM, Gemma2Config, GemmaConfig, GraniteConfig,
                          GraniteMoeConfig, LlamaConfig, MixtralConfig, Phi3Config, Qwen2Config,
                          Qwen2MoeConfig)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "worker", "fixtures")

PROMPT_LENGTHS = [1, 7, 23, 61]
FULL_LOGITS_PROMPTS = [1, 2]  # indices into PROMPT_LENGTHS
GREEDY_TOKENS = 32
TOP_K = 5
INIT_STD = 0.25


def g7(x):
    """A float rounded to 7 significant digits (about float32's precision), as a Python float."""
    return float("%.7g" % float(x))


def exact(x):
    """A float32 value as the Python float that equals it exactly."""
    return float(np.float32(x))


def llama_gqa_config():
    return LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2)


def qwen2_bias_config():
    # Qwen2 always has q/k/v biases and never o_proj/MLP biases.
    return Qwen2Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
        use_sliding_window=False, initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2)


def llama_tied_config():
    return LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, head_dim=32, max_position_embeddings=256,
        rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2)


def mixtral_moe_config():
    return MixtralConfig(
        vocab_size=256, hidden_size=64, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        num_local_experts=4, num_experts_per_tok=2, rope_theta=1000000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=False, sliding_window=None, router_jitter_noise=0.0,
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2)


def qwen2_moe_config():
    return Qwen2MoeConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
        use_sliding_window=False, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
        shared_expert_intermediate_size=48, norm_topk_prob=False, decoder_sparse_step=1,
        mlp_only_layers=[], initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2)


def olmoe_config():
    from transformers import OlmoeConfig  # transformers >= 4.44
    return OlmoeConfig(
        vocab_size=256, hidden_size=64, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False,
        clip_qkv=None, num_experts=8, num_experts_per_tok=3, norm_topk_prob=False,
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def check_shared_expert_bites(model):
    """The shared expert and its sigmoid gate must both move the logits, or the fixture would not
    test them: zeroing the gate's weights (a constant 0.5) and dropping the expert must each
    change the logits."""
    ids = torch.arange(3, 40).remainder(model.config.vocab_size)[None]
    with torch.no_grad():
        base = model(ids).logits[0]
        layers = model.model.layers
        gates = [layer.mlp.shared_expert_gate.weight.clone() for layer in layers]
        for layer in layers:
            layer.mlp.shared_expert_gate.weight.zero_()
        half = model(ids).logits[0]
        downs = [layer.mlp.shared_expert.down_proj.weight.clone() for layer in layers]
        for layer in layers:
            layer.mlp.shared_expert.down_proj.weight.zero_()
        none = model(ids).logits[0]
        for layer, gate, down in zip(layers, gates, downs):
            layer.mlp.shared_expert_gate.weight.copy_(gate)
            layer.mlp.shared_expert.down_proj.weight.copy_(down)
        assert torch.equal(model(ids).logits[0], base)
    assert (base - half).abs().max() > 1e-2, "the shared expert's gate does not change the logits"
    assert (half - none).abs().max() > 1e-2, "the shared expert does not change the logits"


def gemma2_config():
    return Gemma2Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
        rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
        hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24, sliding_window=16,
        attn_logit_softcapping=5.0, final_logit_softcapping=5.0,
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def gemma_config():
    return GemmaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, head_dim=32, max_position_embeddings=256,
        rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
        hidden_activation="gelu_pytorch_tanh",
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def phi3_config():
    return Phi3Config(
        vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        original_max_position_embeddings=256, rope_theta=250000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=False, sliding_window=12, rope_scaling=None,
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0)


# Phi-3.5's LongRoPE scaled down: pretrained at 16 positions, extended to 256 (attention factor
# sqrt(1 + ln 16 / ln 16) = sqrt 2), 8 factors per list (head_dim 16). Short factors near 1..6,
# long ones up to 64 (Phi-3.5-mini's reach 1..64 too), so either list changes the logits.
LONGROPE_SHORT = [1.0, 1.25, 1.6, 2.0, 2.6, 3.3, 4.4, 5.8]
LONGROPE_LONG = [1.0, 1.9, 3.7, 7.5, 13.0, 23.0, 39.0, 64.0]


def phi3_longrope_config():
    return Phi3Config(
        vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        original_max_position_embeddings=16, rope_theta=10000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=False, sliding_window=None,
        rope_scaling={"type": "longrope", "short_factor": LONGROPE_SHORT,
                      "long_factor": LONGROPE_LONG},
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0)


# Qwen2.5's YaRN block scaled down (docs/engine.md, YaRN): original 64 positions, factor 4.
YARN_SCALING = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                "beta_fast": 2.0, "beta_slow": 0.25}


def qwen2_yarn_config():
    return Qwen2Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
        use_sliding_window=False, rope_scaling=dict(YARN_SCALING),
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2)


# What granite-mup and granite-moe share: the shape but for the MLP, and the four multipliers.
GRANITE_COMMON = dict(
    vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, max_position_embeddings=256, rope_theta=10000.0, rms_norm_eps=1e-5,
    tie_word_embeddings=True, embedding_multiplier=12.0, attention_multiplier=0.1,
    residual_multiplier=0.22, logits_scaling=8.0, initializer_range=INIT_STD, bos_token_id=1,
    eos_token_id=2, pad_token_id=0)


def granite_config():
    return GraniteConfig(intermediate_size=128, **GRANITE_COMMON)


def granite_moe_config():
    return GraniteMoeConfig(intermediate_size=48, num_local_experts=4, num_experts_per_tok=2,
                            **GRANITE_COMMON)


def smollm3_config():
    from transformers import SmolLM3Config  # transformers >= 4.53
    return SmolLM3Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
        no_rope_layer_interval=2, use_sliding_window=True, sliding_window=16,
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0)


GLM_COMMON = dict(
    vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, partial_rotary_factor=0.5,
    max_position_embeddings=256, rope_theta=10000.0, rms_norm_eps=1e-5,
    tie_word_embeddings=False, attention_bias=True,
    initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def olmo2_config():
    from transformers import Olmo2Config  # transformers >= 4.47
    return Olmo2Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_theta=500000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False,
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def logit_change(model, ids, module, attribute, value):
    """The largest change of the logits of `ids` while module.attribute is `value` (restored)."""
    with torch.no_grad():
        base = model(input_ids=ids, use_cache=False).logits[0]
        saved = getattr(module, attribute)
        setattr(module, attribute, value)
        changed = model(input_ids=ids, use_cache=False).logits[0]
        setattr(module, attribute, saved)
    return float((base - changed).abs().max())


def olmo3_config():
    from transformers import Olmo3Config  # transformers >= 4.57
    return Olmo3Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False,
        sliding_window=16, layer_types=["sliding_attention", "full_attention"],
        rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                      "beta_fast": 2.0, "beta_slow": 0.25},
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def check_olmo3_bites(model, config):
    """OLMo 3's window and its two rotaries must each change the logits of a prompt longer than
    the window and the pretrained length, or the fixture would not test them: the window (against
    none), YaRN's frequencies (against the default ones) and attention factor (against 1) on the
    full layer, and the sliding layer's unscaled rotary (against the full layer's)."""
    ids = torch.arange(3, 3 + 2 * 64).remainder(config.vocab_size)[None]
    sliding, full = model.model.rotary_embs["sliding_attention"], model.model.rotary_embs[
        "full_attention"]
    default_inv_freq = sliding.inv_freq.clone()

    def change(module, attribute, value):
        return logit_change(model, ids, module, attribute, value)

    diffs = {
        "window": change(model.config, "sliding_window", 10**6),
        "yarn frequencies": change(full, "inv_freq", default_inv_freq),
        "yarn attention factor": change(full, "attention_scaling", 1.0),
        "sliding layer's unscaled frequencies": change(sliding, "inv_freq", full.inv_freq.clone()),
        "sliding layer's unit attention factor": change(sliding, "attention_scaling",
                                                        full.attention_scaling),
    }
    for what, diff in diffs.items():
        assert diff > 1e-2, f"the {what} do not change the logits ({diff})"
    print("  olmo3: max logit changes " + ", ".join(f"{k} {v:.3f}" for k, v in diffs.items()))


def seed_oss_config():
    from transformers import SeedOssConfig  # transformers >= 4.56
    return SeedOssConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=256,
        rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=True,
        attention_out_bias=True, mlp_bias=False, attention_dropout=0.0, residual_dropout=0.0,
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def exaone4_config():
    from transformers import Exaone4Config  # transformers >= 4.54
    return Exaone4Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=16,
        layer_types=["sliding_attention", "full_attention"],
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def glm4_moe_config():
    from transformers import Glm4MoeConfig  # transformers >= 4.54
    return Glm4MoeConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, partial_rotary_factor=0.5,
        max_position_embeddings=256, rope_theta=10000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=False, attention_bias=True, use_qk_norm=True,
        n_routed_experts=8, num_experts_per_tok=3, moe_intermediate_size=32, n_shared_experts=2,
        routed_scaling_factor=2.5, n_group=4, topk_group=2, first_k_dense_replace=1,
        norm_topk_prob=True, initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2,
        pad_token_id=0)


def dots1_config():
    from transformers import Dots1Config  # transformers >= 4.53
    return Dots1Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False,
        n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1, n_group=2, topk_group=1,
        first_k_dense_replace=1, norm_topk_prob=False, routed_scaling_factor=2.0,
        sliding_window=16, max_window_layers=1, initializer_range=INIT_STD, bos_token_id=1,
        eos_token_id=2, pad_token_id=0)


def check_deepseek_moe_bites(model, config):
    """DeepSeek-V3's routing (GLM-4.5's, dots.llm1's) must change the logits in each of its parts,
    or the fixture would not test them: the correction bias (against none), the groups (against
    every group kept), the routed scale (against 1), and the shared experts (against none); and
    dots.llm1's window on its second layer (against none)."""
    ids = torch.arange(3, 40).remainder(config.vocab_size)[None]
    moe = model.model.layers[1].mlp
    diffs = {
        "correction bias": logit_change(model, ids, moe.gate, "e_score_correction_bias",
                                        torch.zeros_like(moe.gate.e_score_correction_bias)),
        "groups": logit_change(model, ids, moe.gate, "topk_group", moe.gate.n_group),
        "routed scale": logit_change(model, ids, moe.gate, "routed_scaling_factor", 1.0),
        "shared experts": logit_change(
            model, ids, moe.shared_experts.down_proj, "weight",
            torch.nn.Parameter(torch.zeros_like(moe.shared_experts.down_proj.weight))),
    }
    if config.model_type == "dots1":
        diffs["window"] = logit_change(model, ids, model.config, "sliding_window", 10**6)
    for what, diff in diffs.items():
        assert diff > 1e-2, f"the {what} do not change the logits ({diff})"
    print(f"  {config.model_type}: max logit changes " +
          ", ".join(f"{k} {v:.3f}" for k, v in diffs.items()))


def check_exaone4_bites(model, config):
    """The window and the full layer's missing rotary must each change the logits of a prompt
    longer than the window, or the fixture would not test them."""
    ids = torch.arange(3, 3 + 3 * config.sliding_window).remainder(config.vocab_size)[None]
    full = model.model.layers[1].self_attn
    assert not full.is_sliding and model.model.layers[0].self_attn.is_sliding
    with torch.no_grad():
        base = model(input_ids=ids, use_cache=False).logits[0]
        full.is_sliding = True  # rotates it (its mask still comes from layer_types)
        roped = model(input_ids=ids, use_cache=False).logits[0]
        full.is_sliding = False
        model.config.sliding_window = 10**6
        unwindowed = model(input_ids=ids, use_cache=False).logits[0]
        model.config.sliding_window = config.sliding_window
    w = config.sliding_window
    nope = float((base - roped).abs().max())
    assert nope > 1e-2, f"the NoPE layer does not change the logits ({nope})"
    assert torch.allclose(base[:w], unwindowed[:w], atol=1e-5)
    window = float((base[w:] - unwindowed[w:]).abs().max())
    assert window > 1e-2, f"the window does not change the logits past it ({window})"
    print(f"  exaone4: max logit change with rotary on the full layer {nope:.3f}, without the "
          f"window {window:.3f}")


def glm4_config():
    from transformers import Glm4Config  # transformers >= 4.51
    return Glm4Config(head_dim=16, **GLM_COMMON)


def glm_config():
    from transformers import GlmConfig
    return GlmConfig(head_dim=32, **GLM_COMMON)


def check_glm_interleaving_bites(model, config):
    """Rotary over the interleaved pairs must differ from rotate-half rotary on the same model, or
    the fixture would not tell the two apart."""
    import importlib
    module = importlib.import_module(type(model).__module__)
    interleaved = module.apply_rotary_pos_emb

    def rotate_half_partial(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
        # Llama's rotate-half over the leading rotary_dim values (cos and sin are
        # [freqs, freqs] of rotary_dim), the rest passed through.
        cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
        dim = cos.shape[-1]

        def turn(x):
            rot, rest = x[..., :dim], x[..., dim:]
            half = torch.cat((-rot[..., dim // 2:], rot[..., :dim // 2]), dim=-1)
            return torch.cat((rot * cos + half * sin, rest), dim=-1)
        return turn(q), turn(k)

    ids = torch.arange(3, 3 + 40).remainder(config.vocab_size)[None]
    with torch.no_grad():
        want = model(input_ids=ids, use_cache=False).logits[0]
        module.apply_rotary_pos_emb = rotate_half_partial
        try:
            other = model(input_ids=ids, use_cache=False).logits[0]
        finally:
            module.apply_rotary_pos_emb = interleaved
        again = model(input_ids=ids, use_cache=False).logits[0]
    assert torch.equal(want, again)
    diff = (want - other).abs().max()
    assert diff > 1e-2, "interleaved and rotate-half rotary give the same logits"
    print(f"  {config.model_type}: rotate-half in place of interleaved rotary moves logits by "
          f"up to {diff:.3f}")


def check_smollm3_bites(model, config):
    """The NoPE layers and their window must each change the logits of a prompt longer than the
    window, or the fixture would not test them."""
    assert config.no_rope_layers == [1, 0, 1, 0], config.no_rope_layers
    assert config.layer_types == ["full_attention", "sliding_attention"] * 2, config.layer_types
    ids = torch.arange(3, 3 + 3 * config.sliding_window).remainder(config.vocab_size)[None]
    with torch.no_grad():
        both = model(input_ids=ids, use_cache=False).logits[0]
        for layer in model.model.layers:
            layer.self_attn.use_rope = 1
        roped = model(input_ids=ids, use_cache=False).logits[0]
        for layer, rope in zip(model.model.layers, config.no_rope_layers):
            layer.self_attn.use_rope = rope
        for layer in model.model.layers:
            layer.attention_type = "full_attention"
        unwindowed = model(input_ids=ids, use_cache=False).logits[0]
        for layer, layer_type in zip(model.model.layers, config.layer_types):
            layer.attention_type = layer_type
        again = model(input_ids=ids, use_cache=False).logits[0]
    assert torch.equal(both, again)
    assert (both - roped).abs().max() > 1e-2, "NoPE layers do not change the logits"
    window = config.sliding_window
    assert torch.allclose(both[:window], unwindowed[:window], atol=1e-5)
    assert (both[window:] - unwindowed[window:]).abs().max() > 1e-2, "the window does not bite"


MODELS = [
    # name, config factory, save dtype, shards, seed
    ("llama-gqa", llama_gqa_config, torch.bfloat16, 2, 1234),
    ("qwen2-bias", qwen2_bias_config, torch.float16, 1, 5678),
    ("llama-tied", llama_tied_config, torch.float32, 1, 9012),
    ("mixtral-moe", mixtral_moe_config, torch.bfloat16, 1, 2468),
    ("gemma2-softcap", gemma2_config, torch.bfloat16, 1, 1357),
    ("phi3-fused", phi3_config, torch.bfloat16, 2, 8643),
    ("phi3-longrope", phi3_longrope_config, torch.bfloat16, 1, 8644),
    ("granite-mup", granite_config, torch.bfloat16, 1, 9753),
    ("granite-moe", granite_moe_config, torch.bfloat16, 1, 8642),
    ("qwen2-yarn", qwen2_yarn_config, torch.bfloat16, 1, 5679),
    ("gemma-mqa", gemma_config, torch.bfloat16, 1, 1358),
    ("qwen2-moe", qwen2_moe_config, torch.bfloat16, 1, 2469),
    ("olmoe", olmoe_config, torch.bfloat16, 1, 2470),
]


# Written only when named: their architectures need a newer transformers than 4.46 (see the
# module docstring). Same fields as MODELS.
NAMED_ONLY = [
    ("smollm3-nope", smollm3_config, torch.bfloat16, 1, 9876),
    ("glm4-sandwich", glm4_config, torch.bfloat16, 1, 9877),
    ("glm-interleaved", glm_config, torch.bfloat16, 1, 9879),
    ("olmo2-postnorm", olmo2_config, torch.bfloat16, 1, 9881),
    ("olmo3-hybrid", olmo3_config, torch.bfloat16, 1, 9882),
    ("exaone4-hybrid", exaone4_config, torch.bfloat16, 1, 9883),
    ("seed-oss-bias", seed_oss_config, torch.bfloat16, 1, 9884),
    ("glm4-moe", glm4_moe_config, torch.bfloat16, 1, 9885),
    ("dots1-moe", dots1_config, torch.bfloat16, 1, 9886),
]


def build_model(config, seed):
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager",
                                             torch_dtype=torch.float32)
    # HF init leaves norms at 1 and biases at 0, which would leave those code paths untested.
    # Gemma's norms multiply by (1 + w): their stored weights are drawn around 0 instead.
    norm_center = 0.0 if config.model_type in ("gemma", "gemma2") else 1.0
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.copy_(norm_center + 0.2 * torch.randn_like(param))
            elif name.endswith(".bias"):
                param.copy_(0.2 * torch.randn_like(param))
        # GLM-4.5's router correction bias is a buffer (zeros): drawn non-negative, so that every
        # eligible expert's choice stays above the 0 that transformers gives the masked ones (vLLM
        # gives them -inf; the two agree only then).
        for name, buffer in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                buffer.copy_(0.3 * torch.rand_like(buffer))
    model.eval()
    return model


def save(model, out_dir, dtype, shards):
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    model = model.to(dtype)
    total = sum(p.numel() * p.element_size() for p in model.state_dict().values())
    kwargs = {}
    if shards > 1:
        kwargs["max_shard_size"] = int(total / shards * 1.15)
    model.save_pretrained(out_dir, safe_serialization=True, **kwargs)
    gen_config = os.path.join(out_dir, "generation_config.json")
    if os.path.exists(gen_config):
        os.remove(gen_config)
    files = sorted(f for f in os.listdir(out_dir) if f.endswith(".safetensors"))
    if shards > 1:
        assert os.path.exists(os.path.join(out_dir, "model.safetensors.index.json")), out_dir
    assert len(files) == shards, (out_dir, files)
    return files


def load_saved_tensors(out_dir, files):
    tensors = {}
    for f in files:
        tensors.update(load_file(os.path.join(out_dir, f)))
    return tensors


def weights_probe(tensors):
    probe = {}
    for name in sorted(tensors):
        t = tensors[name]
        flat32 = t.float().reshape(-1)
        as64 = flat32.double()
        entry = {
            "dtype": {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}[t.dtype],
            "shape": list(t.shape),
            "sum": float(as64.sum()),
            "sum_squares": float((as64 * as64).sum()),
            "first": [exact(v) for v in flat32[:4].tolist()],
            "last": exact(flat32[-1].item()),
        }
        if t.dtype in (torch.float16, torch.bfloat16):
            bits = t.reshape(-1)[:4].view(torch.int16).tolist()
            entry["first_bits"] = [b & 0xFFFF for b in bits]
        probe[name] = entry
    return probe


def reference_outputs(model, vocab, seed):
    gen = torch.Generator().manual_seed(seed + 1)
    prompts = []
    min_margin = float("inf")
    for index, length in enumerate(PROMPT_LENGTHS):
        ids = torch.randint(0, vocab, (length,), generator=gen).tolist()
        entry = {"ids": ids}
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float()
            assert logits.shape == (length, vocab)
            if index in FULL_LOGITS_PROMPTS:
                entry["logits"] = [[g7(v) for v in row] for row in logits.tolist()]
            seq = list(ids)
            greedy, top5, margins = [], [], []
            for _ in range(GREEDY_TOKENS):
                last = model(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1].float()
                logprobs = torch.log_softmax(last, dim=-1)
                values, indices = torch.topk(last, TOP_K)
                token = int(torch.argmax(last))
                assert token == int(indices[0])
                margin = float(values[0] - values[1])
                min_margin = min(min_margin, margin)
                greedy.append(token)
                margins.append(g7(margin))
                top5.append([[int(i), g7(logprobs[i])] for i in indices.tolist()])
                seq.append(token)
        entry["greedy"] = greedy
        entry["top5"] = top5
        entry["margins"] = margins
        prompts.append(entry)
    return prompts, min_margin


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
        f.write("\n")


def rms_norm(x, weight, eps):
    """Qwen2RMSNorm / Qwen3RMSNorm over the last dimension."""
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return weight * (x.float() * torch.rsqrt(variance + eps)).to(x.dtype)


def store_with_qk_norms(model, state):
    """Adds each layer's q_norm / k_norm weights (attributes of its attention module) to `state`
    in bfloat16, then loads every stored tensor back into the model: the reference runs on the
    stored numbers. Call under torch.no_grad()."""
    def key(i, norm):
        return f"model.layers.{i}.self_attn.{norm}.weight"
    for i, layer in enumerate(model.model.layers):
        for norm in ("q_norm", "k_norm"):
            state[key(i, norm)] = getattr(layer.self_attn, norm + "_weight").to(
                torch.bfloat16).contiguous()
    own = model.state_dict()
    for tensor_name, t in state.items():
        if tensor_name in own:
            own[tensor_name].copy_(t.float())
    for i, layer in enumerate(model.model.layers):
        for norm in ("q_norm", "k_norm"):
            setattr(layer.self_attn, norm + "_weight", state[key(i, norm)].float())


def hook_qk_norms(model, norm_fn, head_dim, eps):
    """Applies each layer's q_norm / k_norm to q_proj's / k_proj's outputs, head by head (forward
    hooks): `norm_fn(x [..., heads, head_dim], weight, eps)`."""
    def per_head_norm(norm):
        def hook(module, inputs, output):
            shape = output.shape
            weight = getattr(module.attention, norm + "_weight")
            return norm_fn(output.view(*shape[:-1], -1, head_dim), weight, eps).view(shape)
        return hook

    for layer in model.model.layers:
        attention = layer.self_attn
        attention.q_proj.attention = attention
        attention.k_proj.attention = attention
        attention.q_proj.register_forward_hook(per_head_norm("q_norm"))
        attention.k_proj.register_forward_hook(per_head_norm("k_norm"))


def generate_qwen3(name, seed, moe=False):
    """qwen3-qknorm and qwen3-moe: see the module docstring."""
    out_dir = os.path.join(OUT, name)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    heads, kv_heads, head_dim, eps = 4, 2, 16, 1e-6
    common = dict(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=256,
        rope_theta=1000000.0, rms_norm_eps=eps, tie_word_embeddings=not moe,
        use_sliding_window=False, initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2)
    moe_fields = dict(num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
                      norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[])
    if moe:
        config = Qwen2MoeConfig(**common, **moe_fields, shared_expert_intermediate_size=32)
    else:
        config = Qwen2Config(**common)
    model = build_model(config, seed)
    state = {}
    with torch.no_grad():
        for layer in model.model.layers:
            attention = layer.self_attn
            for proj in (attention.q_proj, attention.k_proj, attention.v_proj):
                proj.bias.zero_()  # Qwen3 has none (attention_bias false)
            attention.q_norm_weight = 1.0 + 0.2 * torch.randn(head_dim)
            attention.k_norm_weight = 1.0 + 0.2 * torch.randn(head_dim)
            if moe:  # Qwen3-MoE has no shared expert: Qwen2-MoE's adds zero
                for param in layer.mlp.shared_expert.parameters():
                    param.zero_()
        # What is saved: Qwen3's tensors in bfloat16 (a tied lm_head is not saved).
        for tensor_name, t in model.state_dict().items():
            if tensor_name.endswith(("q_proj.bias", "k_proj.bias", "v_proj.bias")):
                continue
            if tensor_name == "lm_head.weight" and config.tie_word_embeddings:
                continue
            if ".shared_expert" in tensor_name:
                continue
            state[tensor_name] = t.to(torch.bfloat16).contiguous()
        store_with_qk_norms(model, state)
    if config.tie_word_embeddings:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    hook_qk_norms(model, rms_norm, head_dim, eps)

    files = ["model.safetensors"]
    save_file(state, os.path.join(out_dir, files[0]), metadata={"format": "pt"})
    config_json = {
        "architectures": ["Qwen3MoeForCausalLM" if moe else "Qwen3ForCausalLM"],
        "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 1, "eos_token_id": 2, "head_dim": head_dim, "hidden_act": "silu",
        "hidden_size": 64, "initializer_range": INIT_STD, "intermediate_size": 128,
        "max_position_embeddings": 256, "max_window_layers": 28,
        "model_type": "qwen3_moe" if moe else "qwen3",
        "num_attention_heads": heads, "num_hidden_layers": 2, "num_key_value_heads": kv_heads,
        "rms_norm_eps": eps, "rope_scaling": None, "rope_theta": 1000000.0,
        "sliding_window": None, "tie_word_embeddings": config.tie_word_embeddings,
        "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False,
        "vocab_size": 256}
    if moe:
        config_json.update(moe_fields)
    write_json_pretty(os.path.join(out_dir, "config.json"), config_json)
    base = "Qwen2MoeForCausalLM, its shared expert zeroed," if moe else "Qwen2ForCausalLM"
    finish_fixture(name, out_dir, model, config.vocab_size, seed, torch.bfloat16, files, state,
                   reference_note=f"transformers {base} + q/k norm hooks (Qwen3)")


PARTIAL_ROTARY_FACTOR = 0.75  # Phi-4-mini's
PARTIAL_SHORT = [1.0, 1.4, 2.0, 2.9, 4.1, 5.8]
PARTIAL_LONG = [1.0, 2.7, 7.5, 16.0, 34.0, 64.0]


def generate_phi4_partial(name, seed):
    """phi4-partial-rotary: see the module docstring."""
    out_dir = os.path.join(OUT, name)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    heads, kv_heads, head_dim, original = 4, 2, 16, 16
    rotary_dim = int(head_dim * PARTIAL_ROTARY_FACTOR)
    assert rotary_dim == 2 * len(PARTIAL_SHORT) == 2 * len(PARTIAL_LONG)
    # transformers 4.46's Phi3Config wants head_dim / 2 factors; the layers get their own below.
    whole_head = [1.0] * (head_dim // 2)
    config = Phi3Config(
        vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=256,
        original_max_position_embeddings=original, rope_theta=10000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=True, sliding_window=None,
        rope_scaling={"type": "longrope", "short_factor": whole_head, "long_factor": whole_head},
        initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model = build_model(config, seed)
    with torch.no_grad():  # The reference runs on exactly what is saved.
        for param in model.parameters():
            param.copy_(param.to(torch.bfloat16).float())
    state = {tensor_name: t.to(torch.bfloat16).contiguous()
             for tensor_name, t in model.state_dict().items() if tensor_name != "lm_head.weight"}
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()

    ids = torch.arange(3, 3 + 3 * original).remainder(config.vocab_size)[None]
    with torch.no_grad():
        whole = model(input_ids=ids, use_cache=False).logits[0]
    phi3 = transformers.models.phi3.modeling_phi3
    rotate = phi3.apply_rotary_pos_emb

    def partial_rotary(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
        d = cos.shape[-1]
        q_rot, k_rot = rotate(q[..., :d], k[..., :d], cos, sin, position_ids, unsqueeze_dim)
        return torch.cat((q_rot, q[..., d:]), dim=-1), torch.cat((k_rot, k[..., d:]), dim=-1)

    phi3.apply_rotary_pos_emb = partial_rotary
    for layer in model.model.layers:
        rotary = phi3.Phi3LongRoPEScaledRotaryEmbedding(rotary_dim, config)
        rotary.short_factor = PARTIAL_SHORT
        rotary.long_factor = PARTIAL_LONG
        layer.self_attn.rotary_emb = rotary
    with torch.no_grad():
        partial = model(input_ids=ids, use_cache=False).logits[0]
    diff = float((partial - whole).abs().max())
    assert diff > 1e-2, f"partial rotary does not change the logits ({diff})"
    print(f"  partial rotary: max logit change against whole-head rotary with unit factors {diff:.3f}")

    files = ["model.safetensors"]
    save_file(state, os.path.join(out_dir, files[0]), metadata={"format": "pt"})
    config_json = {
        "architectures": ["Phi3ForCausalLM"], "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 2,
        "hidden_act": "silu", "hidden_size": 64, "initializer_range": INIT_STD,
        "intermediate_size": 96, "max_position_embeddings": 256, "model_type": "phi3",
        "num_attention_heads": heads, "num_hidden_layers": 2, "num_key_value_heads": kv_heads,
        "original_max_position_embeddings": original, "pad_token_id": 0,
        "partial_rotary_factor": PARTIAL_ROTARY_FACTOR, "resid_pdrop": 0.0, "rms_norm_eps": 1e-5,
        "rope_scaling": {"type": "longrope", "short_factor": PARTIAL_SHORT,
                         "long_factor": PARTIAL_LONG},
        "rope_theta": 10000.0, "sliding_window": None, "tie_word_embeddings": True,
        "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 256}
    write_json_pretty(os.path.join(out_dir, "config.json"), config_json)
    try:
        finish_fixture(name, out_dir, model, config.vocab_size, seed, torch.bfloat16, files, state,
                       reference_note=(f"transformers {transformers.__version__} "
                                       "Phi3ForCausalLM + partial rotary (leading 12 of 16)"))
    finally:
        phi3.apply_rotary_pos_emb = rotate


def gemma_rms_norm(x, weight, eps):
    """Gemma2RMSNorm / Gemma3RMSNorm over the last dimension: (1 + w), in float32."""
    out = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
    return (out * (1.0 + weight.float())).type_as(x)


def generate_gemma3(name, seed, multimodal=False):
    """gemma3-local-rope, or with multimodal gemma3-mm-text: see the module docstring."""
    from transformers.models.gemma2.modeling_gemma2 import Gemma2RotaryEmbedding
    out_dir = os.path.join(OUT, name)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    layers, heads, kv_heads, head_dim, eps = 6, 4, 1, 16, 1e-6
    window, pattern, local_base, global_base = 16, 6, 10000.0, 1000000.0
    config = Gemma2Config(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
        max_position_embeddings=256, rope_theta=global_base, rms_norm_eps=eps,
        tie_word_embeddings=True, hidden_activation="gelu_pytorch_tanh",
        query_pre_attn_scalar=24, sliding_window=window, attn_logit_softcapping=None,
        final_logit_softcapping=None, initializer_range=INIT_STD, bos_token_id=1, eos_token_id=2,
        pad_token_id=0)
    model = build_model(config, seed)
    state = {}
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_norm_weight = 0.2 * torch.randn(head_dim)
            layer.self_attn.k_norm_weight = 0.2 * torch.randn(head_dim)
        for tensor_name, t in model.state_dict().items():
            if tensor_name == "lm_head.weight":
                continue  # tied
            state[tensor_name] = t.to(torch.bfloat16).contiguous()
        store_with_qk_norms(model, state)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    hook_qk_norms(model, gemma_rms_norm, head_dim, eps)

    sliding = []
    for i, layer in enumerate(model.model.layers):
        attention = layer.self_attn
        # Gemma 3's layer types: sliding unless (i + 1) % pattern == 0; Gemma2 alternates.
        is_sliding = (i + 1) % pattern != 0
        sliding.append(is_sliding)
        layer.is_sliding = is_sliding
        layer.sliding_window = window
        attention.sliding_window = window if is_sliding else None
        attention.rotary_emb = Gemma2RotaryEmbedding(
            head_dim, max_position_embeddings=256, base=local_base if is_sliding else global_base)
        if multimodal and not is_sliding:
            attention.rotary_emb.inv_freq = attention.rotary_emb.inv_freq / LINEAR_ROPE_FACTOR
    assert sliding == [True] * 5 + [False]
    check_gemma3_reference(model, window)
    if multimodal:
        check_linear_rope_bites(model, window)

    files = ["model.safetensors"]
    if multimodal:
        saved = {f"language_model.{k}": v for k, v in state.items()}
        vision = torch.Generator().manual_seed(seed + 2)
        saved["vision_tower.vision_model.embeddings.patch_embedding.weight"] = torch.randn(
            8, 3, 2, 2, generator=vision).to(torch.bfloat16)
        saved["multi_modal_projector.mm_input_projection_weight"] = torch.randn(
            8, 64, generator=vision).to(torch.bfloat16)
        save_file(saved, os.path.join(out_dir, files[0]), metadata={"format": "pt"})
        write_json_pretty(os.path.join(out_dir, "config.json"), {
            "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255,
            "eoi_token_index": 254, "eos_token_id": [1, 2], "image_token_index": 253,
            "initializer_range": INIT_STD, "mm_tokens_per_image": 4, "model_type": "gemma3",
            "text_config": {
                "head_dim": head_dim, "hidden_size": 64, "intermediate_size": 128,
                "max_position_embeddings": 256, "model_type": "gemma3_text",
                "num_attention_heads": heads, "num_hidden_layers": layers,
                "num_key_value_heads": kv_heads, "query_pre_attn_scalar": 24,
                "rope_scaling": {"factor": LINEAR_ROPE_FACTOR, "rope_type": "linear"},
                "sliding_window": window, "vocab_size": 256},
            "torch_dtype": "bfloat16",
            "vision_config": {"hidden_size": 8, "image_size": 4, "model_type": "siglip_vision_model",
                              "num_attention_heads": 1, "num_hidden_layers": 1, "patch_size": 2,
                              "vision_use_head": False}})
        finish_fixture(name, out_dir, model, config.vocab_size, seed, torch.bfloat16, files, saved,
                       reference_note="transformers Gemma2ForCausalLM, softcaps off, Gemma 3's "
                                      "layer types, local rotary base and linear scaling of the "
                                      "global layer, + q/k norm hooks (Gemma3)")
        return
    save_file(state, os.path.join(out_dir, files[0]), metadata={"format": "pt"})
    config_json = {
        "architectures": ["Gemma3ForCausalLM"], "attention_bias": False,
        "attention_dropout": 0.0, "attn_logit_softcapping": None, "bos_token_id": 1,
        "cache_implementation": "hybrid", "eos_token_id": 2, "final_logit_softcapping": None,
        "head_dim": head_dim, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 64,
        "initializer_range": INIT_STD, "intermediate_size": 128, "max_position_embeddings": 256,
        "model_type": "gemma3_text", "num_attention_heads": heads, "num_hidden_layers": layers,
        "num_key_value_heads": kv_heads, "pad_token_id": 0, "query_pre_attn_scalar": 24,
        "rms_norm_eps": eps, "rope_local_base_freq": local_base, "rope_scaling": None,
        "rope_theta": global_base, "sliding_window": window, "sliding_window_pattern": pattern,
        "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 256}
    write_json_pretty(os.path.join(out_dir, "config.json"), config_json)
    finish_fixture(name, out_dir, model, config.vocab_size, seed, torch.bfloat16, files, state,
                   reference_note="transformers Gemma2ForCausalLM, softcaps off, Gemma 3's "
                                  "layer types and local rotary base, + q/k norm hooks (Gemma3)")


LINEAR_ROPE_FACTOR = 8.0  # Gemma 3 4B+'s


def check_linear_rope_bites(model, window):
    """The global layer's linear rope scaling must change the logits of a prompt longer than the
    window (where only the global layer sees far positions)."""
    ids = torch.arange(5, 5 + 3 * window).remainder(model.config.vocab_size)[None]
    rotary = model.model.layers[5].self_attn.rotary_emb
    with torch.no_grad():
        scaled = model(input_ids=ids, use_cache=False).logits[0]
        saved = rotary.inv_freq
        rotary.inv_freq = saved * LINEAR_ROPE_FACTOR
        unscaled = model(input_ids=ids, use_cache=False).logits[0]
        rotary.inv_freq = saved
    diff = float((scaled - unscaled).abs().max())
    assert diff > 1e-2, f"the linear rope scaling does not change the logits ({diff})"
    print(f"  linear rope x{LINEAR_ROPE_FACTOR}: max logit change without it {diff:.3f}")


def check_gemma3_reference(model, window):
    """Each Gemma 3 difference must change the logits, or the fixture would not test it: the
    q/k norms, the local rotary base and the sliding layers' window."""
    ids = torch.arange(5, 5 + 3 * window).remainder(model.config.vocab_size)[None]
    with torch.no_grad():
        base = model(input_ids=ids, use_cache=False).logits[0]
        attention = model.model.layers[0].self_attn
        saved_rotary = attention.rotary_emb
        attention.rotary_emb = model.model.layers[5].self_attn.rotary_emb
        global_rope = model(input_ids=ids, use_cache=False).logits[0]
        attention.rotary_emb = saved_rotary
        saved_norm = attention.q_norm_weight
        attention.q_norm_weight = torch.zeros_like(saved_norm) - 1.0  # (1 + w) = 0: no q
        no_q = model(input_ids=ids, use_cache=False).logits[0]
        attention.q_norm_weight = saved_norm
        layer = model.model.layers[0]
        layer.is_sliding = False
        attention.sliding_window = None
        unwindowed = model(input_ids=ids, use_cache=False).logits[0]
        layer.is_sliding = True
        attention.sliding_window = window
        again = model(input_ids=ids, use_cache=False).logits[0]
    assert torch.equal(base, again)
    for what, other in (("local rotary base", global_rope), ("q norm", no_q)):
        diff = float((base - other).abs().max())
        assert diff > 1e-2, f"{what} does not change the logits ({diff})"
    assert torch.equal(base[:window], unwindowed[:window])
    diff = float((base[window:] - unwindowed[window:]).abs().max())
    assert diff > 1e-2, f"layer 0's window does not change the logits past it ({diff})"
    print(f"  gemma3 reference: window changes logits past {window} by up to {diff:.3f}")


def write_json_pretty(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


def finish_fixture(name, out_dir, ref, vocab, seed, dtype, files, saved, reference_note=None):
    """expected.json and weights_probe.json of a saved fixture, from `ref` (float32)."""
    prompts, min_margin = reference_outputs(ref, vocab, seed)
    expected = {
        "model": name,
        "generator": "scripts/gen_model_fixtures.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "saved_dtype": str(dtype).replace("torch.", ""),
        "compute_dtype": "float32",
        "greedy_tokens": GREEDY_TOKENS,
        "ignore_eos": True,
        "top_k": TOP_K,
        "min_margin": g7(min_margin),
        "notes": ("logits and logprobs are float32 results rounded to 7 significant digits; "
                  "'logits' [len, vocab] is present for some prompts; 'margins' is the top-1 minus "
                  "top-2 logit at each greedy step; 'top5' holds [id, logprob] pairs, best first"),
        "prompts": prompts,
    }
    if reference_note is not None:
        expected["reference"] = reference_note
    write_json(os.path.join(out_dir, "expected.json"), expected)
    write_json(os.path.join(out_dir, "weights_probe.json"),
               {"model": name, "files": files, "tensors": weights_probe(saved)})
    size = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir))
    print(f"{name}: {len(files)} safetensors file(s), {size} bytes, "
          f"min top-1/top-2 margin {min_margin:.4f}, "
          f"per prompt {[min(p['margins']) for p in prompts]}")


def generate_model(name, make_config, dtype, shards, seed):
    out_dir = os.path.join(OUT, name)
    config = make_config()
    model = build_model(config, seed)
    files = save(model, out_dir, dtype, shards)

    # Reload what was saved, upcast to float32: the reference runs on the exact stored numbers.
    saved = load_saved_tensors(out_dir, files)
    ref = AutoModelForCausalLM.from_pretrained(out_dir, torch_dtype=torch.float32,
                                               attn_implementation="eager")
    ref.eval()
    state = ref.state_dict()
    for tensor_name, t in saved.items():
        assert torch.equal(state[tensor_name], t.float()), tensor_name
    if config.tie_word_embeddings:
        assert "lm_head.weight" not in saved
        assert ref.lm_head.weight.data_ptr() == ref.model.embed_tokens.weight.data_ptr()

    if config.model_type in ("gemma2", "phi3") and config.sliding_window:
        check_window_bites(ref, config)
    if config.model_type == "smollm3":
        check_smollm3_bites(ref, config)
    if config.model_type in ("glm", "glm4"):
        check_glm_interleaving_bites(ref, config)
    if config.model_type == "qwen2_moe":
        check_shared_expert_bites(ref)
    if config.model_type == "olmo3":
        check_olmo3_bites(ref, config)
    if config.model_type == "exaone4":
        check_exaone4_bites(ref, config)
    if config.model_type in ("glm4_moe", "dots1"):
        check_deepseek_moe_bites(ref, config)
    rope_scaling = getattr(config, "rope_scaling", None)  # GlmConfig has none
    if rope_scaling and rope_scaling.get("type") == "longrope":
        check_longrope_bites(ref, config)
    if rope_scaling and rope_scaling.get("type") == "yarn" and config.model_type != "olmo3":
        check_yarn_bites(ref, config)
    finish_fixture(name, out_dir, ref, config.vocab_size, seed, dtype, files, saved)


def check_window_bites(model, config):
    """The sliding window must change the logits of a prompt longer than it, or the fixture would
    not test it: the same model without a window must give other logits past position W."""
    ids = torch.arange(3, 3 + 3 * config.sliding_window).remainder(config.vocab_size)[None]
    with torch.no_grad():
        windowed = model(input_ids=ids, use_cache=False).logits[0]
        saved = model.config.sliding_window
        if config.model_type == "phi3":  # Phi3's causal mask reads config.sliding_window
            model.config.sliding_window = None
        else:  # Gemma2's decoder layers apply their own
            for layer in model.model.layers:
                layer.sliding_window = 10**6
                layer.self_attn.sliding_window = None
        unwindowed = model(input_ids=ids, use_cache=False).logits[0]
        model.config.sliding_window = saved
        if config.model_type != "phi3":
            for layer in model.model.layers:
                layer.sliding_window = saved
                layer.self_attn.sliding_window = saved if layer.is_sliding else None
    w = config.sliding_window
    assert torch.equal(windowed[:w], unwindowed[:w]), "positions inside the window must agree"
    diff = float((windowed[w:] - unwindowed[w:]).abs().max())
    assert diff > 1e-2, f"the window does not change the logits past it ({diff})"
    print(f"  sliding window {w}: max logit change past it {diff:.3f}")


def check_longrope_bites(model, config):
    """Each part of LongRoPE must change the logits: the short factors (a prompt within the
    pretrained length), the long factors (a longer prompt), and the attention factor."""
    original = config.original_max_position_embeddings
    rotary = [layer.self_attn.rotary_emb for layer in model.model.layers]
    short_ids = torch.arange(3, 3 + original).remainder(config.vocab_size)[None]
    long_ids = torch.arange(3, 3 + 3 * original).remainder(config.vocab_size)[None]

    def logits(ids):
        with torch.no_grad():
            return model(input_ids=ids, use_cache=False).logits[0]

    def change(ids, **override):
        saved = {k: [getattr(r, k) for r in rotary] for k in override}
        base = logits(ids)
        for r in rotary:
            for k, v in override.items():
                setattr(r, k, v)
        changed = logits(ids)
        for k, values in saved.items():
            for r, v in zip(rotary, values):
                setattr(r, k, v)
        return float((base - changed).abs().max())

    ones = [1.0] * len(LONGROPE_SHORT)
    short = change(short_ids, short_factor=ones)
    long = change(long_ids, long_factor=LONGROPE_SHORT)
    # Without the attention factor: the same rotation, unscaled (max_position = original).
    attention = change(short_ids, max_position_embeddings=original)
    for what, diff in (("short factors", short), ("long factors", long),
                       ("attention factor", attention)):
        assert diff > 1e-2, f"LongRoPE's {what} do not change the logits ({diff})"
    print(f"  longrope: max logit change without the short factors {short:.3f}, with the short "
          f"factors for the long ones {long:.3f}, without the attention factor {attention:.3f}")


def check_yarn_bites(model, config):
    """Both halves of YaRN must change the logits of a prompt past the pretrained length: the
    blended frequencies (against the default ones) and the attention factor (against 1)."""
    rotary = model.model.rotary_emb
    assert rotary.rope_type == "yarn", rotary.rope_type
    ids = torch.arange(3, 3 + 2 * config.max_position_embeddings).remainder(config.vocab_size)[None]
    default_inv_freq, _ = transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS["default"](
        config, "cpu")

    def change(attribute, value):
        return logit_change(model, ids, rotary, attribute, value)

    frequencies = change("inv_freq", default_inv_freq)
    attention = change("attention_scaling", 1.0)
    for what, diff in (("frequencies", frequencies), ("attention factor", attention)):
        assert diff > 1e-2, f"YaRN's {what} do not change the logits ({diff})"
    print(f"  yarn: max logit change with the default frequencies {frequencies:.3f}, without the "
          f"attention factor ({rotary.attention_scaling:.4f}) {attention:.3f}")


def dtype_patterns():
    """Selected F16/BF16 bit patterns: every exponent, edge mantissas, both signs, random ones."""
    gen = torch.Generator().manual_seed(42)
    f16 = []
    for sign in (0, 0x8000):
        for exponent in range(32):
            for mantissa in (0, 1, 2, 0x155, 0x200, 0x2AA, 0x3FE, 0x3FF):
                f16.append(sign | (exponent << 10) | mantissa)
    f16 += torch.randint(0, 0x10000, (256,), generator=gen).tolist()
    bf16 = []
    for sign in (0, 0x8000):
        for exponent in range(256):
            for mantissa in (0, 1, 0x40, 0x7F):
                bf16.append(sign | (exponent << 7) | mantissa)
    bf16 += torch.randint(0, 0x10000, (256,), generator=gen).tolist()

    def as_int16(values):
        return torch.tensor([v - 0x10000 if v >= 0x8000 else v for v in values], dtype=torch.int16)

    return as_int16(f16).view(torch.float16), as_int16(bf16).view(torch.bfloat16)


def rounding_sources():
    """float32 values that exercise float -> half/bfloat16 rounding, overflow and underflow."""
    gen = torch.Generator().manual_seed(43)
    values = [0.0, -0.0, 1.0, -1.0, 65504.0, 65519.0, 65520.0, 65536.0, -70000.0, 1e-8, 2.0 ** -24,
              2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -25 * 1.0000001, 6.1e-5, 6.097e-5, 2.0 ** -14,
              1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8,
              3.4e38, -3.4e38, 1e-40, -1e-45, float("inf"), float("-inf"), float("nan")]
    src = torch.tensor(values, dtype=torch.float32)
    # Random bit patterns (finite ones) and random values of moderate magnitude.
    bits = torch.randint(-2 ** 31, 2 ** 31, (256,), generator=gen, dtype=torch.int64)
    rand_bits = bits.to(torch.int32).view(torch.float32)
    rand_bits = rand_bits[torch.isfinite(rand_bits)]
    rand_vals = torch.randn(256, generator=gen) * torch.exp2(torch.randint(-30, 18, (256,),
                                                                         generator=gen).float())
    return torch.cat([src, rand_bits, rand_vals])


def generate_dtypes():
    out_dir = os.path.join(OUT, "safetensors")
    os.makedirs(out_dir, exist_ok=True)
    f16, bf16 = dtype_patterns()
    src = rounding_sources()
    tensors = {
        "f16_bits": f16,
        "f16_as_f32": f16.float(),
        "bf16_bits": bf16,
        "bf16_as_f32": bf16.float(),
        "f32_src": src,
        "f32_to_f16": src.half(),
        "f32_to_bf16": src.bfloat16(),
        "i64": torch.tensor([1, -2, 3], dtype=torch.int64),
        "scalar": torch.tensor(2.5, dtype=torch.float32),
        "empty": torch.zeros((0, 3), dtype=torch.float32),
        "matrix": torch.arange(6, dtype=torch.float32).reshape(2, 3) - 2.5,
    }
    path = os.path.join(out_dir, "dtypes.safetensors")
    save_file({k: v.contiguous() for k, v in tensors.items()}, path,
              metadata={"format": "pt", "generator": "scripts/gen_model_fixtures.py"})
    print(f"safetensors/dtypes.safetensors: {os.path.getsize(path)} bytes")


def main():
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}, "
          f"transformers {transformers.__version__}")
    torch.set_num_threads(1)  # Same reductions on every machine.
    only = set(sys.argv[1:])  # fixture names to write; all when none are given
    for name, make_config, dtype, shards, seed in MODELS:
        if not only or name in only:
            generate_model(name, make_config, dtype, shards, seed)
    for name, make_config, dtype, shards, seed in NAMED_ONLY:
        if name in only:
            generate_model(name, make_config, dtype, shards, seed)
    if not only or "qwen3-qknorm" in only:
        generate_qwen3("qwen3-qknorm", 3456)
    if not only or "qwen3-moe" in only:
        generate_qwen3("qwen3-moe", 4567, moe=True)
    if not only or "phi4-partial-rotary" in only:
        generate_phi4_partial("phi4-partial-rotary", 8645)
    if not only or "gemma3-local-rope" in only:
        generate_gemma3("gemma3-local-rope", 7531)
    if not only or "gemma3-mm-text" in only:
        generate_gemma3("gemma3-mm-text", 7532, multimodal=True)
    if not only or "safetensors" in only:
        generate_dtypes()
    total = 0
    for dirpath, _, files in os.walk(OUT):
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
    print(f"total fixture size: {total} bytes")


if __name__ == "__main__":
    main()
