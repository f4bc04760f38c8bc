# syntax=docker/dockerfile:1
# One image for every Switchboard service. Development machines here have no Docker
# engine, so this file is not built in CI; the binary it packages is.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p switchboard \
 && cp target/release/switchboard /switchboard
RUN /switchboard --version

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /switchboard /switchboard
ENV SWITCHBOARD_LISTEN=0.0.0.0:8080 \
    SWITCHBOARD_DATA_DIR=/data
EXPOSE 8080
VOLUME /data
HEALTHCHECK --interval=10s --timeout=3s CMD ["/switchboard", "health", "127.0.0.1:8080"]
ENTRYPOINT ["/switchboard"]
CMD ["serve"]
