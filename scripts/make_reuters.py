#!/usr/bin/env python
"""Build the Reuters data set (RCV1-v2, four top categories, tf-idf over the 2000 most
frequent words) as float32 HDF5 from the RCV1-v2 token files and topic qrels.

    python scripts/make_reuters.py --src DIR --out data/reuters.h5

DIR must hold lyrl2004_tokens_test_pt0..3.dat, lyrl2004_tokens_train.dat and
rcv1-v2.topics.qrels (plain or .gz).
"""

import argparse
import time

from spectralnet_tf.reuters import make_reuters


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", required=True, help="folder with the RCV1-v2 files")
    p.add_argument("--out", required=True, help="HDF5 file to write")
    p.add_argument("--n-words", type=int, default=2000, help="vocabulary size (default 2000)")
    args = p.parse_args(argv)
    start = time.perf_counter()
    try:
        shape = make_reuters(args.src, args.out, n_words=args.n_words)
    except FileNotFoundError as err:
        raise SystemExit(f"make_reuters.py: {err}") from None
    print(f"{args.out}: {shape[0]} documents x {shape[1]} words, "
          f"{time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
