#!/usr/bin/env bash
# Build topicmappr-snapshot: DataDog kafka-kit's topicmappr planning code, driven from a
# kafka-rebalance snapshot. kafka-kit is not served by the Go module proxy, so this needs a
# checkout of it (any commit with the v4 module layout):
#
#   bash benchmarks/peers/topicmappr/build.sh /path/to/kafka-kit [OUT]
#
# It copies kafka-kit's mapper, kafkaadmin, kafkazk and cmd/topicmappr packages into a
# scratch module, adds this directory's driver (commands/zz_snapshot.go, main.go) and a
# stand-in for the envy package, and builds OUT (default: .peers/topicmappr-snapshot).
# confluent-kafka-go (a cgo build with its bundled librdkafka) and cobra come from the proxy,
# at the versions kafka-kit's go.mod names.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="${1:?give the path of a kafka-kit checkout}"
out="$(realpath -m "${2:-$here/../../../.peers/topicmappr-snapshot}")"
work="$(mktemp -d -t topicmappr-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/kit/cmd" "$work/envy" "$work/kit/cmd/topicmappr-snapshot"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$src" archive HEAD mapper kafkaadmin kafkazk cmd/topicmappr | tar -x -C "$work/kit"
    echo "kafka-kit $(git -C "$src" rev-parse --short HEAD)"
else
    cp -r "$src/mapper" "$src/kafkaadmin" "$src/kafkazk" "$work/kit/"
    cp -r "$src/cmd/topicmappr" "$work/kit/cmd/"
fi
cp "$here/commands/zz_snapshot.go" "$work/kit/cmd/topicmappr/commands/"
cp "$here/main.go" "$work/kit/cmd/topicmappr-snapshot/"
cp "$here/envy.go" "$work/envy/"

cd "$work/envy"
printf 'module github.com/jamiealquiza/envy\n\ngo 1.23\n' > go.mod
go mod tidy
cd "$work/kit"
printf 'module github.com/DataDog/kafka-kit/v4\n\ngo 1.23\n' > go.mod
# The versions kafka-kit's own go.mod names.
go mod edit -require github.com/jamiealquiza/envy@v1.1.0 \
    -replace github.com/jamiealquiza/envy=../envy \
    -require github.com/confluentinc/confluent-kafka-go@v1.4.0 \
    -require github.com/spf13/cobra@v1.5.0 -require github.com/go-zookeeper/zk@v1.0.3
go mod tidy
mkdir -p "$(dirname "$out")"
go build -o "$out" ./cmd/topicmappr-snapshot
echo "built $out"
