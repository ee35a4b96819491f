# Production images of paywatch, from one build:
#   - the default target, "paywatch" (paywatch:latest in docker-compose.yml):
#     the api and worker roles against a Temporal server, built without the
#     embedded Temporal server (-tags noembed), about 30 MB;
#   - the "temporal" target (paywatch-temporal:latest): the full binary, which
#     links the Temporal server, running `paywatch temporal serve`, the
#     single-node Temporal server on PostgreSQL of docker-compose.yml and of
#     `make test-cluster`. Its first build links the server: about 10 minutes
#     on 2 cores.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
ENV GOTOOLCHAIN=local CGO_ENABLED=0
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=docker
RUN go build -trimpath -tags noembed -ldflags "-s -w -X main.version=${VERSION}" -o /out/paywatch ./cmd/paywatch

# The full build, made only for the temporal target.
FROM build AS build-temporal
ARG VERSION=docker
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/paywatch-temporal ./cmd/paywatch

FROM gcr.io/distroless/static-debian12:nonroot AS temporal
COPY --from=build-temporal /out/paywatch-temporal /usr/local/bin/paywatch
USER nonroot:nonroot
EXPOSE 7233 8233 8000
ENTRYPOINT ["/usr/local/bin/paywatch"]
CMD ["temporal", "serve"]

FROM gcr.io/distroless/static-debian12:nonroot AS paywatch
COPY --from=build /out/paywatch /usr/local/bin/paywatch
USER nonroot:nonroot
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/paywatch"]
CMD ["serve"]
