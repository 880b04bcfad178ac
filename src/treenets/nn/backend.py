"""The one kernel switch: which code runs the recurrences, decided here for every model.

Backends:
    auto  (default) the compiled C++ kernels exactly where they apply: tensors on the CPU, float32 or float64, and a C++
          compiler to build them. Built kernels are always used. Kernels not built yet (for this machine, torch
          installation and sources) are built where they pay off: in training, when autograd records through them
          (1.6-1.9 times the PyTorch code's training speed), in a `long_job` (the evaluations over a data set:
          `treenets eval`, `parse-eval`, `syneval`, `export`), or when asked (`treenets kernels build`:
          `build_kernels`); a build takes about half a minute per kernel (17-30 s on a 2-core AMD EPYC), announced on
          stderr. A parse or prediction of sentences (`parse`, `predict`, `serve`, the predictors' methods) runs the
          PyTorch code until then instead of waiting for a compiler: it answers at once. On a CUDA device in training
          (autograd recording) the language models' steps fused by `torch.compile`, as under `compile`, where Triton is
          installed: 1.6-1.9 times the PyTorch step loop's training speed on an H100 (README, Speed), for a compile time
          paid once per run (printed); the PyTorch code everywhere else (CUDA inference, where a one-off parse would
          wait for the compiler; other dtypes; no compiler). On a CUDA device `treenets train` and `eval` also replay
          the language models' whole windows as CUDA graphs (`treenets.nn.graphs`, under `auto` only): 6.8-12 times the
          official code's speed on an H200 (docs/speed.md).
    torch the PyTorch code only: the specification the kernels are tested against.
    cpp   the kernels wherever they apply, built on first use in inference too, and an error when they
          cannot be built (instead of falling back silently); tensors the kernels do not take (CUDA, other
          dtypes) still run the PyTorch code.
    compile  the PyTorch code with each step of the language models' recurrences (ON-LSTM's gates, cumax and
          cell; a PRPN reading layer's attention and cell) compiled by `torch.compile` into fused kernels:
          Triton on CUDA, C++ on the CPU (Inductor). For GPUs, where the plain PyTorch step launches dozens
          of small kernels. Compiling takes from seconds to a minute on first use and again for a new shape.
          The Tree-LSTMs run their PyTorch code: their levels change size at every step, and compiled for
          any size they trained 20 times slower on an H100 than the PyTorch code (README, Speed).

Where the kernels are built, the same code runs in training and in inference. Both backends draw the same dropout
masks from torch's generator, so a run's numbers do not depend on the backend (to float rounding).

The setting starts from `$TREENETS_BACKEND` (default auto); `set_backend(name)` changes it for the process,
`use_backend(name)` for a `with` block; `treenets train` sets it from `train.backend`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import sys
import sysconfig
import time
import warnings
from pathlib import Path

import torch

from treenets.core.errors import TreenetsError
from treenets.core.files import held_lock
from treenets.core.schema import BACKENDS
from treenets.nn.precision import product_dtype

ENV_VAR = "TREENETS_BACKEND"
MARCH_VAR = "TREENETS_MARCH"  # the x86 CPU the kernels are built for (default native), e.g. x86-64-v3: AVX2
EXTENSIONS_VAR = "TORCH_EXTENSIONS_DIR"  # torch's cache of compiled extensions, where the kernels are built
_SOURCES = Path(__file__).with_name("csrc")  # what every kernel shares (headers), and the packed product alone
_loaded: dict = {}
_failures: dict[str, str] = {}
_compiled: dict = {}
_long_job = False  # inside `long_job`
RECOMPILE_LIMIT = 64  # variants of one compiled step (see `step_function`)


def _checked(name: str, origin: str) -> str:
    if name not in BACKENDS:
        raise TreenetsError(f"{origin}: unknown backend {name!r} (expected one of: {', '.join(BACKENDS)})")
    return name


_backend = _checked(os.environ.get(ENV_VAR) or "auto", f"${ENV_VAR}")


def get_backend() -> str:
    """The current backend: `auto`, `torch` or `cpp`."""
    return _backend


def set_backend(name: str) -> None:
    """Use backend `name` from now on in this process."""
    global _backend
    _backend = _checked(name, "backend")


@contextlib.contextmanager
def use_backend(name: str):
    """Use backend `name` inside a `with` block, then the previous one again."""
    previous = get_backend()
    set_backend(name)
    try:
        yield
    finally:
        set_backend(previous)


def _flags() -> list[str]:
    # -ffast-math lets the compiler call the vectorised exp/tanh of glibc's libmvec; the kernels need no
    # IEEE corner cases (their inputs are finite), and the flag is not passed to the linker, so it does not
    # switch the process to flush-to-zero.
    # On x86 the kernels are built for this CPU, or the one `$TREENETS_MARCH` names (a GCC -march value such as
    # x86-64-v3, an AVX2 CPU: how the tests and benchmarks run the AVX2 build on an AVX-512 machine).
    flags = ["-O3", "-ffast-math", "-fopenmp-simd"]
    if platform.machine() in ("x86_64", "AMD64"):
        flags.append(f"-march={os.environ.get(MARCH_VAR) or 'native'}")
    return flags + _openmp_flags()


def _openmp_flags() -> list[str]:
    """`-fopenmp` where torch runs its own loops with OpenMP (Linux): without it `at::parallel_for` in the
    kernels compiles to a serial loop. The library linked, libgomp.so.1, is then the one torch has already
    loaded (the loader finds it by that name), so the kernels' threads are torch's intra-op threads."""
    return ["-fopenmp"] if sys.platform.startswith("linux") and torch.backends.openmp.is_available() else []


def _cpu_features() -> str:
    """The CPU model and instruction-set flags (Linux), which -march=native compiles for."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor()
    return "".join(sorted({line for line in lines if line.startswith(("model name", "flags"))}))


def build_name(name: str) -> str:
    """The name of kernels `name`'s build (its folder under torch's extension cache).

    The build depends on the sources, the flags, this CPU (-march=native), the compiler, and the Python and
    torch it compiles and links against: the name is a hash of all of them, so that two environments on one
    machine never rebuild each other's kernels (torch's loader locks a build folder against concurrent builds).
    The torch installation counts by its folder as torch spells it, not by its version: the compile and link
    commands name its include and library folders, and torch's loader rebuilds when a command changes, so two
    venvs with the same torch version in one folder rebuilt each other's kernels at every switch.
    """
    text = "".join(path.read_text() for path in _sources(name))
    build = [text, " ".join(_flags()), platform.machine(), _cpu_features(), os.environ.get("CXX", "c++"),
             sys.version, torch.__version__, os.path.dirname(torch.__file__), _python_include()]
    return f"treenets_{name}_{hashlib.sha1(chr(0).join(build).encode()).hexdigest()[:10]}"


def _python_include() -> str:
    """The folder of Python.h, as torch's loader puts it in the compile command."""
    return sysconfig.get_path("include", scheme="nt" if os.name == "nt" else "posix_prefix") or ""


def build_folder(name: str) -> Path:
    """Where kernels `name` are built and kept: the folder `build_name(name)` in torch's extension cache
    (`$TORCH_EXTENSIONS_DIR`, else e.g. ~/.cache/torch_extensions/py311_cpu), not created here.

    Raises:
        TreenetsError: naming `$TORCH_EXTENSIONS_DIR` (or torch's default folder) where it is a file or lies under
            one (`treenets.core.folders.named_folder`).
    """
    from torch.utils import cpp_extension

    from treenets.core.folders import named_folder

    what = "a folder: torch's cache of compiled extensions, where the kernels are built"
    if os.environ.get(EXTENSIONS_VAR):
        named_folder(os.environ[EXTENSIONS_VAR], f"${EXTENSIONS_VAR}", what)
    else:
        named_folder(cpp_extension.get_default_build_root(), f"torch's default for it; ${EXTENSIONS_VAR} names "
                     "another", what)
    # (torch's function creates the folder it names: asked for the name "", it names, and makes, the cache itself)
    return Path(cpp_extension._get_build_directory("", verbose=False)) / build_name(name)


def _library(folder: Path) -> Path:
    """The kernels' library in their build folder, as torch's loader names it: after the build (the folder)."""
    return folder / f"{folder.name}.so"


def is_built(name: str) -> bool:
    """Whether kernels `name` are built for this machine, torch installation and sources: loaded in this process,
    or their library in `build_folder(name)`."""
    return _loaded.get(name) is not None or _library(build_folder(name)).is_file()


@contextlib.contextmanager
def _exclusive_build(folder: Path):
    """Hold an exclusive lock on a kernels' build folder while torch builds or loads them there.

    Two processes building the same kernels are already kept apart by torch's lock, a file `lock` created
    exclusively in the folder and removed when the build ends; but a build killed on the way (kill -9, out of
    memory, a reboot) leaves that file behind, and every later process would wait for it forever, silently.
    An `flock` is released by the system when its holder dies, so whoever holds this one is the only treenets
    process working in the folder, and a torch `lock` it finds is stale.
    """
    with held_lock(folder / "treenets.lock"):  # POSIX, as the compiler flags are: elsewhere the PyTorch code runs
        (folder / "lock").unlink(missing_ok=True)
        yield


def _copy_sources(name: str, target: Path) -> Path:
    """The kernels' sources copied into their build folder (`target`), written only where they differ, and
    built from there: torch's loader counts the paths of the sources and include folders in the version of a
    build, so two checkouts (or a pip install and a checkout) of the same sources built from their own paths
    would rebuild each other's kernels at every switch; from one path, whoever asks, the build is made once."""
    target.mkdir(exist_ok=True)
    for path in _sources(name):
        text = path.read_bytes()
        copy = target / path.name
        if not copy.is_file() or copy.read_bytes() != text:
            copy.write_bytes(text)
    return target


def kernels(name: str):
    """The compiled module of kernels `name` (a model's `<name>_cpu.cpp`, with the shared headers `csrc/*.h`),
    built on first use (the build announced on stderr, and its time); None if it cannot be built (the reason is
    kept for the `cpp` backend's error; the first failure of the process warns)."""
    if name in _loaded:
        return _loaded[name]
    source = _sources(name)[0]
    module = None
    try:
        from torch.utils import cpp_extension

        folder = build_folder(name)
        folder.mkdir(parents=True, exist_ok=True)
        start = None
        if not _library(folder).is_file():
            start = time.perf_counter()
            print(f"treenets: building the {name} CPU kernels for this machine, once: about half a minute ({folder})",
                  file=sys.stderr)
        with _exclusive_build(folder):
            copied = _copy_sources(name, folder / "sources")
            module = cpp_extension.load(name=folder.name, sources=[str(copied / source.name)],
                                        extra_cflags=_flags(), extra_ldflags=_openmp_flags(),
                                        extra_include_paths=[str(copied)], build_directory=str(folder),
                                        verbose=False)
        if start is not None:
            print(f"treenets: the {name} CPU kernels built in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    except Exception as exc:  # noqa: BLE001 - any build failure means: use the PyTorch code
        _unavailable(name, exc)
    _loaded[name] = module
    return module


def _unavailable(name: str, exc: Exception) -> None:
    """Record why kernels `name` cannot be built or loaded (`exc`): the PyTorch code runs instead. The first of a
    process warns: no compiler, or an old one, or no folder to build in fails every kernel alike."""
    _failures[name] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    _loaded[name] = None
    if len(_failures) == 1:
        warnings.warn(f"treenets: compiled CPU kernels unavailable ({name}: {_failures[name]}); using the PyTorch "
                      "code, slower", stacklevel=3)


def model_kernels() -> tuple[str, ...]:
    """The names of every model's kernels (`treenets.nn.registry.Model.kernels`), in the models' order."""
    from treenets.nn.registry import kernels as registered

    return tuple(registered())


def _sources(name: str) -> list[Path]:
    """The source of kernels `name` (a model's, else `csrc/<name>_cpu.cpp`: the packed product alone, for tests),
    then the shared headers."""
    from treenets.nn.registry import kernels as registered

    kernel = registered().get(name)
    return [kernel.source if kernel else _SOURCES / f"{name}_cpu.cpp", *sorted(_SOURCES.glob("*.h"))]


def _mixed_precision(name: str) -> bool:
    """Whether kernels `name` run their products in bfloat16 inside a bf16 block."""
    from treenets.nn.registry import kernels as registered

    kernel = registered().get(name)
    return kernel is not None and kernel.mixed_precision


def _known(names) -> tuple[str, ...]:
    """`names` (default: every kernel of the models), each checked to name one."""
    known = model_kernels()
    for name in names:
        if name not in known:
            raise TreenetsError(f"unknown kernels {name!r} (expected one of: {', '.join(known)})")
    return tuple(names) or known


def build_kernels(names=()) -> None:
    """Build the kernels `names` (default: all of `model_kernels()`) that are not built yet, each announced on stderr
    (`treenets kernels build`).

    Raises:
        TreenetsError: an unknown name; kernels that cannot be built (no C++ compiler, a failed build), with why.
    """
    for name in _known(names):
        with warnings.catch_warnings():  # the error below says it, not a warning that the PyTorch code runs
            warnings.simplefilter("ignore")
            module = kernels(name)
        if module is None:
            raise TreenetsError(f"the {name} CPU kernels cannot be built: {_failures.get(name)}")


def kernels_table(names=()) -> str:
    """Each kernel of `names` (default: all of `model_kernels()`) on a line: its name, whether it is built, and its
    folder (`treenets kernels`)."""
    names = _known(names)
    width = max(len(name) for name in names)
    return "\n".join(f"{name:<{width}}  {'built' if is_built(name) else 'not built':<9}  {build_folder(name)}"
                     for name in names)


@contextlib.contextmanager
def long_job():
    """Mark a block as work long enough to pay for building the kernels it runs where they are not built yet (an
    evaluation over a data set: `onlstm-ptb-small` on PTB's test set took 169 s with the PyTorch code, 30 s with
    the kernels): under `auto` they are built there (`kernels_for`), as in training. `treenets train`, `eval`,
    `parse-eval`, `syneval` and `export` run in one."""
    global _long_job
    previous, _long_job = _long_job, True
    try:
        yield
    finally:
        _long_job = previous


def _records(tensors) -> bool:
    """Whether autograd records an operation on `tensors` (training)."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def kernels_for(name: str, *tensors: torch.Tensor):
    """The compiled module `name` if the current backend uses it for `tensors` (all on the CPU, float32 or
    float64; inside a bf16 block only kernels with bfloat16 products), else None: the caller runs its PyTorch
    code. Under `auto` kernels not built yet are built in training (autograd records on `tensors`) and in a
    `long_job`; elsewhere the PyTorch code runs until they are built: a one-off parse waits for no compiler.

    Raises:
        TreenetsError: under the `cpp` backend, when the kernels apply but cannot be built.
    """
    if _backend in ("torch", "compile"):
        return None
    if not all(t.device.type == "cpu" and t.dtype in (torch.float32, torch.float64) for t in tensors):
        return None
    low = product_dtype("cpu")
    if low is not None and (low is not torch.bfloat16 or not _mixed_precision(name)):
        return None  # an autocast block: these kernels compute in float32/float64 only (treenets.nn.precision)
    if _backend == "auto" and name not in _loaded and not (_long_job or _records(tensors)):
        try:
            built = is_built(name)
        except (TreenetsError, OSError) as exc:  # no folder to find them in: `$TORCH_EXTENSIONS_DIR` a file, say
            _unavailable(name, exc)
            return None
        if not built:
            return None  # inference with kernels not built yet: the PyTorch code now, the kernels once built
    module = kernels(name)
    if module is None and _backend == "cpp":
        raise TreenetsError(f"backend cpp: the compiled {name} kernels cannot be built ({_failures.get(name)}); "
                            "use backend auto or torch")
    return module


def fuses_steps(device: torch.device) -> bool:
    """Whether the current backend fuses the language models' steps on `device` with `torch.compile`: always under
    `compile`; under `auto` on a CUDA device while autograd records (training), where Triton is installed."""
    if _backend == "compile":
        return True
    return _backend == "auto" and device.type == "cuda" and torch.is_grad_enabled() and _has_triton()


def _has_triton() -> bool:
    try:
        from torch.utils._triton import has_triton
    except ImportError:  # a torch without it
        return False
    return has_triton()


def step_function(step, device: torch.device):
    """`step` (one step of a recurrence in PyTorch code) as the current backend runs it on `device`: compiled by
    `torch.compile` into fused kernels where `fuses_steps` (once per function; the first compile's time printed
    once to stderr), else `step` itself.

    Args:
        step: a function of tensors (and Python numbers, which the compiled code takes as constants).
        device: where the step's tensors are.
    """
    if not fuses_steps(device):
        return step
    if step not in _compiled:
        # Each dtype, device, grad mode, dropout setting and (until torch marks it dynamic) batch shape is a
        # variant compiled apart; torch's default of 8 per function is too few for a process that trains,
        # evaluates and tests, and beyond it `fullgraph` would fail.
        dynamo = torch._dynamo.config
        limit = "recompile_limit" if hasattr(dynamo, "recompile_limit") else "cache_size_limit"  # torch < 2.6
        setattr(dynamo, limit, max(getattr(dynamo, limit), RECOMPILE_LIMIT))
        _compiled[step] = _FirstCallTimed(torch.compile(step, fullgraph=True), step.__name__)
    return _compiled[step]


def as_step_states(states: list[torch.Tensor], inputs) -> list[torch.Tensor]:
    """A recurrence's initial `states` as its steps should take them. Where the steps are compiled
    (`fuses_steps`): tensors of their own (not one tensor twice, nor views of one) that require a gradient
    exactly when the states the steps compute will (autograd records, and a state or one of `inputs`, the
    steps' weights and inputs, requires one). Then the first steps look like the later ones to `torch.compile`,
    which guards on both and would compile the step again for each mix (the ON-LSTM's first step, PRPN's first S
    steps: S + 1 graphs, minutes on a GPU before the first batch). Elsewhere the states as they are."""
    if not states or not fuses_steps(states[0].device):
        return states
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in [*states, *inputs])
    return [state.clone().requires_grad_(needs_grad) for state in states]


class _FirstCallTimed:
    """A compiled function that says, at its first call (where torch compiles it), how long that took."""

    def __init__(self, compiled, name: str):
        self.compiled, self.name, self.called = compiled, name, False

    def __call__(self, *args):
        if self.called:
            return self.compiled(*args)
        start = time.perf_counter()
        result = self.compiled(*args)
        self.called = True
        print(f"treenets: {self.name} compiled by torch.compile in {time.perf_counter() - start:.1f} s (backend "
              f"{_backend}; paid once per process and batch shape; TREENETS_BACKEND=torch runs the PyTorch step "
              "instead)", file=sys.stderr)
        return result
