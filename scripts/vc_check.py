"""`python scripts/vc_check.py --help`: harness.vc, run from the repository root."""
from harness.vc import main

if __name__ == "__main__":
    main()
