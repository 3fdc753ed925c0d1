"""The experiment harness of spectralnet-tf: the paper reproduction
(``reproduce``; its flags and config in ``runconfig`` and ``configs``;
``rundir``, its claimed and resumable run directories), benchmark records
(``records``) and the report that renders them into BENCHMARKS.md
(``report``, with ``current``: the shipped command behind each "Current
figures" row), and the research commands (``bench`` with ``bench_scale``,
the development suite ``suite`` with its data sets in ``suite_sets``,
``defaults``, ``distributed``, ``semisup``, ``saddle``, ``preset``,
``selection``, ``vc`` with the paper's VC construction in
``vc_construction``, ``sweep``, ``ablations``, ``pretrain_ae``). Each
command's entry point is ``scripts/NAME.py``."""

import os

# TensorFlow's C++ info lines (oneDNN, CPU features) would precede every
# command's output; set before any harness module imports TensorFlow.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import spectralnet_tf  # noqa: E402  its TensorFlow CPU defaults, before TensorFlow starts
