package devtemporal

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"time"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
)

// TLSOptions serves the frontend and the Web UI over TLS.
type TLSOptions struct {
	// CertFile and KeyFile are the PEM server certificate (with any
	// intermediates after it) and its private key.
	CertFile, KeyFile string
	// ClientCAFile, when set, is a PEM bundle of the CAs whose client
	// certificates the frontend and the Web UI accept: mutual TLS, where a
	// client without such a certificate is refused at the handshake.
	ClientCAFile string
}

// serverTLS is TLSOptions read and checked.
type serverTLS struct {
	opts TLSOptions
	cert tls.Certificate
	// clientCAs is nil without a ClientCAFile.
	clientCAs *x509.CertPool
}

// load reads and checks the files, so that a bad one is an error from
// Start rather than a fatal log from the server, which exits the process.
func (o *TLSOptions) load() (*serverTLS, error) {
	if o.CertFile == "" || o.KeyFile == "" {
		return nil, errors.New("TLS needs both a certificate and a key file")
	}
	cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s and key %s: %w", o.CertFile, o.KeyFile, err)
	}
	s := &serverTLS{opts: *o, cert: cert}
	if o.ClientCAFile != "" {
		pem, err := os.ReadFile(o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("TLS client CA: %w", err)
		}
		s.clientCAs = x509.NewCertPool()
		if !s.clientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS client CA %s holds no PEM certificate", o.ClientCAFile)
		}
	}
	return s, nil
}

// rootTLS is the server's TLS settings: TLS on the public frontend only.
// The other services, and the internal frontend the server's own clients
// use, listen on loopback in plain text, as without TLS (Start).
func (s *serverTLS) rootTLS() config.RootTLS {
	server := config.ServerTLS{CertFile: s.opts.CertFile, KeyFile: s.opts.KeyFile}
	if s.clientCAs != nil {
		server.ClientCAFiles = []string{s.opts.ClientCAFile}
		server.RequireClientAuth = true
	}
	return config.RootTLS{Frontend: config.GroupTLS{Server: server}}
}

// config is the Web UI's TLS listener configuration.
func (s *serverTLS) config() *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{s.cert}}
	if s.clientCAs != nil {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = s.clientCAs
	}
	return c
}

// uiFront serves the Web UI over TLS at addr: ui-server listens on
// loopback in plain HTTP (at backend), and this server terminates TLS in
// front of it, asking for a client certificate when a client CA is set.
// ui-server can serve TLS itself (uiServerTLS), but never asks for client
// certificates, which would leave the UI a way around mutual TLS.
func (s *serverTLS) uiFront(addr, backend string, logger log.Logger) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("Web UI listener: %w", err)
	}
	target := &url.URL{Scheme: "http", Host: backend}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
		r.SetXForwarded()
	}}
	srv := &http.Server{Handler: proxy, TLSConfig: s.config(), ReadHeaderTimeout: 10 * time.Second,
		// Refused handshakes go to the server's log, at its level.
		ErrorLog: stdlog.New(logWriter{logger}, "", 0)}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	return srv, nil
}

// logWriter writes the Web UI front's error log lines, such as refused
// handshakes, as warnings of the server's logger.
type logWriter struct{ logger log.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.logger.Warn("Web UI: " + strings.TrimSpace(string(p)))
	return len(p), nil
}
