"""`python scripts/report.py --help`: harness.report, run from the repository root."""
from harness.report import main

if __name__ == "__main__":
    main()
