# The installed library is complete: `meson install` into a temporary root, then examples/c is
# compiled with `pkg-config --cflags --libs dbs` against that root only (no source tree, no build
# tree), run on 2 MPI ranks, and its plans checked: the slow rank 1 gets the smaller batch, and
# every sample of every epoch is trained exactly once per epoch.
source "$(dirname "$0")/common.bash"
command -v mpicc >/dev/null || { echo "mpicc not found (apt-get install libopenmpi-dev)"; exit 77; }
DEST=$TMP/root
meson install -C "$BUILD" --no-rebuild --destdir "$DEST" >"$TMP/install.log" 2>&1 ||
  fail "meson install: $(tail -5 "$TMP/install.log")"
pc=$(find "$DEST" -name dbs.pc | head -n 1)
[ -n "$pc" ] || fail "no dbs.pc installed"
for h in dbs.h version.h plan.h planner.h meter.h steps.h error.h; do
  [ -n "$(find "$DEST" -path "*/include/dbs/$h")" ] || fail "<dbs/$h> not installed"
done
lib=$(find "$DEST" -name 'libdbs.so.*.*' | head -n 1)
[ -n "$lib" ] || fail "libdbs.so not installed"
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
major=$(sed -n 's/^#define DBS_API_VERSION_MAJOR //p' "$(find "$DEST" -path '*/include/dbs/version.h')")
[ "$soname" = "libdbs.so.$major" ] || fail "SONAME '$soname', expected libdbs.so.$major"

# Only the installed root: pkg-config reads its dbs.pc and prefixes its paths with the root.
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_LIBDIR=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$DEST
flags=$(pkg-config --cflags --libs dbs) || fail "pkg-config --cflags --libs dbs failed"
grep -q -- "-I$DEST" <<<"$flags" || fail "pkg-config flags outside the root: $flags"
cp examples/c/mpi_loop.c "$TMP/"
(cd "$TMP" && mpicc -std=c99 -Wall -Wextra -Werror mpi_loop.c $flags -o mpi_loop) ||
  fail "examples/c/mpi_loop.c does not compile against the installed tree"
export LD_LIBRARY_PATH=$(dirname "$lib")
# (ldd's output captured first: grep -q ending the pipe early fails it under pipefail)
libs=$(ldd "$TMP/mpi_loop")
grep -q "$DEST" <<<"$libs" || fail "mpi_loop does not load the installed libdbs: $libs"
"${MPIRUN[@]}" -np 2 -x LD_LIBRARY_PATH "$TMP/mpi_loop" dbs-rate 3 >"$TMP/out" 2>&1 ||
  fail "mpi_loop: $(cat "$TMP/out")"
cat "$TMP/out"
grep -qx "epoch 1 plan 64 64 (initial)" "$TMP/out" || fail "no initial equal plan"
read -r b0 b1 < <(sed -n 's/^final plan \([0-9]*\) \([0-9]*\) (embedded)$/\1 \2/p' "$TMP/out")
[ -n "${b1:-}" ] || fail "no final plan line"
[ "$((b0 + b1))" -eq 128 ] || fail "final plan $b0 + $b1 != 128"
[ "$b1" -lt "$b0" ] || fail "the slow rank 1 kept batch $b1 >= rank 0's $b0"
grep -qx "ok: 18000 of 18000 samples trained" "$TMP/out" || fail "samples not covered exactly"

# A bad setting on the same build: one clear error, every rank ended, non-zero exit.
rc=0
"${MPIRUN[@]}" -np 2 -x LD_LIBRARY_PATH "$TMP/mpi_loop" fixed:64,32,32 1 >"$TMP/bad" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "fixed:64,32,32 on 2 ranks did not fail"
grep -q "fixed:64,32,32" "$TMP/bad" || fail "the error does not name the spec: $(cat "$TMP/bad")"
echo "installed C library: ok ($soname)"

# The C++ API from the same root: examples/cpp links only the symbols libdbs exports.
command -v g++ >/dev/null || fail "g++ not found"
cp examples/cpp/plan_epochs.cpp "$TMP/"
(cd "$TMP" && g++ -std=c++20 -Wall -Wextra -Werror plan_epochs.cpp $flags -o plan_epochs) ||
  fail "examples/cpp/plan_epochs.cpp does not compile or link against the installed tree"
"$TMP/plan_epochs" >"$TMP/cpp.out" 2>&1 || fail "plan_epochs: $(cat "$TMP/cpp.out")"
cat "$TMP/cpp.out"
grep -qx "ok: 18000 of 18000 samples trained" "$TMP/cpp.out" || fail "plan_epochs: samples not covered"
rc=0
"$TMP/plan_epochs" fixed:64,64 >"$TMP/cpp.bad" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "fixed:64,64" "$TMP/cpp.bad" ||
  fail "a bad policy was not a dbs::ConfigError naming it (exit $rc): $(cat "$TMP/cpp.bad")"

# Only the API is exported: the C functions and the C++ classes and functions of include/dbs,
# under the version node DBS_<major>; no symbol of the library's internals.
names=$(nm -DC --defined-only "$lib" | cut -d' ' -f3-)
internal=$(grep -E '^((vtable|typeinfo|typeinfo name) for )?(dbs::[a-z_]+::|nlohmann|std::|__gnu)' <<<"$names" || true)
[ -z "$internal" ] || fail "libdbs exports internal symbols, e.g.: $(head -n 3 <<<"$internal")"
grep -q '^dbs_planner_create@@DBS_'"$major"'$' <<<"$names" ||
  fail "libdbs's symbols carry no version node DBS_$major"
echo "exported: $(grep -c '^dbs_' <<<"$names") C functions, $(grep -c '^dbs::' <<<"$names") C++ symbols"
echo "installed C++ API: ok"
