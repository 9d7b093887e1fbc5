"""`make bench`: run every benchmark module in bench/ (each has a main()) and print its figures."""

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> None:
    only = set(sys.argv[1:])
    for module in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if module.name.startswith("_") or (only and module.name not in only):
            continue
        print(f"\n=== bench/{module.name}.py")
        importlib.import_module(f"bench.{module.name}").main()


if __name__ == "__main__":
    main()
