#!/usr/bin/env python
"""Run SpectralNet on a data set: the ``spectralnet`` command (``spectralnet_tf.cli``).

    python scripts/run.py --dset cc
    python scripts/run.py --dset digits --seed 1 --out runs/digits-seed1
"""

import sys

from spectralnet_tf.cli import main

if __name__ == "__main__":
    sys.exit(main())
