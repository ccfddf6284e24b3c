"""``python -m cepcli``: the command line (also the entry for spark-submit)."""

from cepcli.cli import main

if __name__ == "__main__":
    main()
