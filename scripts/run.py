"""`python scripts/run.py --help`: harness.reproduce, run from the repository root."""
from harness.reproduce import main

if __name__ == "__main__":
    raise SystemExit(main())
