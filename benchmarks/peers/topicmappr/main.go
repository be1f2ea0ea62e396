// Command topicmappr-snapshot runs topicmappr's placement on a kafka-rebalance snapshot; see
// build.sh and benchmarks/README.md.
package main

import (
	"fmt"
	"os"

	"github.com/DataDog/kafka-kit/v4/cmd/topicmappr/commands"
)

func main() {
	if err := commands.RunOnSnapshot(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "topicmappr-snapshot:", err)
		os.Exit(2)
	}
}
