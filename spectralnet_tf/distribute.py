"""Data parallelism on ``tf.distribute``: every collective of SpectralNet, in one place.

Training code calls these by name; with no strategy (TensorFlow's default
strategy, one replica) each is a no-op, so single-device training runs the
same ops as before.

The unit is Algorithm 1's global minibatch of m rows. Its row indices are
drawn in cross-replica context from one seeded generator, so every replica
(and every worker of a ``MultiWorkerMirroredStrategy``, which runs the same
program with the same seed) holds the same m indices; replica r reads only
rows ``r*m/R .. (r+1)*m/R - 1`` of it (``local_part``). Per step:

- ortho step: the k×k Gram matrix is summed over replicas (``all_sum``);
- gradient step: the m×d' affinity coordinates and the m×k outputs Y are
  gathered (``all_gather``); each replica builds its m/R rows of the global
  batch's W (``affinity``: the other rows' neighbour thresholds, scales and
  nearest-neighbour indices, O(m) numbers, are gathered too) and its rows'
  part of the loss; the
  parts' gradients with respect to Y are summed (m×k), the tangent
  projection is applied to the sum on every replica, each replica
  back-propagates its own rows, and the Keras optimizer all-reduces (SUM)
  the parameter gradients it is given in replica context.

That is O(k² + m·(k + d') + parameters) numbers per step, never O(m²) or
O(n), and the O(m²) work of W and the loss is split over the replicas.

The Siamese net and the autoencoder train the same way: each replica's share
of the mean loss of one global minibatch (of pairs, of images) is its own
rows' part (``replica_share``), and the optimizer sums the gradients. The
autoencoder's invariance term (NT-Xent over the whole minibatch) gathers
the codes as SpectralNet gathers Y (``all_gather_rows``: its last minibatch
may be shorter).
"""

import contextlib
import json
import os
import re

import numpy as np
import tensorflow as tf

from .streaming import CHUNK_ROWS, map_batches


def get(strategy=None):
    """``strategy``, or the one in scope (the default strategy outside any)."""
    return tf.distribute.get_strategy() if strategy is None else strategy


def n_replicas(strategy=None):
    return int(get(strategy).num_replicas_in_sync)


def check_divisible(name, value, strategy=None):
    """Refuse a global batch that does not split into equal replica shards."""
    replicas = n_replicas(strategy)
    if value % replicas:
        raise ValueError(
            f"{name} must be a multiple of the number of replicas ({replicas}) so that "
            f"every replica holds an equal shard of the global minibatch, got {name}={value}."
        )


def run(strategy, fn, *args):
    """``fn(*args)`` on every replica; returns the first replica's result
    (the functions run here return values that are equal on all replicas)."""
    strategy = get(strategy)
    return strategy.experimental_local_results(strategy.run(fn, args=args))[0]


def _replica():
    """The replica context with more than one replica, else None."""
    ctx = tf.distribute.get_replica_context()
    return ctx if ctx is not None and ctx.num_replicas_in_sync > 1 else None


def sharded():
    """True inside a replica of a strategy with more than one replica."""
    return _replica() is not None


def _bounds(rows, ctx):
    """Rows [start, stop) of replica ``ctx`` in a global batch of ``rows``:
    consecutive, equal when ``rows`` divides by the replica count."""
    r, n = ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync
    return r * rows // n, (r + 1) * rows // n


def local_part(t):
    """This replica's consecutive share of the rows of ``t`` (a global batch)."""
    ctx = _replica()
    if ctx is None:
        return t
    start, stop = _bounds(tf.shape(t)[0], ctx)
    part = t[start:stop]
    n, replicas = t.shape[0], ctx.num_replicas_in_sync
    if n is not None and n % replicas == 0:  # equal shards: a static row count
        part.set_shape([n // replicas, *t.shape[1:]])
    return part


def local_eye(m, dtype=tf.float32):
    """This replica's rows of the m×m identity (all of it with one replica):
    marks each local row's own column in a row block of a global matrix."""
    ctx = _replica()
    if ctx is None:
        return tf.eye(m, dtype=dtype)
    start, stop = _bounds(m, ctx)
    eye = tf.one_hot(tf.range(start, stop), m, dtype=dtype)
    if isinstance(m, int) and m % ctx.num_replicas_in_sync == 0:
        eye.set_shape([m // ctx.num_replicas_in_sync, m])
    return eye


def even_share(x):
    """``x`` over the replica count: a term every replica computes in full
    (on gathered values), so that the sum over replicas counts it once."""
    ctx = _replica()
    return x if ctx is None else x / ctx.num_replicas_in_sync


def replica_share(mean, rows):
    """This replica's share of the mean over a global batch of ``rows`` rows,
    given ``mean``, the mean over its own ``local_part``: summed over the
    replicas (as the optimizer sums gradients) it is the global mean."""
    ctx = _replica()
    if ctx is None:
        return mean
    start, stop = _bounds(rows, ctx)
    local = tf.cast(stop - start, mean.dtype)
    return tf.where(local > 0, mean * local / tf.cast(rows, mean.dtype), tf.zeros_like(mean))


#: While ``count_collectives`` is active: one entry per collective traced.
_ledger = None


@contextlib.contextmanager
def count_collectives():
    """Record each ``all_sum``/``all_gather`` traced inside (on every replica):
    ``(tf.function name, collective, dtype, shape)``, the tensor one replica
    hands to it. Yields the list. For benchmarks: the bytes a step moves."""
    global _ledger
    _ledger = []
    try:
        yield _ledger
    finally:
        _ledger = None


def _record(collective, x):
    if _ledger is not None:
        graph = tf.compat.v1.get_default_graph()  # the tf.function traced, outermost
        while hasattr(getattr(graph, "outer_graph", None), "outer_graph"):
            graph = graph.outer_graph
        _ledger.append((getattr(graph, "name", ""), collective, x.dtype.name, tuple(x.shape)))


def all_sum(x):
    """Sum of ``x`` over the replicas (all-reduce)."""
    ctx = _replica()
    if ctx is None:
        return x
    _record("all_sum", x)
    return ctx.all_reduce(tf.distribute.ReduceOp.SUM, x)


def from_first(x):
    """The first replica's ``x`` on every replica (a broadcast, as an
    all-reduce): for values each worker computes on its own, such as
    eigenvectors, whose signs and basis may differ between machines."""
    ctx = _replica()
    if ctx is None:
        return x
    first = tf.cast(tf.equal(ctx.replica_id_in_sync_group, 0), x.dtype)
    return all_sum(first * x)


def all_gather(x):
    """The replicas' ``x`` stacked along rows in replica order (all-gather):
    the inverse of ``local_part``."""
    ctx = _replica()
    if ctx is None:
        return x
    _record("all_gather", x)
    out = ctx.all_gather(x, axis=0)
    rows = None if x.shape[0] is None else x.shape[0] * ctx.num_replicas_in_sync
    out.set_shape([rows, *x.shape[1:]])  # keep the static shape
    return out


def all_gather_rows(x, rows, most):
    """``all_gather`` of the ``local_part``s of a global batch of ``rows``
    rows, known only at run time and at most ``most`` (a last, shorter
    batch): each replica's rows are placed at their offset in zeros of
    ``most`` rows and summed (all-reduce), so every step's collective has
    one static shape. Gathers and all-reduces of run-time shapes inside a
    ``tf.range`` loop were seen to fail on a shape mismatch between two
    replicas' steps (last batch against a full one). ``x`` is this
    replica's ``local_part`` of a tensor of known rank; ``most`` a Python
    integer."""
    ctx = _replica()
    if ctx is None:
        return x
    most = int(most)
    start, stop = _bounds(rows, ctx)
    padded = tf.pad(x, [[start, most - stop]] + [[0, 0]] * (x.shape.rank - 1))
    padded.set_shape([most, *x.shape[1:]])
    return all_sum(padded)[:rows]


def n_workers(strategy=None):
    """Worker processes of a multi-worker strategy (1 for any other)."""
    extended = get(strategy).extended
    return int(getattr(extended, "_num_workers", 1) or 1)


def agree(values, strategy=None):
    """The mean over the workers of a dict of host numbers (name -> value),
    the same on every worker: one all-reduce. The schedule's decisions (a
    plateau, a cut of the learning rate, the stop) are taken on these, so
    that workers whose own values differ in rounding (another CPU, another
    library) never take different branches and wait for each other in a
    collective forever. Integers stay integers (they are equal on every
    worker). The values as they are with one worker."""
    strategy = get(strategy)
    if n_workers(strategy) == 1 or not values:
        return values
    names = list(values)
    local = tf.constant([float(values[name]) for name in names], tf.float64)
    replicas = n_replicas(strategy)
    summed = strategy.reduce(tf.distribute.ReduceOp.SUM,
                             strategy.run(lambda: local / replicas), axis=None).numpy()
    return {name: type(values[name])(round(v)) if isinstance(values[name], int) else float(v)
            for name, v in zip(names, summed)}


def from_chief(values, strategy=None):
    """The chief's ``values`` (a 1-D numpy array, the same length on every
    worker) on every worker, by one all-reduce in which only replica 0 of the
    cluster, the chief's first, contributes. For what each worker computes on
    its own but all must agree on exactly, such as k chosen from a spectrum
    that rounding may tip. The values as they are with one worker."""
    strategy = get(strategy)
    if n_workers(strategy) == 1:
        return values

    def first_replica(data):
        ctx = tf.distribute.get_replica_context()
        return tf.where(tf.equal(ctx.replica_id_in_sync_group, 0), data, tf.zeros_like(data))

    return strategy.reduce(tf.distribute.ReduceOp.SUM,
                           strategy.run(first_replica, args=(tf.constant(values),)),
                           axis=None).numpy()


#: Longest message (bytes of UTF-8) a pre-flight verdict carries to the other workers.
VERDICT_BYTES = 1024


def chief_check(check, errors=(ValueError,), strategy=None):
    """Run the pre-flight ``check()`` on the chief alone and give its verdict
    to every worker (one all-reduce, ``from_chief``): where it raised one of
    ``errors``, every worker raises the same type with the same message (the
    chief its own exception), so that a check only the chief can make (a
    used output folder, existing checkpoints) stops all of them with the same
    one-line reason instead of leaving the others waiting. Any other
    exception on the chief stops the others too, as a RuntimeError with its
    type and message, so that none waits for a peer that left. With one
    worker it is ``check()``."""
    strategy = get(strategy)
    if n_workers(strategy) == 1:
        check()
        return
    payload, failure = np.zeros(VERDICT_BYTES + 1, np.int32), None
    if is_chief(strategy):
        try:
            check()
        except Exception as err:  # noqa: BLE001 - every failure must reach the others
            failure = err
            listed = [i for i, kind in enumerate(errors) if isinstance(err, kind)]
            text = (str(err) if listed else f"the chief failed: {type(err).__name__}: {err}")
            text = text.encode()[:VERDICT_BYTES]
            payload[0] = 1 + (listed[0] if listed else len(errors))
            payload[1:1 + len(text)] = np.frombuffer(text, np.uint8)
    verdict = from_chief(payload, strategy)
    if verdict[0] == 0:
        return
    if failure is not None:
        raise failure
    message = bytes(verdict[1:].astype(np.uint8)).rstrip(b"\0").decode(errors="replace")
    kind = errors[int(verdict[0]) - 1] if verdict[0] <= len(errors) else RuntimeError
    raise kind(message)


def is_chief(strategy=None):
    """True unless this process is a non-chief worker of a multi-worker
    strategy: only the chief writes results, checkpoints and exports."""
    resolver = getattr(get(strategy).extended, "_cluster_resolver", None)
    if resolver is None or resolver.task_type is None:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


def split_logical_cpus(n):
    """Split this host's CPU into ``n`` logical devices and return their
    names. TensorFlow allows it only before it initializes its devices (the
    first TensorFlow op of the process), or if they are already split so."""
    cpus = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(n)])
    except RuntimeError:
        if len(tf.config.list_logical_devices("CPU")) != n:
            raise RuntimeError(
                f"cannot split the CPU into {n} logical devices: TensorFlow already "
                "initialized its devices in this process; split them before any "
                "TensorFlow op (e.g. start a new process)") from None
    return [d.name for d in tf.config.list_logical_devices("CPU")]


#: What a collective raises when a peer worker died or stopped answering.
PEER_FAILURES = (tf.errors.UnavailableError, tf.errors.CancelledError,
                 tf.errors.DeadlineExceededError, tf.errors.AbortedError)


def is_peer_failure(err):
    """True for a ``PEER_FAILURES`` error, or an ``InternalError`` raised by a
    collective op (TensorFlow reports an aborted collective either way)."""
    if isinstance(err, PEER_FAILURES):
        return True
    return isinstance(err, tf.errors.InternalError) and "ollective" in (err.message or "")


def peer_failure(err):
    """One line on a collective's ``PEER_FAILURES`` error: which worker, if
    TensorFlow's message names it."""
    peer = re.search(r"remote target (/job:\S+)", err.message or "")
    who = f"worker {peer.group(1).rstrip(':')}" if peer else "a worker of the cluster"
    return f"{who} failed or stopped answering ({type(err).__name__} in a collective op)"


def cluster_from_env():
    """The cluster named by ``TF_CONFIG``, or None."""
    text = os.environ.get("TF_CONFIG")
    if not text:
        return None
    try:
        cluster = json.loads(text).get("cluster")
    except (ValueError, AttributeError):
        raise ValueError(f"TF_CONFIG is not a JSON object, got TF_CONFIG={text!r}.") from None
    return cluster or None


def describe(strategy):
    """A JSON-able description of ``strategy`` for results files."""
    if strategy is None:
        return None
    name = ("MultiWorkerMirroredStrategy"
            if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            else type(strategy).__name__)
    return {"strategy": name, "replicas": n_replicas(strategy)}


def strategy_for(devices=None):
    """The strategy the CLI runs under: ``MultiWorkerMirroredStrategy`` when
    ``TF_CONFIG`` names a cluster, ``MirroredStrategy`` over ``devices``
    logical devices (GPUs if there are that many, else logical CPUs) when
    ``devices`` > 1, else None (single device)."""
    if cluster_from_env():
        return tf.distribute.MultiWorkerMirroredStrategy()
    if not devices or devices == 1:
        return None
    gpus = tf.config.list_physical_devices("GPU")
    if len(gpus) >= devices:
        names = [f"/gpu:{i}" for i in range(devices)]
    else:
        names = split_logical_cpus(devices)
    return tf.distribute.MirroredStrategy(names)


def map_rows(fn, x, strategy=None, batch_size=CHUNK_ROWS):
    """``fn`` on every row of ``x`` (a row source), as float32 numpy: with one
    replica ``streaming.map_batches``; with more, each replica maps its own
    shard of every chunk and the outputs are gathered in row order (a chunk
    is padded to a multiple of the replica count, the padding dropped)."""
    strategy = get(strategy)
    replicas = n_replicas(strategy)
    if replicas == 1:
        return map_batches(fn, x, batch_size)
    chunk = _sharded(fn, strategy)
    out = []
    for start in range(0, len(x), batch_size):
        block = np.asarray(x[start:start + batch_size], np.float32)
        padded = np.concatenate([block, np.repeat(block[-1:], -len(block) % replicas, axis=0)])
        out.append(np.asarray(chunk(tf.constant(padded)))[:len(block)])
    return np.concatenate(out).astype(np.float32)


def round_to_shards(rows, strategy=None):
    """``rows`` rounded down to a multiple of the replica count: a minibatch
    every replica holds an equal shard of."""
    return rows - rows % n_replicas(strategy)


def fixed_rows_map(fn, x, strategy=None):
    """A callable giving ``fn`` on the rows ``x`` (float32 numpy), for calls
    repeated on the same rows while fn's weights change: with one replica
    one compiled call on all of them (``x`` is held as a tensor, so keep it
    to a subsample), traced at the first call; with more, ``map_rows``."""
    if n_replicas(strategy) > 1:
        return lambda: map_rows(fn, x, strategy)
    rows = tf.constant(np.asarray(x, np.float32))
    compiled = tf.function(lambda: fn(rows))
    return lambda: np.asarray(compiled(), np.float32)


#: The last compiled sharded map, ``(fn, strategy, function)``: repeated
#: ``transform``/``predict`` calls reuse it instead of tracing again. Only one
#: is kept, so it holds at most one model alive.
_last_sharded = [None]


def _sharded(fn, strategy):
    last = _last_sharded[0]
    if last is None or last[0] is not fn or last[1] is not strategy:
        @tf.function(reduce_retracing=True)
        def chunk(rows):
            return run(strategy, lambda r: all_gather(fn(local_part(r))), rows)

        _last_sharded[0] = last = (fn, strategy, chunk)
    return last[2]
