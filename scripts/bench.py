"""`python scripts/bench.py --help`: harness.bench, run from the repository root."""
from harness.bench import main

if __name__ == "__main__":
    main()
