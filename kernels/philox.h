// Philox-4x32-10, the counter-based RNG of Salmon, Moraes, Dror and Shaw, "Parallel random numbers:
// as easy as 1, 2, 3" (SC'11), written from the paper's definition:
//   round:  (c0, c1, c2, c3), key (k0, k1)
//           hi0:lo0 = 0xD2511F53 * c0,  hi1:lo1 = 0xCD9E8D57 * c2   (32x32 -> 64-bit products)
//           -> (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
//   key schedule: round r (0-based) uses (k0 + r * 0x9E3779B9, k1 + r * 0xBB67AE85) mod 2^32.
// Ten rounds. Host and device compute the same bits (HEADROOM_HOST_DEVICE).
#pragma once

#include <cstdint>

#include "kernels/host_device.h"

namespace headroom::kernels {

struct Philox4x32Counter {
  uint32_t word[4];
};
struct Philox4x32Key {
  uint32_t word[2];
};

HEADROOM_HOST_DEVICE inline Philox4x32Counter Philox4x32_10(Philox4x32Counter counter,
                                                            Philox4x32Key key) {
  constexpr uint32_t kMultiplier0 = 0xD2511F53u;
  constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u;
  constexpr uint32_t kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t product0 = uint64_t{kMultiplier0} * counter.word[0];
    const uint64_t product1 = uint64_t{kMultiplier1} * counter.word[2];
    const uint32_t hi0 = static_cast<uint32_t>(product0 >> 32);
    const uint32_t lo0 = static_cast<uint32_t>(product0);
    const uint32_t hi1 = static_cast<uint32_t>(product1 >> 32);
    const uint32_t lo1 = static_cast<uint32_t>(product1);
    counter = Philox4x32Counter{{hi1 ^ counter.word[1] ^ key.word[0], lo1,
                                 hi0 ^ counter.word[3] ^ key.word[1], lo0}};
    key.word[0] += kWeyl0;
    key.word[1] += kWeyl1;
  }
  return counter;
}

// The sampler's uniform draw: Philox-4x32-10 with key = (seed low 32 bits, seed high 32 bits) and
// counter = (index low 32, index high 32, 0, 0); the first two output words form a 64-bit integer
// (word 1 high) whose top 53 bits give u in [0, 1) with spacing 2^-53.
HEADROOM_HOST_DEVICE inline double PhiloxUniform(uint64_t seed, uint64_t index) {
  const Philox4x32Counter out = Philox4x32_10(
      Philox4x32Counter{{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0u, 0u}},
      Philox4x32Key{{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}});
  const uint64_t bits = (uint64_t{out.word[1]} << 32) | out.word[0];
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace headroom::kernels
