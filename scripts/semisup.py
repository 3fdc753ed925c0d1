"""`python scripts/semisup.py --help`: harness.semisup, run from the repository root."""
from harness.semisup import main

if __name__ == "__main__":
    main()
