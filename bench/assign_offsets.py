"""assign_offsets (protocol/records.py) against the two-copy form it replaced (a bytearray of the
batch, the base offset and leader epoch packed into it, ``bytes()`` of it), side by side in one run,
for a small and a ~1 MB batch given as bytes and as a memoryview (what produce hands it).

    python bench/assign_offsets.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import struct
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.records import assign_offsets, build_batch  # noqa: E402

_I64, _I32 = struct.Struct(">q"), struct.Struct(">i")


def two_copies(batch: bytes | memoryview, base_offset: int, epoch: int) -> bytes:
    """The form before: every byte copied twice to write 12."""
    out = bytearray(batch)
    _I64.pack_into(out, 0, base_offset)
    _I32.pack_into(out, 12, epoch)
    return bytes(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    batches = {"10 x 100 B": build_batch([(b"k", b"v" * 100, [])] * 10),
               "4 x 1 KiB": build_batch([(b"k", b"v" * 1000, [])] * 4),
               "16 x 1 KiB": build_batch([(b"k", b"v" * 1000, [])] * 16),
               "1000 x 1 KiB": build_batch([(b"k", b"v" * 1000, [])] * 1000)}
    print(f"{'batch':>14} {'input':>10} {'before µs':>10} {'now µs':>9} {'ratio':>7}")
    for name, batch in batches.items():
        number = max(20, 2_000_000 // len(batch))
        for kind, given in (("bytes", batch), ("memoryview", memoryview(batch))):
            assert assign_offsets(given, 7, 3) == two_copies(given, 7, 3)
            before = min(timeit.repeat(lambda: two_copies(given, 7, 3), number=number, repeat=args.repeat)) / number
            now = min(timeit.repeat(lambda: assign_offsets(given, 7, 3), number=number, repeat=args.repeat)) / number
            print(f"{name:>14} {kind:>10} {before * 1e6:10.2f} {now * 1e6:9.2f} {before / now:6.1f}x")


if __name__ == "__main__":
    main()
