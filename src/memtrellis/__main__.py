"""``python -m memtrellis`` runs the command line."""

from memtrellis.cli import main

if __name__ == "__main__":
    main()
