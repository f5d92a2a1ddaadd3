#!/bin/bash
# run-tests.sh FLAVOUR: boot FLAVOUR's kernel in test mode and report.
set -euo pipefail
. "$(dirname "$0")/common.sh"

flavour=${1:-ksm}
logs=${LOGS:-$BUILD/logs/$flavour-test}
start=$(date +%s)
LOGS=$logs "$TOP/scripts/boot.sh" "$flavour" test
echo "guest run: $(($(date +%s) - start)) s wall, logs in $logs" >&2
# Our extensions are absent on stock: their skips there are no failure.
if [ "$flavour" = stock ]; then
	export EXPECTED_SKIPS=$TOP/tests/skips-stock
fi
exec "$TOP/scripts/ktap.sh" "$logs"
