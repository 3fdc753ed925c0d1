"""Benchmark records: what ran, on which tree and machine, and how fast the
machine multiplies matrices (the unit that makes timings comparable).

Every research command writes its figures through ``save_record`` into
``benchmarks/results/DATE-GROUP-TAG.json``; ``report`` renders them.
"""

import datetime
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time

from spectralnet_tf.atomic import atomic_file

#: The repository root (the harness lives in ROOT/harness).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
SCRIPTS = os.path.join(ROOT, "scripts")


def commit():
    """The short commit of the repository's tree, "+dirty" if tracked files
    differ from it; "unknown" outside a git checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return out + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def vector_isa(flags):
    """The widest vector units among ``flags`` (/proc/cpuinfo), as " (AVX-512,
    BF16)": CPUs sold under one model name differ in them, and with them in
    speed and rounding (oneDNN picks its kernels by them)."""
    isa = [name for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2")) if flag in flags][:1]
    isa += [name for flag, name in (("avx512_bf16", "BF16"), ("amx_bf16", "AMX")) if flag in flags]
    return f" ({', '.join(isa)})" if isa else ""


def machine():
    """One line: architecture, CPU model, cores, memory, TensorFlow version
    and its CPU settings."""
    import tensorflow as tf

    with open("/proc/meminfo") as f:
        mem_gib = int(f.readline().split()[1]) / 2**20
    cpu, flags = "unknown CPU", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    return (f"{platform.machine()}, {cpu}{vector_isa(flags)}, {os.cpu_count()} cores, "
            f"{mem_gib:.0f} GiB, CPU only, TF {tf.__version__}{cpu_settings()}")


def onednn_setting(environ):
    """"oneDNN on" or "oneDNN off" as ``TF_ENABLE_ONEDNN_OPTS`` in ``environ``
    sets it; None where it is unset (TensorFlow's own default for the CPU)."""
    return {"0": "oneDNN off", "1": "oneDNN on"}.get(environ.get("TF_ENABLE_ONEDNN_OPTS"))


def cpu_settings(environ=None):
    """TensorFlow's CPU settings as this process was started with them, as
    ", oneDNN on, BFC pool" (they change speed, and oneDNN the rounding): an
    unset variable is TensorFlow's own default and is not named."""
    environ = os.environ if environ is None else environ
    bfc = environ.get("TF_CPU_ALLOCATOR_USE_BFC", "").lower() in ("1", "true")
    return "".join(f", {part}" for part in (onednn_setting(environ), bfc and "BFC pool") if part)


def matmul_rate(n=2048, dtype=None, repeats=20):
    """GFLOP/s of an n x n matmul in ``dtype`` (default float32), compiled."""
    import tensorflow as tf

    dtype = dtype or tf.float32
    a = tf.random.normal((n, n), dtype=tf.float32)
    a = tf.cast(a, dtype)

    @tf.function
    def mm(x):
        return tf.matmul(x, x)

    mm(a).numpy()
    start = time.perf_counter()
    for _ in range(repeats):
        mm(a).numpy()
    seconds = (time.perf_counter() - start) / repeats
    return 2 * n**3 / seconds / 1e9


def peak_rss_gib():
    """Peak resident memory of this process so far, GiB (ru_maxrss is KiB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)


#: run.py's phases that compute references for the record (exact spectral
#: clustering, the Grassmann distances), not part of clustering the data.
REFERENCE_PHASES = ("exact", "grassmann", "grassmann_plain", "exact_plain")


def seconds_without_references(seconds):
    """A run's ``results["seconds"]`` total less its reference phases: what
    ``run.py`` takes without ``--grassmann`` and ``--exact-knn``."""
    return seconds["total"] - sum(seconds.get(key, 0.0) for key in REFERENCE_PHASES)


_AT_START = []


def note_start():
    """Keep the tree's commit as it is now, at the start of a script's main:
    a record written at the end of a long run then names the tree the run
    started from, not what the tree holds by then."""
    if not _AT_START:
        _AT_START.append(commit())


def machine_and_commit(now=False):
    """(machine, commit): the commit kept by ``note_start`` (the tree now if
    none was kept); ``now=True`` asks the tree again (preset.py: each run.py
    it starts imports the tree of that moment)."""
    return machine(), (commit() if now or not _AT_START else _AT_START[0])


def save_record(tag, extra, group, folder=None):
    """``benchmarks/results/DATE-GROUP-TAG.json`` (or in ``folder``): the
    command line of the script that runs, commit, date, machine, ``extra``.
    Written atomically."""
    machine_name, tree = machine_and_commit()
    script = os.path.basename(sys.argv[0])
    record = {"command": f"python scripts/{script} " + shlex.join(sys.argv[1:]),
              "commit": tree, "date": datetime.date.today().isoformat(),
              "machine": machine_name, **extra}
    path = os.path.join(folder or RESULTS, f"{record['date']}-{group}-{tag}.json")
    with atomic_file(path) as f:
        json.dump(record, f, indent=1)
    print(f"record: {path}")
    return path


def run_param(config, name, part=None):
    """A run's parameter from its results' "config": SpectralNet's own
    (``part=None``) or its Siamese net's (``part="siamese"``). Records from
    before the estimator's parts were objects name the Siamese net's
    parameters ``siamese_NAME``, later ones ``affinity_embedding__NAME``; a
    run without a Siamese net has none (None). A schedule's parameter
    (``max_epochs``) is read from the part's ``schedule__NAME``, where records
    since the ``Schedule`` part keep it, else from the flat NAME."""
    from spectralnet_tf import Schedule

    scheduled = name in Schedule().get_params()

    def get(prefix, default=None):
        flat = config.get(f"{prefix}{name}", default)
        return config.get(f"{prefix}schedule__{name}", flat) if scheduled else flat

    if part is None:
        return get("")
    if config.get("affinity_embedding") not in ("siamese", "SiameseEmbedding"):
        return None
    return get("affinity_embedding__", config.get(f"siamese_{name}"))


def load_record(path):
    with open(path) as f:
        return json.load(f)


def record_heading(record):
    """A record's first line: its command, commit, date and machine."""
    return (f"`{record['command']}`, commit {record['commit']}, {record['date']}, "
            f"{record['machine']}")


def rows_table(record):
    """Markdown of a "rows" record: its title's table."""
    lines = ["| " + " | ".join(record["header"]) + " |", "|" + " --- |" * len(record["header"])]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |"
                              for row in record["rows"]])


def append(title, header, rows, command, extra=None):
    """Print the table and keep it as a record in ``benchmarks/results/``
    (kind "rows", with ``extra``'s keys beside); ``bench.py report`` puts
    records into BENCHMARKS.md."""
    tag = f"{command.split()[2]}-{datetime.datetime.now():%H%M%S}"  # e.g. "matmul-101502"
    save_record(tag, {"kind": "rows", "title": title, "header": list(header),
                      "rows": [[str(c) for c in row] for row in rows], **(extra or {})},
                group="bench")
    print(rows_table({"title": title, "header": header, "rows": rows}))
