#!/usr/bin/env bash
# How long a cheap HTTP request waits while other clients send expensive ones: GET /health
# latency (p50 / p90 / max of 40 requests, 50 ms apart) while 4 clients keep POSTing 1 MiB
# /tokenize bodies to a router using the llama2 fixture tokenizer (SentencePiece-style BPE, the
# slow encode path). The HTTP server's two event threads serve every connection, so whatever
# runs on them (parsing, tokenizing) delays every other request and every open token stream.
#
# Usage: bench/http_stall.sh   (after scripts/test or a build of build/main; needs curl, python3)
# Loopback only. The router's workers are unreachable: /tokenize and /health need none.
set -euo pipefail
cd "$(dirname "$0")/.."
headroom=build/main/cli/headroom
port=${PORT:-18200}
body=$(mktemp)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -f "$body"' EXIT

python3 - "$body" <<'PY'
import json, random, sys
random.seed(1)
words = "the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing".split()
text = " ".join(random.choice(words) for _ in range(200000))[: (1 << 20) - 64]
open(sys.argv[1], "w").write(json.dumps({"prompt": text}))
PY

"$headroom" router --grpc-port 0 --http-port "$port" --workers 127.0.0.1:1 \
  --tokenizer tests/router/tokenizer/fixtures/llama2 >/dev/null 2>&1 &
for _ in $(seq 1 100); do curl -s -o /dev/null "localhost:$port/health" && break; sleep 0.05; done

for _ in 1 2 3 4; do
  (while true; do
    curl -s -o /dev/null "localhost:$port/tokenize" -H 'content-type: application/json' \
      --data-binary "@$body" || true
  done) &
done
sleep 1
for _ in $(seq 1 40); do
  curl -s -o /dev/null -w "%{time_total}\n" "localhost:$port/health"
  sleep 0.05
done | sort -n | awk '{a[NR] = $1 * 1000}
  END {printf "GET /health under load: p50 %.1f ms, p90 %.1f ms, max %.1f ms\n",
       a[int(NR * 0.5)], a[int(NR * 0.9)], a[NR]}'
