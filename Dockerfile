# strait's container image for those who build with Docker (or BuildKit, podman build):
#   docker build -t strait:0.1.0 .
# The same image as scripts/image.sh, which writes it without a container engine (docs/image.md):
# a static binary (musl) from scratch, the same files, user, entry point and labels. Keep both
# in step. linux/amd64 only, as the script.

FROM docker.io/library/rust:1.95-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
# Without the gssapi feature (MIT krb5 has no static build: docs/image.md); no debug info,
# symbols stripped.
ENV CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=symbols
RUN cargo build --release --locked --target x86_64-unknown-linux-musl \
      --no-default-features --features cli,aws-msk-iam --bin strait \
 && mkdir -p /rootfs/etc/ssl/certs /rootfs/etc/strait /rootfs/tmp \
 && chmod 1777 /rootfs/tmp \
 && cp deploy/image/rootfs/etc/group deploy/image/rootfs/etc/hosts \
       deploy/image/rootfs/etc/nsswitch.conf deploy/image/rootfs/etc/passwd /rootfs/etc/ \
 && chmod 0644 /rootfs/etc/group /rootfs/etc/hosts /rootfs/etc/nsswitch.conf /rootfs/etc/passwd \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && install -m 0755 target/x86_64-unknown-linux-musl/release/strait /rootfs/strait

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
ENV PATH=/ SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
WORKDIR /
EXPOSE 8083
LABEL org.opencontainers.image.title="strait" \
      org.opencontainers.image.description="Kafka cross-cluster replicator that forwards record batches byte-for-byte" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["/strait"]
CMD ["run", "--config", "/etc/strait/strait.toml"]
