"""core_layers.py's header check on a made-up tree: a file of src/ that
includes a header of io/ or preload/ is reported however the include spells
its path, and so is one that includes a header of its own layer or above,
directly or through a header of no layer. It once looked each name up as written in src/ first, so
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
        # Up the layers: pool.c (layer 2) may not include top.h (top.c, layer
        # 1) itself, nor through a header of no layer (plain.h), nor a header
        # of its own layer (side.h). These passed once: only direct
        # includes of a layer strictly above were looked at.
        for d, f in (("src", "top.h"), ("src", "top.c"), ("src", "side.h"), ("src", "side.c")):
            open(os.path.join(root, d, f), "w").close()
        with open(os.path.join(root, "src", "plain.h"), "w") as f:
            f.write('#include "top.h"\n')
        order = {"top": 1, "pool": 2, "side": 2}
        for inc, want in (('"top.h"', "includes top.h"), ('"plain.h"', "through plain.h"),
                          ('"side.h"', "includes side.h")):
            with open(os.path.join(root, "src", "pool.c"), "w") as f:
                f.write(f'#include "pool.h"\n#include {inc}\n')
            bad = problems(root, order)
            if len(bad) != 1 or want not in bad[0]:
                print(f"#include {inc} in src/pool.c (layer 2): {bad or 'not reported'}")
                fails += 1
    print(f"{len(SPELLINGS) + 4} cases, {fails} wrong")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
