package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	sdklog "go.temporal.io/sdk/log"
)

// TemporalConnection is how a process reaches an external Temporal server
// besides its address and namespace (Config.TemporalAddress and
// TemporalNamespace): API key, TLS, gRPC headers. It is read as the
// Temporal CLI reads it (go.temporal.io/sdk/contrib/envconfig): a profile
// of the CLI's temporal.toml, then the TEMPORAL_* variables over it, so an
// operator's `temporal` setup works unchanged. It prints, and logs, without
// its secrets: the API key and key material stay in an unexported field.
type TemporalConnection struct {
	// Profile is the temporal.toml profile read, empty when none was.
	Profile string
	// File is the temporal.toml looked at (TEMPORAL_CONFIG_FILE or the
	// CLI's default), empty when none was.
	File string

	profile envconfig.ClientConfigProfile
	// fromEnv holds the TEMPORAL_* variables that were set, so that an
	// error names the variable, or else the profile's key.
	fromEnv map[string]bool
	// fileRead says File was read.
	fileRead bool
	// err is why the profile could not be read; Validate reports it, so
	// that the commands that do not connect to Temporal still run.
	err error
}

// temporalEnv is the envconfig.EnvLookup over a getenv function, so the
// configuration is read from what LoadConfig is given (tests pass maps).
// As everywhere in Config, an empty value is an unset one.
type temporalEnv func(string) string

func (e temporalEnv) LookupEnv(key string) (string, bool) {
	v := strings.TrimSpace(e(key))
	return v, v != ""
}

// Environ lists the TEMPORAL_GRPC_META_<HEADER> variables, the only ones
// envconfig enumerates: their names come from the process environment,
// their values from getenv.
func (e temporalEnv) Environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if v, ok := e.LookupEnv(name); ok && strings.HasPrefix(name, "TEMPORAL_GRPC_META_") {
			out = append(out, name+"="+v)
		}
	}
	return out
}

// temporalConnectionVars are the variables envconfig reads, for naming
// where a setting came from.
var temporalConnectionVars = []string{
	"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_TLS",
	"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
	"TEMPORAL_TLS_CLIENT_CERT_DATA", "TEMPORAL_TLS_CLIENT_KEY_DATA", "TEMPORAL_TLS_SERVER_CA_CERT_DATA",
	"TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION", "TEMPORAL_CLIENT_AUTHORITY",
}

// loadTemporalConnection reads the connection to Temporal: the profile
// TEMPORAL_PROFILE names ("default" when unset) of the temporal.toml
// TEMPORAL_CONFIG_FILE names (the CLI's default file when unset), then
// the TEMPORAL_* variables over it. paywatch dev reads a file only when
// one of the two is set: a developer's CLI profile pointing at a shared
// server must not take the place of dev's embedded one.
func loadTemporalConnection(mode Mode, getenv func(string) string) TemporalConnection {
	env := temporalEnv(getenv)
	t := TemporalConnection{fromEnv: map[string]bool{}}
	for _, v := range temporalConnectionVars {
		_, t.fromEnv[v] = env.LookupEnv(v)
	}
	file, explicitFile := env.LookupEnv("TEMPORAL_CONFIG_FILE")
	name, explicitProfile := env.LookupEnv("TEMPORAL_PROFILE")
	if !explicitFile && (mode != ModeDev || explicitProfile) {
		file = defaultTemporalConfigFile(getenv)
	}
	if !explicitProfile {
		name = envconfig.DefaultConfigFileProfile
	}
	t.File = file
	fileVar := "TEMPORAL_CONFIG_FILE"
	if !explicitFile {
		fileVar = "the Temporal CLI's config file (TEMPORAL_CONFIG_FILE's default)"
	}
	var conf envconfig.ClientConfig
	var data []byte
	var err error
	if file != "" {
		data, err = os.ReadFile(file)
	}
	switch {
	case file == "" && explicitProfile:
		t.err = errors.New("TEMPORAL_PROFILE: no Temporal config file to read it from: set TEMPORAL_CONFIG_FILE")
	case file == "":
	case errors.Is(err, fs.ErrNotExist) && !explicitFile:
		if explicitProfile {
			t.err = fmt.Errorf("TEMPORAL_PROFILE: no profile %q: there is no file %s (%s)", name, file, fileVar)
		}
	case err != nil:
		t.err = fmt.Errorf("%s: cannot read %s: %w", fileVar, file, unwrapPath(err))
	default:
		t.fileRead = true
		if err := conf.FromTOML(data, envconfig.ClientConfigFromTOMLOptions{}); err != nil {
			t.err = fmt.Errorf("%s %s: %s", fileVar, file, tomlProblem(err))
		} else if p := conf.Profiles[name]; p != nil {
			t.Profile, t.profile = name, *p
		} else if explicitProfile {
			t.err = fmt.Errorf("TEMPORAL_PROFILE: no profile %q in %s (it has: %s)", name, file, profileNames(conf))
		}
	}
	// The variables override the profile, as in the Temporal CLI; it only
	// fails on a nil lookup, which env is not.
	_ = t.profile.ApplyEnvVars(env)
	return t
}

// defaultTemporalConfigFile is envconfig.DefaultConfigFilePath, the
// Temporal CLI's config file in the user's config directory
// (os.UserConfigDir), found from getenv rather than the process
// environment; empty when getenv names no home.
func defaultTemporalConfigFile(getenv func(string) string) string {
	var dir string
	switch runtime.GOOS {
	case "windows":
		dir = getenv("AppData")
	case "darwin", "ios":
		if home := getenv("HOME"); home != "" {
			dir = filepath.Join(home, "Library", "Application Support")
		}
	default:
		if dir = getenv("XDG_CONFIG_HOME"); !filepath.IsAbs(dir) {
			dir = ""
			if home := getenv("HOME"); home != "" {
				dir = filepath.Join(home, ".config")
			}
		}
	}
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "temporalio", "temporal.toml")
}

// tomlProblem describes a TOML syntax error by its place, never with the
// parser's message, which quotes the text it stumbled on: an API key's.
func tomlProblem(err error) string {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		// A value of the wrong type, named by its type only.
		return "not a Temporal config file: " + err.Error()
	}
	s := fmt.Sprintf("not valid TOML at line %d, column %d", pe.Position.Line, pe.Position.Col)
	if pe.LastKey != "" {
		s += fmt.Sprintf(" (after key %s)", pe.LastKey)
	}
	return s
}

// profileNames lists a config file's profiles, for an unknown one.
func profileNames(conf envconfig.ClientConfig) string {
	if len(conf.Profiles) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(conf.Profiles)), ", ")
}

// unwrapPath drops the "open <path>: " of a file error whose path the
// message already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// origin names where a setting came from: its variable when set, else
// the key in the profile.
func (t TemporalConnection) origin(variable, key string) string {
	if t.fromEnv[variable] || t.Profile == "" {
		return variable
	}
	return fmt.Sprintf("%s of profile %q in %s", key, t.Profile, t.File)
}

// TLS reports whether the connection uses TLS: TEMPORAL_TLS, any TLS
// setting, or an API key turns it on, and TEMPORAL_TLS=false off.
func (t TemporalConnection) TLS() bool {
	if t.profile.TLS != nil {
		return !t.profile.TLS.Disabled
	}
	return t.profile.APIKey != ""
}

// HasAPIKey reports whether an API key is sent.
func (t TemporalConnection) HasAPIKey() bool { return t.profile.APIKey != "" }

// String describes the connection without its secrets.
func (t TemporalConnection) String() string {
	s := "plaintext"
	if t.TLS() {
		s = "TLS"
	}
	if t.HasAPIKey() {
		s += ", API key"
	} else {
		s += ", no API key"
	}
	if t.Profile != "" {
		s += fmt.Sprintf(", profile %q of %s", t.Profile, t.File)
	}
	return s
}

// GoString keeps %#v of a Config free of secrets too.
func (t TemporalConnection) GoString() string { return "TemporalConnection(" + t.String() + ")" }

// profileRead says which profile was read, for a missing address.
func (t TemporalConnection) profileRead() string {
	switch {
	case t.Profile != "":
		return fmt.Sprintf("profile %q of %s has none", t.Profile, t.File)
	case t.fileRead:
		return fmt.Sprintf("%s has no profile %q", t.File, envconfig.DefaultConfigFileProfile)
	case t.File != "":
		return "there is no " + t.File
	}
	return "none read"
}

// checkTLS reports TLS files that cannot be read or used, each named by
// its variable or profile key. It reads the files, but never shows their
// contents.
func (t TemporalConnection) checkTLS() error {
	tls := t.profile.TLS
	if tls == nil || tls.Disabled {
		return nil
	}
	var errs []error
	for _, f := range []struct{ variable, key, path string }{
		{"TEMPORAL_TLS_CLIENT_CERT_PATH", "tls.client_cert_path", tls.ClientCertPath},
		{"TEMPORAL_TLS_CLIENT_KEY_PATH", "tls.client_key_path", tls.ClientKeyPath},
		{"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "tls.server_ca_cert_path", tls.ServerCACertPath},
	} {
		if f.path == "" {
			continue
		}
		file, err := os.Open(f.path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: cannot read %s: %w", t.origin(f.variable, f.key), f.path, unwrapPath(err)))
			continue
		}
		_ = file.Close()
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if _, err := t.profile.ToClientOptions(envconfig.ToClientOptionsRequest{}); err != nil {
		return t.tlsError(err)
	}
	return nil
}

// tlsError names the TLS settings behind an error of envconfig's, which
// names none.
func (t TemporalConnection) tlsError(err error) error {
	var names []string
	for _, f := range [][2]string{
		{"TEMPORAL_TLS_CLIENT_CERT_PATH", "tls.client_cert_path"}, {"TEMPORAL_TLS_CLIENT_KEY_PATH", "tls.client_key_path"},
		{"TEMPORAL_TLS_CLIENT_CERT_DATA", "tls.client_cert_data"}, {"TEMPORAL_TLS_CLIENT_KEY_DATA", "tls.client_key_data"},
		{"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "tls.server_ca_cert_path"}, {"TEMPORAL_TLS_SERVER_CA_CERT_DATA", "tls.server_ca_cert_data"},
	} {
		if t.fromEnv[f[0]] {
			names = append(names, f[0])
		}
	}
	where := strings.Join(names, ", ")
	if t.Profile != "" {
		where = strings.TrimPrefix(where+fmt.Sprintf(", the tls settings of profile %q in %s", t.Profile, t.File), ", ")
	}
	if where == "" {
		where = "TEMPORAL_TLS_*"
	}
	return fmt.Errorf("Temporal TLS (%s): %w", where, err)
}

// temporalClientOptions returns the options of the process's Temporal
// client for the frontend at hostPort. To an external server it connects
// with cfg.Temporal (API key, TLS, gRPC headers: TEMPORAL_* and the
// temporal.toml profile); to the embedded server of paywatch dev, plainly.
// The options carry paywatch's logger and metrics handler; the caller adds
// the data converter.
func temporalClientOptions(cfg Config, hostPort string, logger sdklog.Logger, metrics client.MetricsHandler) (client.Options, error) {
	var opts client.Options
	if !cfg.EmbeddedTemporal() {
		var err error
		if opts, err = cfg.Temporal.profile.ToClientOptions(envconfig.ToClientOptionsRequest{}); err != nil {
			return client.Options{}, cfg.Temporal.tlsError(err)
		}
		if opts.HeadersProvider != nil {
			opts.HeadersProvider = quietHeaders{opts.HeadersProvider}
		}
	}
	opts.HostPort = hostPort
	opts.Namespace = cfg.TemporalNamespace
	opts.Logger = logger
	opts.MetricsHandler = metrics
	return opts, nil
}

// quietHeaders keeps the gRPC headers of a profile (which may carry a
// token) out of a printed client.Options.
type quietHeaders struct {
	headers interface {
		GetHeaders(context.Context) (map[string]string, error)
	}
}

func (q quietHeaders) GetHeaders(ctx context.Context) (map[string]string, error) {
	return q.headers.GetHeaders(ctx)
}

func (quietHeaders) String() string { return "gRPC headers (not shown)" }

// temporalAddr is the Temporal frontend the process connects to: the
// embedded server's, or TEMPORAL_ADDRESS (or the profile's).
func (m *Main) temporalAddr() string {
	if m.embedded != nil {
		return m.embedded.FrontendAddr()
	}
	return m.Config.TemporalAddress
}

// temporalOptions returns the client options for the Temporal frontend at
// addr (TEMPORAL_* and the Temporal CLI profile, paywatch's logger, the
// SDK's metrics on /metrics), and logs where the process connects:
// address, namespace, TLS, and whether an API key is sent, never the key.
func (m *Main) temporalOptions(addr string) (client.Options, error) {
	cfg := m.Config
	sdkLevel := slog.LevelWarn
	if cfg.LogLevel == "debug" {
		sdkLevel = slog.LevelDebug
	}
	logger := sdklog.NewStructuredLogger(slog.New(leveled{m.logger.Handler(), sdkLevel}))
	opts, err := temporalClientOptions(cfg, addr, logger, m.temporalMetrics())
	if err != nil {
		return opts, err
	}
	if cfg.EmbeddedTemporal() {
		if cfg.Temporal.HasAPIKey() || cfg.Temporal.TLS() {
			m.logger.Warn("a Temporal API key or TLS setting is set without a Temporal address: paywatch dev starts its embedded server and connects to it plainly")
		}
		m.logger.Info("connecting to Temporal", "address", addr, "namespace", cfg.TemporalNamespace, "embedded", true)
		return opts, nil
	}
	attrs := []any{"address", addr, "namespace", cfg.TemporalNamespace, "tls", cfg.Temporal.TLS(), "apiKey", cfg.Temporal.HasAPIKey()}
	if cfg.Temporal.Profile != "" {
		attrs = append(attrs, "profile", cfg.Temporal.Profile, "configFile", cfg.Temporal.File)
	}
	m.logger.Info("connecting to Temporal", attrs...)
	return opts, nil
}

// temporalWhere says where a process connects to Temporal, for the dev
// banner and errors: "temporal.example:7233, namespace shop, TLS, API key".
func temporalWhere(cfg Config, addr string) string {
	s := fmt.Sprintf("%s, namespace %s", addr, cfg.TemporalNamespace)
	if cfg.EmbeddedTemporal() {
		return s + ", embedded"
	}
	return s + ", " + cfg.Temporal.String()
}
