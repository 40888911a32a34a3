#!/usr/bin/env bash
# Fuzzes the line framer, the command parser, the subject index, the WebSocket frame decoder, the HTTP
# request-head parser, the configuration's YAML reader, the history record reader, the application token
# verifier and the MQTT packet decoder with its topic mapping with libFuzzer (and AddressSanitizer).
#   scripts/fuzz.sh [seconds]        default 60; exits non-zero if the fuzzer finds a crash
# The harness (Fuzz/*.swift) is compiled with the modules' sources into one binary: SwiftPM's
# executable linking clashes with libFuzzer's own main, so swiftc is called directly.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
work=".build/fuzz"
rm -rf "$work/src" "$work/corpus"
mkdir -p "$work/src" "$work/corpus" "$work/artifacts"
# One module: drop the imports between the modules being merged.
# The subject index's own files: all of FanoutSubjects but the CHANNELS listing, which needs swift-collections
# (not on swiftc's path here) and is not fuzzed.
index_files=$(ls Sources/FanoutSubjects/*.swift | grep -v '/PatternListing.swift')
for file in Sources/FanoutProtocol/*.swift Sources/FanoutMulticast/*.swift Sources/FanoutCollections/*.swift \
            Sources/FanoutHTTP/*/*.swift Sources/FanoutConfig/*.swift \
            Sources/FanoutHistoryDisk/CRC32C.swift Sources/FanoutHistoryDisk/HistoryRecord.swift \
            Sources/FanoutHistoryDisk/RecordBytes.swift \
            Sources/FanoutCrypto/*.swift Sources/FanoutTokens/*.swift Sources/FanoutMQTT/*.swift \
            $index_files Fuzz/*.swift; do
    sed -E '/^(public )?import (FanoutProtocol|FanoutMulticast|FanoutCollections|FanoutHTTP|FanoutConfig|FanoutSubjects|FanoutHistoryDisk|FanoutCrypto|FanoutTokens|FanoutMQTT)$/d' "$file" > "$work/src/$(basename "$(dirname "$file")")-$(basename "$file")"
done
rm -f "$work/fuzz-parser"
# The record reader's checksum uses the processor's CRC-32C instruction through this C module.
clang -O2 -fsanitize=address -c Sources/CCRC32C/crc32c.c -I Sources/CCRC32C/include -o "$work/crc32c.o"
# gold warns about every ASan helper symbol it cannot export; those lines say nothing about our code.
swiftc -O -parse-as-library -sanitize=fuzzer,address -module-name FanoutFuzz "$work"/src/*.swift \
    -I Sources/CCRC32C/include "$work/crc32c.o" -I Sources/CCrypto \
    -o "$work/fuzz-parser" 2>&1 | { grep -v "Cannot export local symbol" || true; }
test -x "$work/fuzz-parser"
cp Fuzz/corpus/* "$work/corpus/"
echo "fuzzing for ${seconds}s (seed corpus: Fuzz/corpus; crashes would be saved in $work/artifacts)"
status=0
"$work/fuzz-parser" -max_total_time="$seconds" -max_len=4096 -artifact_prefix="$work/artifacts/" \
    -print_final_stats=1 "$work/corpus" > "$work/log" 2>&1 || status=$?
grep -E "ERROR|SUMMARY|Test unit written|panicked|Fatal error|precondition" "$work/log" || true
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
coverage=$(grep -oE "cov: [0-9]+" "$work/log" | tail -1)
if [ "$status" -ne 0 ]; then
    echo "fuzz: FAILED after ${runs:-?} inputs (exit $status); see $work/log"
    exit 1
fi
echo "fuzz: ${runs:-?} inputs in ${seconds}s, ${coverage:-cov: ?} edges, no crash"
