"""`python scripts/ablations.py --help`: harness.ablations, run from the repository root."""
from harness.ablations import main

if __name__ == "__main__":
    main()
