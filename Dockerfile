# syntax=docker/dockerfile:1
# Build: a static, cgo-free binary (the same command `make build` and the
# tests run).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The context has no .git: the commit comes as a build argument, e.g.
#   docker build --build-arg VERSION=$(git describe --tags) --build-arg REVISION=$(git rev-parse HEAD) .
ARG VERSION=""
ARG REVISION=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" -o /out/sweeper ./cmd/sweeper

# Run: no shell, no package manager, a non-root user. Configuration and
# secrets come from the environment or mounted files:
#   SWEEPER_CONFIG=/etc/sweeper/sweeper.toml  (mount it)
#   SWEEPER_DATABASE_URL, SLACK_BOT_TOKEN, … or their *_FILE variants
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sweeper /usr/local/bin/sweeper
COPY config.example.toml /etc/sweeper/config.example.toml
USER nonroot:nonroot
ENV SWEEPER_CONFIG=/etc/sweeper/sweeper.toml
# Listen on every interface, so the Slack endpoint and the health checks are
# reachable from outside the container; the environment overrides the
# mounted file's http.listen (whose default is loopback only).
ENV SWEEPER_HTTP_LISTEN=0.0.0.0:8080
# Run `sweeper migrate` once per release (a job or an init container); every
# replica then runs `sweeper run`. deploy/ has a compose file, a systemd unit
# and Kubernetes manifests that do so.
EXPOSE 8080
# `sweeper healthcheck` asks /healthz over loopback when the daemon listens
# on 0.0.0.0.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["/usr/local/bin/sweeper", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/sweeper"]
CMD ["run"]
