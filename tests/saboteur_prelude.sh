# saboteur_prelude.sh: the set-up the script tests that drive the saboteur runner
# share, sourced (not run) as the first thing after `set -u`:
#
#     . "$(dirname "$0")/saboteur_prelude.sh"
#
# with the test's first argument the runner (build/kcs). It sets
#   python     $KCS_PYTHON, else Debian's /usr/bin/python3 (the report's modules)
#   source     the repository's root
#   kcs        the runner, as an absolute path
#   saboteur   build/kcs-saboteur beside it (tests/saboteur_*.c), absolute
#   work       a fresh folder, removed when the script exits, and the current
#              directory, so that a test writes nowhere else
# A script that sets its own EXIT trap removes "$work" there itself.
python=${KCS_PYTHON:-/usr/bin/python3}
source=$(cd "$(dirname "$0")/.." && pwd)
kcs=$(realpath "$1")
saboteur=$(realpath "$(dirname "$1")/kcs-saboteur")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
