#!/usr/bin/env bash
# The GPU checks in one call (issue "GPU at its limit"): the CUDA tests of the captured windows (and of the
# Tree-LSTMs' captured level loops), then the language models' throughput against the official code ($CONFIGS:
# which benchmark entries), the Tree-LSTM's on SICK (exact, padded and captured levels against one node at a time;
# it needs SICK under $TREENETS_DATA, else shared/data of the checkout, which travels to a device machine: copy
# ../shared/data/sick there), then the rest of tests/test_cuda.py. Each part has its own time limit, so that one
# that hangs leaves the others their turn. Logs go to $OUT (or runs/cuda-check).
#
#   bash benchmarks/cuda_check.sh [OFFICIAL]     # OFFICIAL: a folder with onlstm/ and prpn/, the official code's
#                                                 # files (benchmarks/official.py); its columns are skipped without it
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${OUT:-runs/cuda-check}")
official=${1:+$(realpath "$1")}
mkdir -p "$out"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 - <<'EOF' 2>&1 | tee "$out/versions.txt"
import subprocess, torch, triton
print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__,
      "device", torch.cuda.get_device_name(0))
print(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip())
EOF
part() {  # part NAME SECONDS COMMAND...: one part, its log in $out/NAME.log, its status on one line
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc in $((SECONDS - start)) s"
  tail -n "${TAIL:-25}" "$out/$name.log"
}
part captured-tests 180 python3 -m pytest -q -p no:cacheprovider --disable-warnings tests/test_graphs.py tests/test_cuda.py \
  -k "captured or captures or graphs or replay or cannot_hold"
args=(--device cuda --backends auto compile torch --precisions fp32 --steps 5 --threads 8)
if [ -n "$official" ]; then
  args+=(--official-onlstm "$official/onlstm" --official-prpn "$official/prpn")
fi
for config in ${CONFIGS:-onlstm-paper prpn-paper lstm-paper}; do  # about a minute each on an H200
  (cd benchmarks && part "$config" 150 python3 lm_throughput.py --configs "$config" "${args[@]}")
done
data=${TREENETS_DATA:-$PWD/shared/data}
if [ -d "$data/sick" ]; then
  export TREENETS_DATA=$data
  part treelstm 150 python3 benchmarks/treelstm_throughput.py --device cuda --pairs 300 --threads 8 --no-epochs
else
  echo "== treelstm: skipped, no SICK in $data (copy ../shared/data/sick to shared/data/sick)"
fi
TAIL=12 part other-cuda-tests 150 python3 -m pytest -q -p no:cacheprovider --disable-warnings tests/test_cuda.py \
  -k "not (captured or captures or replay or cannot_hold)"
