"""What the machine computes in: the CPU's vector units and the accelerators.

``dtype_policy="auto"`` asks this module: bfloat16 pays only on units that
multiply in it. A CPU without them (AVX2 alone, or AVX-512 without BF16)
emulates bfloat16 matmuls and runs them slower than float32.

``tensorflow_cpu_defaults`` turns on, before TensorFlow starts, oneDNN's
CPU kernels, which SpectralNet's training runs faster with
(``import spectralnet_tf`` calls it).
"""

import functools
import os
import sys

#: /proc/cpuinfo flags of CPU units that multiply bfloat16 natively.
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
#: GPUs from this CUDA compute capability on have bfloat16 tensor cores (Ampere).
GPU_BF16_CAPABILITY = (8, 0)


def cpu_flags(path="/proc/cpuinfo"):
    """The first CPU's feature flags (a set; empty where ``path`` cannot be read,
    e.g. off Linux)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


#: TensorFlow's CPU settings, set where the user has not set them: oneDNN's
#: kernels, which TensorFlow turns on by itself only on CPUs with AVX-512
#: VNNI, BF16 or AMX and leaves off on AVX2 alone. Without them, on an AVX2
#: CPU, much of a step's time went to page faults: each op's buffers (the
#: minibatch affinity builds several m×m ones) came fresh from the kernel.
CPU_DEFAULTS = {"TF_ENABLE_ONEDNN_OPTS": "1"}


def tensorflow_cpu_defaults(environ=None):
    """Set ``CPU_DEFAULTS`` in ``environ`` (default ``os.environ``) where a
    variable is unset, and only while TensorFlow is not yet imported: it reads
    oneDNN's at import, so a value set later would be written but not used.
    A variable the user set, to any value, is kept. Returns the variables set."""
    environ = os.environ if environ is None else environ
    if "tensorflow" in sys.modules:
        return {}
    unset = {var: value for var, value in CPU_DEFAULTS.items() if var not in environ}
    environ.update(unset)
    return unset


@functools.lru_cache(maxsize=None)
def has_bfloat16_units():
    """True where the hardware TensorFlow computes on multiplies bfloat16
    natively: every visible GPU of compute capability 8.0 or more, or, with
    no GPU, a CPU with AVX-512 BF16 or AMX."""
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        return all(tuple(tf.config.experimental.get_device_details(g).get(
            "compute_capability", (0, 0))) >= GPU_BF16_CAPABILITY for g in gpus)
    return any(flag in cpu_flags() for flag in CPU_BF16_FLAGS)


def resolve_dtype_policy(policy):
    """A Keras dtype policy for the hidden layers: ``"auto"`` becomes
    ``"mixed_bfloat16"`` where ``has_bfloat16_units()`` and ``"float32"``
    elsewhere; any other value is returned as it is."""
    if policy == "auto":
        return "mixed_bfloat16" if has_bfloat16_units() else "float32"
    return policy
