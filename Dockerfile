# syntax=docker/dockerfile:1
# celhook image: build with the same command as the README, run as non-root.
#   docker build -t celhook:dev .                   # the name the dev overlay deploys
#   docker run --rm -p 8443:8443 celhook            # embedded examples, generated certificate
#   docker run --rm -p 8443:8443 -v $PWD/crds:/config:ro -v $PWD/tls:/tls:ro celhook \
#       --config /config --tls-cert /tls/tls.crt --tls-key /tls/tls.key

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
# rust:*-slim already has gcc and libc6-dev, which ring's C and assembly need.
COPY . .
# Cache mounts keep the registry and compiled dependencies between builds;
# the binary is copied out because the target cache is not part of the layer.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p celhook \
    && install -D -m 0755 target/release/celhook /out/celhook

# glibc and libgcc, nothing else; runs as uid/gid 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
LABEL org.opencontainers.image.title="celhook" \
      org.opencontainers.image.description="Kubernetes validating and conversion webhook for CRD x-kubernetes-validations (CEL)" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/celhook/celhook"
COPY --from=build /out/celhook /usr/local/bin/celhook
USER 65532:65532
# The TLS listener (--listen 0.0.0.0:8443); the Service maps 443 to it.
EXPOSE 8443
# Plain-HTTP metrics when run with --metrics-listen 0.0.0.0:9090 (as the manifests do).
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/celhook", "serve"]
