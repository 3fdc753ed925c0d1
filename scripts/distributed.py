"""`python scripts/distributed.py --help`: harness.distributed, run from the repository root."""
from harness.distributed import main

if __name__ == "__main__":
    main()
