// PythonRandom: the draws of CPython's `random` module (a Mersenne Twister, MT19937, seeded as
// random.seed(int) seeds it), for the ones `vllm bench serve` makes on ShareGPT:
// random.seed(seed), random.shuffle(list), random.choice(list). Replaying them makes the same
// --seed sample the same conversations in the same order as vLLM (bench_workload.h).
//
// CPython's seeding: the seed's absolute value, split into 32-bit words (least significant
// first; 0 is one word 0), goes through MT19937's init_by_array. getrandbits(k) for k <= 32 is
// the next 32-bit output shifted right by 32 - k (wider: 32-bit words, least significant first,
// the last one shifted); randbelow(n) draws getrandbits(n.bit_length())
// until the value is below n; shuffle walks i from the end down to 1, swapping x[i] with
// x[randbelow(i + 1)]; choice(x) is x[randbelow(len(x))]. Checked against CPython's own draws
// (tests/cli/fixtures/python_random.json, scripts/gen_python_random_fixtures.py).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace headroom::cli {

class PythonRandom {
 public:
  // random.seed(seed).
  explicit PythonRandom(int64_t seed);

  // random.getrandbits(k), 0 <= k <= 64.
  [[nodiscard]] uint64_t GetRandBits(int k);

  // random._randbelow(n) (CPython's getrandbits path; 0 for n == 0, without a draw).
  [[nodiscard]] uint64_t RandBelow(uint64_t n);

  // random.shuffle(x).
  template <typename T>
  void Shuffle(std::vector<T>& x) {
    for (std::size_t i = x.size(); i-- > 1;) {
      const auto j = static_cast<std::size_t>(RandBelow(i + 1));
      std::swap(x[i], x[j]);
    }
  }

 private:
  static constexpr std::size_t kStateWords = 624;
  uint32_t Next();  // genrand_uint32

  std::array<uint32_t, kStateWords> state_{};
  std::size_t index_ = kStateWords;  // the next output's word; kStateWords: twist first
};

}  // namespace headroom::cli
