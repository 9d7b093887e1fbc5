"""`make bench`: run every benchmark module in bench/ (each has a main()) and print its figures.

Each module runs in a process of its own, on a database of its own (bench/_django.py): one benchmark's rows
never weigh on another's figures (the usage dashboard read the capacity benchmark's 2,000 organizations and
program when they shared one). `python -m bench usage ingest` runs just those."""

import pkgutil
import subprocess
import sys
from pathlib import Path


def names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if not m.name.startswith("_"))


def main() -> None:
    only = sys.argv[1:]
    unknown = set(only) - set(names())
    if unknown:
        sys.exit(f"no such benchmark: {', '.join(sorted(unknown))} (there are: {', '.join(names())})")
    failed = []
    for name in only or names():
        print(f"\n=== bench/{name}.py", flush=True)
        code = subprocess.call([sys.executable, "-c", f"import bench.{name} as b; b.main()"])
        if code:
            failed.append(name)
    if failed:
        sys.exit(f"benchmarks failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
