# syntax=docker/dockerfile:1
# One image for the router and the worker groups: entrypoint `headroom`, subcommands
# `router` and `worker` (see helm/headroom and docs/kubernetes.md).
#
#   docker build -t ghcr.io/headroom/headroom:0.1.0 .
#
# Stage 1 builds on the CUDA devel image with the same Debian/Ubuntu packages scripts/setup-deps
# installs (minus the test-only ones), stage 2 runs on the matching CUDA runtime image as a
# non-root user. The build has not been run in this repository's CI (no container engine there);
# docs/kubernetes.md says so.
ARG CUDA_VERSION=13.0.1
ARG UBUNTU_VERSION=24.04

FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu${UBUNTU_VERSION} AS build
ARG DEBIAN_FRONTEND=noninteractive
ARG CUDA_ARCHITECTURES=90a
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config git python3 ca-certificates \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev \
      libgtest-dev libgmock-dev libbenchmark-dev libxxhash-dev nlohmann-json3-dev \
      libre2-dev libutf8proc-dev libopenblas-dev libboost-dev libgloo-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DHEADROOM_CUDA=ON -DHEADROOM_BENCH=OFF \
      -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
 && cmake --build /build --target headroom -j"$(nproc)"
# Collect the binary and the shared libraries it links that the runtime image lacks (gRPC,
# Protobuf, Abseil, RE2, utf8proc, xxHash, OpenBLAS, ...). Left out: glibc, which the runtime base
# has, and the NVIDIA driver libraries, which the NVIDIA container runtime mounts in.
RUN set -eux; \
    mkdir -p /out/bin /out/lib; \
    bin=$(find /build -type f -name headroom -perm -u+x | head -n1); \
    cp "$bin" /out/bin/headroom; \
    ldd /out/bin/headroom | awk '/=> \// {print $3}' \
      | grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so|/libcuda\.so|/libnvidia-' \
      | xargs -r -I{} cp -L {} /out/lib/

FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu${UBUNTU_VERSION} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 headroom \
 && useradd --system --uid 10001 --gid headroom --home-dir /home/headroom --create-home \
      --shell /usr/sbin/nologin headroom \
 && mkdir -p /models /etc/headroom \
 && chown headroom:headroom /models
COPY --from=build /out/lib/ /opt/headroom/lib/
COPY --from=build /out/bin/headroom /usr/local/bin/headroom
ENV LD_LIBRARY_PATH=/opt/headroom/lib:${LD_LIBRARY_PATH} \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
# Router: 8000 HTTP, 50051 gRPC. Worker group: 50061 gRPC, 9100 metrics.
EXPOSE 8000 50051 50061 9100
USER 10001:10001
WORKDIR /home/headroom
ENTRYPOINT ["headroom"]
CMD ["--help"]
