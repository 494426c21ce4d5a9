"""core_layers.py's header check on a made-up tree: a file of src/ that
includes a header of io/ or preload/ is reported however the include spells
its path. It once looked each name up as written in src/ first, so
"../io/dio.h" counted as a header of src/ and "io/dio.h" (found through the
source root, which meson adds to the core's include path) as no header of
ours: both passed unreported.

usage: core_layers_paths.py  (imports core_layers.py from its own folder)"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import core_layers  # noqa: E402

def problems(root, order):
    """The header problems, less the exceptions of the real tree that this
    made-up one does not make."""
    return [b for b in core_layers.header_problems(root, order)
            if not b.startswith("core_layers.py: UPWARD_INCLUDES")]


SPELLINGS = ['"io/dio.h"', '"../io/dio.h"', "<dio.h>", '"../preload/block_bits.h"',
             '"preload/block_bits.h"']


def main():
    fails = 0
    with tempfile.TemporaryDirectory() as root:
        for d, f in (("src", "pool.h"), ("src", "pool.c"), ("io", "dio.h"),
                     ("preload", "block_bits.h")):
            os.makedirs(os.path.join(root, d), exist_ok=True)
            open(os.path.join(root, d, f), "w").close()
        order = {"pool": 1}
        for spelling in SPELLINGS:
            with open(os.path.join(root, "src", "pool.c"), "w") as f:
                f.write(f'#include "pool.h"\n#include <stdio.h>\n#include {spelling}\n')
            bad = problems(root, order)
            if len(bad) != 1 or "includes no layer above it" not in bad[0]:
                print(f"#include {spelling} in src/pool.c: {bad or 'not reported'}")
                fails += 1
        with open(os.path.join(root, "src", "pool.c"), "w") as f:
            f.write('#include "pool.h"\n#include "../src/pool.h"\n#include <stdio.h>\n')
        bad = problems(root, order)
        if bad:
            print(f"src/pool.c including its own header: {bad}")
            fails += 1
    print(f"{len(SPELLINGS) + 1} cases, {fails} wrong")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
