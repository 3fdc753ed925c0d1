"""`python scripts/pretrain_ae.py --help`: harness.pretrain_ae, run from the repository root."""
from harness.pretrain_ae import main

if __name__ == "__main__":
    main()
