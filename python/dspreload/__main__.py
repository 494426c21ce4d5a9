"""python -m dspreload: the dspreload command from the package.

``--lib`` alone prints the bundled library's path; anything else goes to the
bundled launcher unchanged, so options, subcommands (doctor, demo, ...) and
exit status are the C command's. The launcher finds the library beside itself.
"""

import os
import sys

from . import launcher_path, library_path


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ['--lib']:
        print(library_path())
        return 0
    launcher = launcher_path()
    try:
        os.execv(launcher, [launcher] + args)
    except OSError as e:
        print(f'dspreload: cannot run {launcher}: {e.strerror}', file=sys.stderr)
        return 126


if __name__ == '__main__':
    sys.exit(main())
