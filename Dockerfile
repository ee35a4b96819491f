# Production image of paywatch: the api and worker roles against a real
# Temporal cluster. Built without the embedded Temporal server (-tags noembed),
# which keeps the binary near 30 MB instead of about 220 MB.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
ENV GOTOOLCHAIN=local CGO_ENABLED=0
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=docker
RUN go build -trimpath -tags noembed -ldflags "-s -w -X main.version=${VERSION}" -o /out/paywatch ./cmd/paywatch

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/paywatch /usr/local/bin/paywatch
USER nonroot:nonroot
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/paywatch"]
CMD ["serve"]
