"""`python scripts/selection.py --help`: harness.selection, run from the repository root."""
from harness.selection import main

if __name__ == "__main__":
    main()
