// HEADROOM_HOST_DEVICE marks small inline helpers that both the CPU implementations and the CUDA
// kernels call (index arithmetic, the Philox RNG), so host and device compute them identically.
#pragma once

#if defined(__CUDACC__)
#define HEADROOM_HOST_DEVICE __host__ __device__
#else
#define HEADROOM_HOST_DEVICE
#endif
