#!/usr/bin/env bash
# The test suite (tests/nn by default) on 64-bit ARM without an ARM machine, on a Debian x86-64 one: an ARM Python and
# torch's ARM CPU wheel run in qemu's user-mode emulator, and the kernels are built for ARM (NEON) by a cross compiler
# that torch's extension loader calls from inside the emulated Python. Slow: tests/nn took 10 minutes on a 2-core
# AMD EPYC (2026-11-26).
#
#   make test-arm                      # tests/nn, but for the torch.compile tests
#   bash tests/arm/run.sh tests/nn/test_prpn.py -k kernels
#
# Needs, once (root): apt-get install g++-aarch64-linux-gnu qemu-user; dpkg --add-architecture arm64; apt-get update.
# Fills build/arm (1.1 GB once unpacked): Debian's ARM Python 3.11 and its libraries, unpacked (not installed), and
# from PyPI torch $ARM_TORCH (the newest ARM wheel there without CUDA) with the tests' dependencies. Tests that start
# Python in a subprocess also need the emulator registered with the kernel (binfmt_misc); without it they fail with
# "Exec format error".
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
ARM=$ROOT/build/arm
ARM_TORCH=${ARM_TORCH:-2.9.1}
PIP=${PIP:-$ROOT/.venv/bin/pip}

for tool in aarch64-linux-gnu-g++ qemu-aarch64 ninja; do
  command -v "$tool" >/dev/null || [ -x "$ROOT/.venv/bin/$tool" ] || {
    echo "tests/arm/run.sh: $tool not found (apt-get install g++-aarch64-linux-gnu qemu-user; ninja: make setup)" >&2
    exit 2
  }
done

if [ ! -x "$ARM/root/usr/bin/python3.11" ]; then
  dpkg --print-foreign-architectures | grep -qx arm64 || {
    echo "tests/arm/run.sh: Debian's arm64 packages are not enabled (dpkg --add-architecture arm64; apt-get update)" >&2
    exit 2
  }
  mkdir -p "$ARM/debs"
  (cd "$ARM/debs" && apt-get download -q \
    python3.11-minimal:arm64 libpython3.11-minimal:arm64 libpython3.11-stdlib:arm64 libpython3.11-dev:arm64 \
    libc6:arm64 libgcc-s1:arm64 libstdc++6:arm64 libgomp1:arm64 libexpat1:arm64 zlib1g:arm64 libffi8:arm64 \
    libssl3:arm64 libbz2-1.0:arm64 liblzma5:arm64 libsqlite3-0:arm64 libncursesw6:arm64 libtinfo6:arm64 \
    libreadline8:arm64 libuuid1:arm64 libcrypt1:arm64 libdb5.3:arm64 libnsl2:arm64 libtirpc3:arm64)
  for deb in "$ARM"/debs/*.deb; do dpkg -x "$deb" "$ARM/root"; done
fi

if [ ! -d "$ARM/site/torch" ]; then
  wheels=(--platform manylinux_2_28_aarch64 --platform manylinux2014_aarch64 --only-binary=:all: --python-version 3.11
          --implementation cp --target "$ARM/site" --quiet)
  "$PIP" install "${wheels[@]}" --no-deps "torch==$ARM_TORCH"
  # treenets' dependencies (pyproject.toml, but torch and ninja), the tests', and torch's own
  read -ra needs < <("$ROOT/.venv/bin/python" -c "import tomllib
print(' '.join(d for d in tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']
               if not d.startswith(('torch', 'ninja'))))")
  "$PIP" install "${wheels[@]}" --upgrade "${needs[@]}" pytest hypothesis setuptools typing_extensions sympy \
    networkx jinja2 filelock fsspec
fi

# The emulated Python runs the host's ninja and cross compiler as subprocesses (x86-64 programs run natively): a
# folder with ninja alone on the PATH, so that no other x86-64 program shadows an ARM one.
mkdir -p "$ARM/bin"
ln -sf "$(command -v ninja || echo "$ROOT/.venv/bin/ninja")" "$ARM/bin/ninja"

export QEMU_LD_PREFIX=$ARM/root                      # the ARM loader and libraries, for the emulator
export PYTHONPATH=$ARM/site:$ROOT/src
export CXX=aarch64-linux-gnu-g++
export CPLUS_INCLUDE_PATH=$ARM/root/usr/include      # Python's pyconfig.h for ARM
export TORCH_EXTENSIONS_DIR=$ARM/extensions          # the ARM builds of the kernels, apart from the host's
export PATH=$ARM/bin:$PATH
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || echo "tests/arm/run.sh: the emulator is not registered with the" \
  "kernel: the tests that start Python in a subprocess will fail (as root: mount -t binfmt_misc binfmt_misc" \
  "/proc/sys/fs/binfmt_misc; cat /usr/lib/binfmt.d/qemu-aarch64.conf > /proc/sys/fs/binfmt_misc/register)" >&2
# (the torch.compile tests left out by default: the inductor inside the emulator aborted)
[ $# -gt 0 ] || set -- tests/nn -k "not step_is_compiled_once and not (either_backend and compile)"
exec qemu-aarch64 "$ARM/root/usr/bin/python3.11" -m pytest -p no:cacheprovider --hypothesis-profile emulated "$@"
