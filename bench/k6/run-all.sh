#!/bin/sh
# Entry point of the compose `k6` service: runs every scenario script in this
# directory (or only those named as arguments, e.g. `history-hit`) against
# BASE_URL, one after another, and exits non-zero when any threshold failed.
set -u
cd "$(dirname "$0")"
status=0
if [ "$#" -eq 0 ]; then set -- *.ts; fi
for script in "$@"; do
  script="${script%.ts}.ts"
  echo "== k6 run ${script} (BASE_URL=${BASE_URL:-http://localhost:3000})"
  k6 run "$script" || status=1
done
exit "$status"
