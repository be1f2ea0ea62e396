// Package envy stands in for github.com/jamiealquiza/envy, which the Go module proxy does not
// serve: topicmappr calls it only to read flags from TOPICMAPPR_* variables, and the benchmark
// passes every flag on the command line.
package envy

import "github.com/spf13/cobra"

// CobraConfig has the fields topicmappr sets.
type CobraConfig struct {
	Prefix     string
	Persistent bool
	Recursive  bool
}

// ParseCobra reads no environment.
func ParseCobra(_ *cobra.Command, _ CobraConfig) {}
