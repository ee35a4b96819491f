package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/paywatch/paywatch/metrics"
	"github.com/paywatch/paywatch/store"
)

// printStartup prints the start-up block of operations.md §1.
func (m *Main) printStartup() {
	var b strings.Builder
	fmt.Fprintf(&b, "\npaywatch %s is running (dev)\n", version)
	fmt.Fprintf(&b, "  API          %s\n", m.Config.BaseURL)
	fmt.Fprintf(&b, "  Pay pages    %s\n", m.Config.PayURL)
	if m.embedded != nil && m.embedded.UIAddr() != "" {
		fmt.Fprintf(&b, "  Temporal UI  http://%s\n", m.embedded.UIAddr())
	} else {
		fmt.Fprintf(&b, "  Temporal     %s\n", temporalWhere(m.Config, m.temporalAddr()))
	}
	fmt.Fprintf(&b, "  Master key   %s\n", m.Config.MasterKey)
	if m.metricsAddr != "" {
		fmt.Fprintf(&b, "  Metrics      http://%s%s\n", m.metricsAddr, metrics.Path)
	}
	fmt.Fprintf(&b, "  Database     %s\n", store.Redact(m.Config.DatabaseURL))
	if m.chains != nil {
		for _, l := range m.chains.StartupLines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	fmt.Fprintln(&b)
	_, _ = io.WriteString(m.stdout, b.String())
}
