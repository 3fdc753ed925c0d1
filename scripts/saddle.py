"""`python scripts/saddle.py --help`: harness.saddle, run from the repository root."""
from harness.saddle import main

if __name__ == "__main__":
    main()
