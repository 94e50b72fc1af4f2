// Randomized differential test: long random sequences of admit (with prefix hits) / chunked
// prefill / decode append / free / re-admission of finished sequences run on KvCacheManager and on
// the naive ReferenceKvCache. After every operation both must agree on success, block tables,
// eviction (free) order, evictable and wasted counts and prefix statistics, and the manager's own
// invariant check (ref counts, free queue, hash index, counters) must pass.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kvcache/kv_cache_manager.h"
#include "kvcache/sliding_window.h"
#include "reference_kv_cache.h"

namespace headroom::kvcache {
namespace {

struct Scenario {
  int32_t num_blocks;
  int32_t block_size;
  int32_t watermark;
  bool caching;
  int32_t window = 0;  // sliding window (0: none)
  // Layer groups' windows (empty: one group attending `window`).
  std::vector<int32_t> groups = {};

  [[nodiscard]] std::vector<int32_t> Windows() const {
    return groups.empty() ? std::vector<int32_t>{window} : groups;
  }
  [[nodiscard]] bool AnyWindow() const {
    for (const int32_t w : Windows()) {
      if (w > 0) return true;
    }
    return false;
  }
};

// What a run exercised, so the test can require that its workload reached every path.
struct Coverage {
  int64_t admissions = 0;
  int64_t prefix_hits = 0;      // admissions that reused cached blocks
  int64_t revived_blocks = 0;   // hit blocks taken back out of the free queue
  int64_t refusals = 0;         // admissions or appends refused for lack of blocks
  int64_t evictions = 0;        // cached blocks reclaimed by allocation
  int64_t released_blocks = 0;  // blocks released behind a sliding window
  int64_t windowed_hits = 0;    // hits whose first block is no longer cached (window only)
};

class Driver {
 public:
  Driver(const Scenario& sc, uint32_t seed)
      : sc_(sc),
        rng_(seed),
        ref_(sc.num_blocks, sc.block_size, sc.watermark, sc.caching, sc.Windows()) {
    auto kv = KvCacheManager::Create({.num_blocks = sc.num_blocks,
                                      .block_size = sc.block_size,
                                      .enable_prefix_caching = sc.caching,
                                      .watermark_blocks = sc.watermark,
                                      .sliding_window = sc.window,
                                      .group_windows = sc.groups});
    EXPECT_TRUE(kv.ok());
    kv_ = *std::move(kv);
    kv_->RecordCacheEvents(size_t{1} << 16);
    for (int f = 0; f < 4; ++f) families_.push_back(RandomTokens(Uniform(0, 6 * sc.block_size)));
  }

  const Coverage& coverage() const { return coverage_; }

  void Run(int ops) {
    for (int op = 0; op < ops && !::testing::Test::HasFailure(); ++op) {
      const int dice = Uniform(0, 99);
      if (dice < 25 || live_.empty()) {
        Admit(NewPrompt());
      } else if (dice < 35 && !finished_.empty()) {
        Admit(finished_[static_cast<size_t>(Uniform(0, static_cast<int>(finished_.size()) - 1))]);
      } else if (dice < 80) {
        AppendTo(PickLive());
      } else {
        FreeSeq(PickLive());
      }
      Compare(op);
    }
  }

 private:
  struct Live {
    std::vector<int32_t> tokens;   // tokens holding slots
    std::vector<int32_t> pending;  // prompt tokens not yet prefilled
    std::string salt;
  };

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::vector<int32_t> RandomTokens(int n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = Uniform(0, 5);  // a tiny vocabulary makes accidental sharing likely
    return t;
  }
  int64_t PickLive() {
    auto it = live_.begin();
    std::advance(it, Uniform(0, static_cast<int>(live_.size()) - 1));
    return it->first;
  }
  std::vector<int32_t> NewPrompt() {
    const auto& family = families_[static_cast<size_t>(Uniform(0, 3))];
    std::vector<int32_t> prompt(family.begin(),
                                family.begin() + Uniform(0, static_cast<int>(family.size())));
    const std::vector<int32_t> suffix = RandomTokens(Uniform(1, 3 * sc_.block_size));
    prompt.insert(prompt.end(), suffix.begin(), suffix.end());
    return prompt;
  }

  void Admit(const std::vector<int32_t>& prompt) {
    const std::string salt = Uniform(0, 9) == 0 ? "tenant" : "";
    const PrefixHit hit = kv_->FindCachedPrefix(prompt, salt);
    const auto ref_hit = ref_.FindCachedPrefix(prompt, salt);
    ASSERT_EQ(hit.num_cached_tokens, ref_hit.num_cached_tokens);
    ASSERT_EQ(hit.blocks.size(), ref_hit.blocks.size());
    const std::vector<int32_t> windows = sc_.Windows();
    int32_t revived = 0;
    for (size_t g = 0; g < hit.blocks.size(); ++g) {
      ASSERT_EQ(hit.blocks[g].size(), ref_hit.blocks[g].size());
      for (size_t i = 0; i < hit.blocks[g].size(); ++i) {
        ASSERT_EQ(hit.blocks[g][i].value(), ref_hit.blocks[g][i]);
      }
      // Hit blocks behind the window are not taken: they are released, not revived.
      const auto dead =
          static_cast<size_t>(DeadBlocks(hit.num_cached_tokens, sc_.block_size, windows[g]));
      for (size_t i = dead; i < hit.blocks[g].size(); ++i) {
        revived += kv_->pool().ref_count(hit.blocks[g][i]) == 0 ? 1 : 0;
      }
    }
    const size_t cached = static_cast<size_t>(hit.num_cached_tokens);
    const size_t chunk = static_cast<size_t>(Uniform(1, static_cast<int>(prompt.size() - cached)));
    const std::vector<int32_t> first(prompt.begin() + static_cast<long>(cached),
                                     prompt.begin() + static_cast<long>(cached + chunk));
    const int64_t id = next_id_++;
    const absl::Status status = kv_->AddSequence(
        SequenceId{id}, hit, absl::MakeConstSpan(prompt).subspan(0, cached + chunk));
    const bool ref_ok = ref_.AddSequence(id, prompt, ref_hit, first, salt);
    ASSERT_EQ(status.ok(), ref_ok) << status;
    if (!status.ok()) {
      ASSERT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
      ++coverage_.refusals;
      return;
    }
    ++coverage_.admissions;
    coverage_.prefix_hits += hit.num_cached_tokens > 0 ? 1 : 0;
    coverage_.revived_blocks += revived;
    for (size_t g = 0; g < windows.size(); ++g) {
      const bool head_evicted =
          hit.num_cached_tokens > 0 &&
          !kv_->pool().Lookup(LayerGroupHash(hit.hashes[0], static_cast<int32_t>(g)));
      coverage_.windowed_hits += head_evicted ? 1 : 0;
    }
    coverage_.released_blocks += ReleasedBlocks(id);
    Live& live = live_[id];
    live.tokens.assign(prompt.begin(), prompt.begin() + static_cast<long>(cached + chunk));
    live.pending.assign(prompt.begin() + static_cast<long>(cached + chunk), prompt.end());
    live.salt = salt;
  }

  void AppendTo(int64_t id) {
    Live& live = live_[id];
    std::vector<int32_t> tokens;
    if (!live.pending.empty()) {  // next prefill chunk
      const size_t n = static_cast<size_t>(Uniform(1, static_cast<int>(live.pending.size())));
      tokens.assign(live.pending.begin(), live.pending.begin() + static_cast<long>(n));
    } else {  // decode: one sampled token, sometimes a few (speculative-style)
      tokens = RandomTokens(Uniform(0, 7) == 0 ? Uniform(2, 2 * sc_.block_size) : 1);
    }
    const int32_t released_before = ReleasedBlocks(id);
    const absl::Status status = kv_->Append(SequenceId{id}, tokens);
    ASSERT_EQ(status.ok(), ref_.Append(id, tokens)) << status;
    if (!status.ok()) {
      ASSERT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
      ++coverage_.refusals;
      return;
    }
    coverage_.released_blocks += ReleasedBlocks(id) - released_before;
    live.tokens.insert(live.tokens.end(), tokens.begin(), tokens.end());
    if (!live.pending.empty())
      live.pending.erase(live.pending.begin(),
                         live.pending.begin() + static_cast<long>(tokens.size()));
  }

  int32_t ReleasedBlocks(int64_t id) const {
    int32_t released = 0;
    for (int32_t g = 0; g < kv_->num_groups(); ++g) {
      released += kv_->NumReleasedBlocks(SequenceId{id}, g);
    }
    return released;
  }

  void FreeSeq(int64_t id) {
    ASSERT_TRUE(kv_->Free(SequenceId{id}));
    ref_.Free(id);
    Live& live = live_[id];
    if (live.salt.empty()) {
      std::vector<int32_t> full = live.tokens;
      full.insert(full.end(), live.pending.begin(), live.pending.end());
      full.push_back(0);  // a follow-up turn: the old context plus a new token
      finished_.push_back(std::move(full));
    }
    live_.erase(id);
  }

  void Compare(int op) {
    SCOPED_TRACE(absl::StrCat("after operation ", op));
    const absl::Status invariants = kv_->CheckInvariants();
    ASSERT_TRUE(invariants.ok()) << invariants;
    const KvCacheStats stats = kv_->Stats();
    ASSERT_EQ(stats.num_free_blocks, ref_.NumFree());
    ASSERT_EQ(stats.num_evictable_blocks, ref_.NumEvictable());
    ASSERT_EQ(stats.internal_waste_slots, ref_.WasteSlots());
    ASSERT_EQ(stats.num_tokens, ref_.HeldTokens());
    std::vector<CacheEvent> events;
    ASSERT_TRUE(kv_->TakeCacheEvents(&events));
    for (const CacheEvent& event : events) coverage_.evictions += event.cached ? 0 : 1;
    ASSERT_EQ(stats.prefix_queries, ref_.PrefixQueries());
    ASSERT_EQ(stats.prefix_hits, ref_.PrefixHits());
    ASSERT_EQ(stats.num_sequences, static_cast<int32_t>(live_.size()));
    ASSERT_EQ(stats.num_used_blocks + stats.num_free_blocks, sc_.num_blocks - 1);
    std::vector<int32_t> order;
    for (BlockId b : kv_->pool().FreeOrder()) order.push_back(b.value());
    ASSERT_EQ(order, ref_.FreeOrder());
    for (const auto& [id, live] : live_) {
      ASSERT_EQ(kv_->NumTokens(SequenceId{id}), static_cast<int32_t>(live.tokens.size()));
      for (int32_t g = 0; g < kv_->num_groups(); ++g) {
        const auto table = kv_->BlockTable(SequenceId{id}, g);
        const auto& ref_table = ref_.BlockTable(id, static_cast<size_t>(g));
        ASSERT_EQ(table.size(), ref_table.size());
        for (size_t i = 0; i < table.size(); ++i) ASSERT_EQ(table[i].value(), ref_table[i]);
      }
    }
  }

  Scenario sc_;
  std::mt19937 rng_;
  testing::ReferenceKvCache ref_;
  std::unique_ptr<KvCacheManager> kv_;
  std::vector<std::vector<int32_t>> families_;
  std::map<int64_t, Live> live_;
  std::vector<std::vector<int32_t>> finished_;
  int64_t next_id_ = 1;
  Coverage coverage_;
};

class KvCacheRandomizedTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(KvCacheRandomizedTest, AgreesWithReferenceAndKeepsInvariants) {
  Coverage total;
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    Driver driver(GetParam(), seed);
    driver.Run(2500);
    if (HasFailure()) return;
    total.admissions += driver.coverage().admissions;
    total.prefix_hits += driver.coverage().prefix_hits;
    total.revived_blocks += driver.coverage().revived_blocks;
    total.refusals += driver.coverage().refusals;
    total.evictions += driver.coverage().evictions;
    total.released_blocks += driver.coverage().released_blocks;
    total.windowed_hits += driver.coverage().windowed_hits;
  }
  // The workload must have reached the paths it is meant to check.
  EXPECT_GT(total.admissions, 1000);
  EXPECT_GT(total.refusals, 0) << "pool never ran out";
  if (GetParam().caching) {
    EXPECT_GT(total.prefix_hits, 100);
    EXPECT_GT(total.revived_blocks, 0);
    EXPECT_GT(total.evictions, 0);
  } else {
    EXPECT_EQ(total.prefix_hits, 0);
  }
  if (GetParam().AnyWindow()) {
    EXPECT_GT(total.released_blocks, 100);
    if (GetParam().caching) {
      EXPECT_GT(total.windowed_hits, 0);
    }
  } else {
    EXPECT_EQ(total.released_blocks, 0);
    EXPECT_EQ(total.windowed_hits, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Pools, KvCacheRandomizedTest,
    ::testing::Values(Scenario{24, 4, 0, true}, Scenario{64, 16, 2, true}, Scenario{16, 1, 1, true},
                      Scenario{40, 3, 1, true}, Scenario{24, 4, 0, false},
                      Scenario{200, 8, 4, true}, Scenario{24, 4, 0, true, 6},
                      Scenario{16, 1, 1, true, 3}, Scenario{40, 3, 1, true, 10},
                      Scenario{24, 4, 0, false, 5}, Scenario{64, 16, 2, true, 16},
                      // Layer groups: full-attention and windowed tables from one pool.
                      Scenario{48, 4, 0, true, 0, {0, 6}},
                      Scenario{64, 3, 2, true, 0, {0, 0, 7, 7}},
                      Scenario{40, 1, 1, true, 0, {2, 0, 5}}, Scenario{48, 4, 0, false, 0, {0, 6}},
                      Scenario{128, 8, 4, true, 0, {0, 0}}),
    [](const ::testing::TestParamInfo<Scenario>& param_info) {
      const Scenario& sc = param_info.param;
      return absl::StrCat(
          "blocks", sc.num_blocks, "_bs", sc.block_size, "_wm", sc.watermark,
          sc.caching ? "_cached" : "_nocache",
          sc.window > 0 ? absl::StrCat("_window", sc.window) : "",
          sc.groups.empty() ? "" : absl::StrCat("_groups", absl::StrJoin(sc.groups, "x")));
    });

}  // namespace
}  // namespace headroom::kvcache
