# The k3 image: `k3 serve` (and every other k3 command) on Debian 12, built with the same scripts the
# README uses. Multi-arch (linux/amd64 + linux/arm64, e.g. Grace hosts) through buildx:
#   docker buildx build --platform linux/amd64,linux/arm64 -t REGISTRY/k3:VERSION --push .
# docs/deploy.md shows pushing it to ECR / ACR / Artifact Registry / Alibaba ACR and rendering with it
# (k3 render --engine k3 --image REGISTRY/k3:VERSION).

# Build stage: toolchain + libraries from Debian (scripts/install-deps.sh --build), then the k3 binary
# only (no tests, no benchmarks). Kernels pick their SIMD target at run time (Highway dynamic dispatch),
# so one image per architecture runs on every CPU of that architecture.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN scripts/install-deps.sh --build && rm -rf /var/lib/apt/lists/*
COPY . .
RUN K3_TARGETS=k3 scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DK3_BUILD_TESTS=OFF \
      -DK3_BUILD_BENCH=OFF \
    && install -m 0755 build/k3 /usr/local/bin/k3

# Runtime stage: the shared libraries k3 links (scripts/install-deps.sh --runtime) and the binary.
FROM debian:12-slim
COPY scripts/install-deps.sh /tmp/install-deps.sh
RUN /tmp/install-deps.sh --runtime && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh \
    && useradd --create-home --uid 1000 k3
COPY --from=build /usr/local/bin/k3 /usr/local/bin/k3
USER k3
EXPOSE 8000
# With no --model, k3 serve generates and serves its small embedded K3-architecture model.
ENTRYPOINT ["k3"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
