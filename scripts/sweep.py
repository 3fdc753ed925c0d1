"""`python scripts/sweep.py --help`: harness.sweep, run from the repository root."""
from harness.sweep import main

if __name__ == "__main__":
    main()
