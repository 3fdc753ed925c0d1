"""What BENCHMARKS.md's "Current figures" rows are of, and the check that they
still describe the shipped configs.

``ENTRIES`` holds one entry per row of the table, keyed by the row's first
cell, exactly as written there:

- a row about a shipped command gives that command's ``run.py`` arguments
  (``argv``) and its records. Each record must carry the config its run
  resolved to (``results.json``'s "config": ``reproduce.record_params`` of
  the net, its seed, its affinity's scale, the encoder file), and that config
  must be the one the command resolves to today (``shipped_config``): else
  the row describes a config that no longer ships;
- a row about ``SpectralNet``'s defaults gives ``defaults: True`` and its
  records (``bench.py suite``, ``small-fit``), which keep the config of the
  default estimator they fitted (``defaults_config``), checked the same way;
- any other row gives ``exempt``, one line saying why no shipped config
  stands behind it (a timing of one part, a check of the paper's theorem, a
  criterion's ranking).

``check`` (run by ``report.py`` and ``report.py --check``) fails on a row
without an entry, an entry without a row, a record the row names that its
entry does not, a missing record, and a record whose config differs from
today's; it names the row and the first differing key with both values. A
record made before records kept their config is reported as a warning
("records carry no config: re-measure"), not a failure, and so is a shipped
entry that has no records yet (awaiting its measurement).
"""

import json
import os
import re

from .records import RESULTS, ROOT, load_record

#: Keys of a run's config that belong to the run, not to the config: the
#: seed (and the estimator's ``random_state``, set from it), the affinity's
#: fitted scale, where its checkpoints and logs went, how much it printed,
#: and the distribution strategy it happened to run under.
RUN_KEYS = frozenset({"seed", "random_state", "scale_", "checkpoint_dir", "log_dir", "verbose",
                      "distribute"})

#: Parameters that moved into a part after some records were made: recorded
#: key -> today's. The schedule's, flat on SpectralNet and on its Siamese net
#: until they became a ``Schedule`` part's (the same values, the same runs).
_SCHEDULE = ("learning_rate", "max_epochs", "steps_per_epoch", "patience", "min_lr", "tol")
MOVED = {f"{owner}{name}": f"{owner}schedule__{name}"
         for owner in ("", "affinity_embedding__") for name in _SCHEDULE}

#: Parameters the estimator gained after some records were made, each with
#: the value that runs what those records ran: a record without the key reads
#: as holding it. ``tol``: 0 never stops early, as every run before it, and as
#: the Siamese net never did; ``group_weight`` moved from the affinity to
#: SpectralNet with its default; the schedules are ``Schedule`` parts;
#: ``auto_widths`` is the "auto" net's table (``defaults_config``), as it
#: was until the defaults' stage 4, and ``graph_hidden_units`` its net on a
#: given graph, the same table until stage 6; the warm start stepped on the
#: training minibatch (``init__batch_size=None``) until stage 10.
ADDED = {"schedule__tol": 0.0, "group_weight": "balanced", "schedule": "Schedule",
         "affinity_embedding__schedule": "Schedule", "affinity_embedding__schedule__tol": 0.0,
         "auto_widths": [[32, 256], [256, 512], [None, 1024]], "graph_hidden_units": None,
         "init__batch_size": None}

#: Parameters the estimator has lost, each with a test of the recorded value
#: (and the record's whole config) under which the record ran what today's
#: code runs without it: such a record reads as without the key (any other
#: value is a difference). The orthogonalization batch is the gradient
#: batch now, the gradient always projected, the label classifier's strength
#: the constant it defaulted to, the group weight SpectralNet's (``ADDED``),
#: and no Siamese view joins SpectralNet's training set. Small fits of every
#: path gave the same embeddings before and after these went (commit 565fbd8).
REMOVED = {
    "ortho_batch_size": lambda value, config: value in (None, config.get("batch_size")),
    "gradient": lambda value, config: value == "projected",
    "affinity__label_strength": lambda value, config: value == 8.0,
    "affinity__group_weight": lambda value, config: value == "balanced",
    "affinity_embedding__graph_views": lambda value, config: value == 0,
}

#: Values recorded under a name that today's config writes as the object it
#: named: key -> {recorded value: (today's value, keys the object adds with
#: the values the name built it with)}, applied where today's config holds
#: that object. Views were named by a string ("redraw") until commit 565fbd8,
#: and are objects (``Redraw()``) since; the defaults' records named the warm
#: start "spectral" until ``defaults_config`` wrote the object it makes.
RENAMED = {
    "affinity_embedding__views": {
        "redraw": ("Redraw", {"affinity_embedding__views__data_dir": None}),
    },
    "init": {
        "spectral": ("SpectralInit", {"init__steps": 500, "init__learning_rate": 0.001,
                                      "init__rms": 0.25, "init__max_distance": 0.5}),
    },
}

#: MNIST's and infinite MNIST's classes.
DIGITS = 10

ENTRIES = (
    {"row": "MNIST, all 70k",
     "argv": ["--dset", "mnist"], "n_clusters": DIGITS,
     "records": ["2026-12-08-bench-run-014100.json", "2026-12-08-bench-run-014240.json",
                 "2026-12-08-bench-run-013557.json", "2026-12-08-bench-run-013738.json",
                 "2026-12-08-bench-run-013919.json", "2026-12-07-bench-run-233731.json",
                 "2026-12-07-bench-run-234023.json", "2026-12-07-bench-run-234312.json",
                 "2026-12-07-bench-run-234608.json", "2026-12-07-bench-run-234850.json"]},
    {"row": "MNIST, train 60k, test 10k",
     "argv": ["--dset", "mnist", "--split"], "n_clusters": DIGITS,
     "records": ["2026-12-07-bench-run-023244.json", "2026-12-07-bench-run-023408.json",
                 "2026-12-07-bench-run-020156.json", "2026-12-07-bench-run-021942.json",
                 "2026-12-07-bench-run-022103.json"]},  # seeds 0-4
    {"row": "Infinite MNIST, 1M and 8.1M digits",
     "argv": ["--dset", "infimnist", "--split"], "n_clusters": DIGITS,
     "records": [f"2026-12-04-scale-{tag}-accept-s{seed}-n{n}.json"
                 for tag, runs in (("tta", ((0, 1000000), (1, 1000000), (2, 1000000),
                                            (0, 8100000), (1, 8100000))),
                                   ("timing", ((0, 1000000), (1, 1000000), (2, 1000000),
                                               (0, 8100000))),
                                   ("timing86", ((0, 1000000), (1, 1000000), (2, 1000000),
                                                 (0, 8100000))))
                 for seed, n in runs]},
    {"row": "MNIST with the paper's settings (`--preset paper`), Table 1's four rows",
     "argv": ["--dset", "mnist", "--preset", "paper"], "n_clusters": DIGITS,
     "records": {"2026-11-24-issue18-preset-code-siamese.json":
                 ["--dset", "mnist", "--preset", "paper"],
                 "2026-11-24-issue18-preset-code-euclidean.json":
                 ["--dset", "mnist", "--preset", "paper", "--affinity", "euclidean"],
                 "2026-11-24-issue18-preset-input-siamese.json":
                 ["--dset", "mnist", "--preset", "paper", "--space", "input"],
                 "2026-11-24-issue18-preset-input-euclidean.json":
                 ["--dset", "mnist", "--preset", "paper", "--space", "input", "--affinity",
                  "euclidean"]}},
    {"row": "The authors' package on MNIST, end to end",
     "exempt": "a peer's own config (bench.py suite --authors-mnist), run beside ours"},
    {"row": "The development suite: the defaults against what users pick instead",
     "defaults": True, "records": ["2026-12-08-bench-suite-012449.json",
                                   "2026-12-08-bench-suite-003229.json"]},
    {"row": "Your own graph (`affinity=\"precomputed\"`)",
     "defaults": True, "records": ["2026-12-08-bench-suite-012449.json",
                                   "2026-12-08-bench-suite-003229.json"]},
    {"row": "A default fit of 5,000 × 100",
     "defaults": True, "records": ["2026-12-08-bench-small-fit-020150.json",
                                   "2026-12-08-bench-small-fit-020229.json",
                                   "2026-12-08-bench-small-fit-021252.json",
                                   "2026-12-08-bench-small-fit-030347.json",
                                   "2026-12-08-bench-small-fit-011028.json",
                                   "2026-12-08-bench-small-fit-011113.json",
                                   "2026-12-08-bench-small-fit-001036.json",
                                   "2026-12-08-bench-small-fit-001130.json",
                                   "2026-12-08-bench-small-fit-003458.json"]},
    {"row": "Semi-supervised: 2% labels on two noisy rings",
     "exempt": "a grid of default fits with labels (semisup.py grid), whose record keeps its "
               "SpectralNet parameters, none set"},
    {"row": "The warm start against random weights (why `init=\"spectral\"`)",
     "exempt": "a subset recipe of its own (tests/mnist_variant.py, 4,000 digits) that tests "
               "the start, not a shipped command"},
    {"row": "The paper's Sec. 4 construction",
     "exempt": "a check of the paper's theorem (vc_check.py): exact eigenvectors, no net"},
    {"row": "oneDNN on against off",
     "exempt": "compares two TensorFlow settings on one config, one run after the other: the "
               "ratio is the figure"},
    {"row": "One spectral iteration, the MNIST net",
     "exempt": "times one iteration's parts alone (bench.py profile), not a run"},
    {"row": "Siamese pair building",
     "exempt": "times make_pairs alone on jittered codes (bench.py pairs), not a run"},
    {"row": "Data-parallel overhead per iteration",
     "exempt": "times Algorithm 1's iterations under device layouts (distributed.py), not a run"},
    {"row": "Served SavedModel, the MNIST net",
     "exempt": "throughput of an exported graph of the MNIST net's layers, briefly trained: "
               "the layers, not the config, set it"},
    {"row": "`n_clusters=\"auto\"`: the right k",
     "exempt": "the estimator's eigengap rule on sets with a known k (bench.py nclusters)"},
    {"row": "The shipped autoencoders by split stability",
     "exempt": "ranks code spaces (selection.py codes); the files it chose are the shipped "
               "configs' encoders, which their entries check"},
    {"row": "The paper's model selection on 10,000 MNIST codes",
     "exempt": "tests two label-free criteria on a grid of their own (selection.py mnist)"},
)


def entry_records(entry):
    """``{record file: run.py argv}`` of an entry (a list of records shares
    the entry's argv; a defaults entry has none)."""
    records = entry.get("records", [])
    if isinstance(records, dict):
        return dict(records)
    return {name: entry.get("argv", []) for name in records}


def shipped_config(argv, n_clusters=DIGITS):
    """The config ``run.py ARGV`` resolves to today, as its results.json
    would record it, without loading data or training: the SpectralNet that
    ``runconfig.build_config`` makes, through ``reproduce.record_params``,
    with the name of the encoder file the job would load (None in input
    space). Run-specific keys (``RUN_KEYS``) are left out."""
    from spectralnet_tf.estimator import SpectralNet

    from . import reproduce, runconfig

    args = runconfig.parse_args(argv)
    net = SpectralNet(n_clusters, random_state=args.seed, **runconfig.build_config(args))
    params = reproduce.record_params(net)
    space = args.space or ("code" if args.dset in reproduce.CODE_SPACE else "input")
    params["encoder"] = (os.path.basename(args.ae_weights or reproduce.default_ae(args))
                         if space == "code" else None)
    return _comparable(params)


def defaults_config(**params):
    """The config a default ``SpectralNet(k)`` (with ``params`` set) fits, as
    the records of ``bench.py suite`` and ``small-fit`` keep it: the default
    affinity and warm start as the objects their names make (their
    parameters beside), with "auto_widths", the table that resolves
    ``hidden_units="auto"``, and "graph_hidden_units", its net on a given
    graph (constants, not parameters: without them a
    record of another net would read as today's), no ``n_clusters``, which
    each data set sets, and no run-specific keys."""
    from spectralnet_tf.estimator import AUTO_WIDTHS, GRAPH_HIDDEN_UNITS, SpectralNet
    from spectralnet_tf.initializers import INITIALIZERS

    from . import reproduce

    net = SpectralNet(2)  # the objects the names make: their parameters show
    net.set_params(affinity=net.make_affinity(), init=INITIALIZERS[net.init]())
    params = reproduce.record_params(net.set_params(**params))
    params.pop("n_clusters")
    if params.get("hidden_units") == "auto":
        params["auto_widths"] = AUTO_WIDTHS
        params["graph_hidden_units"] = GRAPH_HIDDEN_UNITS
    return _comparable(params)


def _comparable(config):
    """A config as JSON holds it (lists, not tuples), without run-specific
    keys, with the encoder as its file name."""
    config = json.loads(json.dumps(config))
    if config.get("encoder"):
        config["encoder"] = os.path.basename(config["encoder"])
    return {key: value for key, value in config.items() if key not in RUN_KEYS}


def record_config(record):
    """The run's config in a record: a ``bench.py run`` or ``scale`` record
    keeps it as "config", a ``saddle.py`` record in its "results"; None in a
    record made before records kept it."""
    config = record.get("config", record.get("results", {}).get("config"))
    return None if config is None else _comparable(config)


def first_difference(recorded, today):
    """``(key, recorded value, today's value)`` of the first key (in sorted
    order) where a record's config and today's differ, or None. A key one
    side lacks is ``"<absent>"`` there, after ``MOVED``, ``ADDED``,
    ``REMOVED`` and ``RENAMED``."""
    recorded = {MOVED.get(key, key): value for key, value in recorded.items()}
    for key, value in ADDED.items():
        if key in today and key not in recorded:
            recorded[key] = value
    for key, ran_as_today in REMOVED.items():
        if key not in today and key in recorded and ran_as_today(recorded[key], recorded):
            recorded.pop(key)
    for key, names in RENAMED.items():
        value = recorded.get(key)
        if isinstance(value, str) and value in names and today.get(key) == names[value][0]:
            recorded[key], added = names[value]
            for added_key, added_value in added.items():
                recorded.setdefault(added_key, added_value)
    for key in sorted(set(recorded) | set(today)):
        a, b = recorded.get(key, "<absent>"), today.get(key, "<absent>")
        if a != b:
            return key, a, b
    return None


#: A record's file name as the table spells it out in full.
RECORD_NAME = re.compile(r"\d{4}-\d{2}-\d{2}-[A-Za-z0-9_.-]+?\.json")


def current_rows(text):
    """``{first cell: whole row}`` of the table under ``## Current figures``."""
    section = re.search(r"^## Current figures\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    rows = {}
    for line in (section.group(1) if section else "").splitlines():
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] != "question":  # the header row
            rows[cells[0]] = line
    return rows


def check(text=None, entries=ENTRIES, results=RESULTS):
    """Warnings and failures (two lists of lines) for ``entries`` against the
    Current-figures table of ``text`` (BENCHMARKS.md's if None) and the
    records in ``results``."""
    if text is None:
        with open(os.path.join(ROOT, "BENCHMARKS.md")) as f:
            text = f.read()
    warnings, failures = [], []
    rows = current_rows(text)
    by_row = {entry["row"]: entry for entry in entries}
    for row in rows:
        if row not in by_row:
            failures.append(f"row {row!r} has no entry in harness/current.py")
    for name, entry in by_row.items():
        if name not in rows:
            failures.append(f"{name}: entry without a row in Current figures")
            continue
        records = entry_records(entry)
        for cited in RECORD_NAME.findall(rows[name]):
            if not os.path.exists(os.path.join(results, cited)):
                failures.append(f"{name}: names {cited}, which is not in benchmarks/results/")
            elif "exempt" not in entry and cited not in records:
                failures.append(f"{name}: names {cited}, which its entry does not")
        if "exempt" in entry:
            continue
        if not records:
            warnings.append(f"{name}: no records yet: awaiting its measurement")
            continue
        bare, configs, stale = [], {}, []
        for record, argv in records.items():
            path = os.path.join(results, record)
            if not os.path.exists(path):
                failures.append(f"{name}: {record} is not in benchmarks/results/")
                continue
            config = record_config(load_record(path))
            if config is None:
                bare.append(record)
                continue
            key = tuple(argv)
            if key not in configs:
                configs[key] = (defaults_config() if entry.get("defaults")
                                else shipped_config(argv, entry.get("n_clusters", DIGITS)))
            differs = first_difference(config, configs[key])
            if differs:
                stale.append((record, argv, differs))
        if stale:
            record, argv, (key, there, today) = stale[0]
            more = f" (and {len(stale) - 1} more of its records)" if len(stale) > 1 else ""
            what = ("the defaults are" if entry.get("defaults")
                    else f"`run.py {' '.join(argv)}` resolves to")
            failures.append(
                f"{name}: {record} ran another config than {what} today: {key} is "
                f"{there!r} there, {today!r} today{more} (re-measure, or rewrite the row)")
        if bare:
            warnings.append(f"{name}: records carry no config: re-measure ({', '.join(bare)})")
    return warnings, failures


def report_check(text=None, entries=ENTRIES, results=RESULTS):
    """Print ``check``'s warnings; exit 1 with its failures, if any."""
    warnings, failures = check(text, entries, results)
    for line in warnings:
        print(f"current figures: warning: {line}")
    if failures:
        raise SystemExit("current figures: stale:\n" + "\n".join(f"- {line}" for line in failures))
