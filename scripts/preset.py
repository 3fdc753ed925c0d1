"""`python scripts/preset.py --help`: harness.preset, run from the repository root."""
from harness.preset import main

if __name__ == "__main__":
    main()
