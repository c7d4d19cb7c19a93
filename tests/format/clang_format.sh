#!/usr/bin/env bash
# The product's C++ files in the layout of .clang-format, by clang-format-14 (Debian's).
#   tests/format/clang_format.sh           rewrites every file that differs (clang-format -i)
#   tests/format/clang_format.sh --check   changes nothing; names each file that differs and
#                                          its first line that does, and exits 1 (the meson
#                                          test `format`, suite docs)
# The files: *.c, *.cpp and *.h tracked by git (or, outside a git checkout, found) under the
# product's folders; the tests keep their own layout. Exits 77 (the reason on the last line) where
# clang-format-14 is missing: apt-get install clang-format-14 (tests/run.sh installs it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
FOLDERS=(agents bench examples include lab lib python scheduler)
FORMAT=clang-format-14

check=0
case ${1:-} in
  "") ;;
  --check) check=1 ;;
  *) echo "usage: tests/format/clang_format.sh [--check]" >&2; exit 2 ;;
esac
command -v "$FORMAT" >/dev/null || {
  echo "skipped: $FORMAT missing (apt-get install clang-format-14)"
  exit 77
}

files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  while IFS= read -r f; do [ -f "$f" ] && files+=("$f"); done < <(
    git ls-files -- "${FOLDERS[@]/%//*.c}" "${FOLDERS[@]/%//*.cpp}" "${FOLDERS[@]/%//*.h}")
else
  while IFS= read -r f; do files+=("$f"); done < <(
    find "${FOLDERS[@]}" -type f \( -name '*.c' -o -name '*.cpp' -o -name '*.h' \) | sort)
fi
[ ${#files[@]} -gt 0 ] || { echo "no C++ files found under ${FOLDERS[*]}" >&2; exit 1; }

if [ "$check" -eq 0 ]; then
  "$FORMAT" -i --style=file "${files[@]}"
  echo "formatted ${#files[@]} files"
  exit 0
fi
# One clang-format over every file (it reports them all); its complaints grouped per file.
out=$("$FORMAT" --dry-run --Werror --style=file "${files[@]}" 2>&1) && {
  echo "${#files[@]} files in the layout of .clang-format"
  exit 0
}
# "FILE:LINE:COL: error: ..." lines: each file once, with its first line that differs.
bad=$(awk -F: '/^[^ :]+:[0-9]+:[0-9]+: error:/ && !seen[$1]++ {
  print $1 ": not in the layout of .clang-format, first at line " $2 }' <<<"$out")
[ -n "$bad" ] || { echo "$FORMAT failed: $out" >&2; exit 1; }
echo "$bad"
echo "$(wc -l <<<"$bad") of ${#files[@]} files differ from .clang-format; apply it: tests/format/clang_format.sh"
exit 1
