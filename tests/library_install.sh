#!/bin/sh
# library_install.sh: the installed kcs libraries, used the way a program outside the tree uses them.
#
#   sh tests/library_install.sh MANIFEST EXAMPLES_SOURCE_DIR [DEVICE_BACKEND...]
#
# Installs with tools/install.sh (what `ninja install` runs) into a temporary
# DESTDIR, then checks: every file of the manifest is there and nothing else
# was written, the test-only op (scale) neither installed nor exported; each
# shared library has its versioned soname and exports only kcs_* symbols; a
# program written here, outside the source tree, compiles and links with
# `pkg-config --cflags --libs kcs_ref` (shared) and with --static, and with
# kcs_opencl where it was built, and runs on the reference and on POCL: sums
# of squares with a closed form, the anneal steps on device buffers
# asynchronously, a call with a too-small buffer that must fail with a message
# naming the buffer, and a call of scale, which must be unknown; the examples,
# copied out of the tree and built with the command docs/library.md gives
# (pkg-config --define-prefix on the DESTDIR install), offer every device
# backend built and run on the reference and on OpenCL, the anneal example
# comparing its iterations with the reference library within their bounds;
# uninstall leaves no file behind.
set -eu
manifest=$1 examples_source=$2
shift 2
device_backends="$*"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/stage
# The prefix configure.py was given (the pkg-config files carry it).
prefix=$(sed -n 's/^prefix=//p' "$(dirname "$manifest")/lib/pkgconfig/kcs_ref.pc")
fail() { echo "FAIL: $*"; exit 1; }

DESTDIR=$stage sh tools/install.sh install $prefix "$manifest" > "$work/install.log"
root=$stage$prefix
outside=$(find "$stage" -type f -o -type l | grep -v "^$stage$prefix/" || true)
[ -z "$outside" ] || fail "install wrote outside DESTDIR/PREFIX: $outside"
expected=$(grep -c '^file\|^link' "$manifest")
installed=$(find "$root" -type f -o -type l | wc -l)
[ "$installed" -eq "$expected" ] || fail "the manifest names $expected files, $installed were installed"
echo "installed $installed files under DESTDIR=$stage PREFIX=$prefix"
[ ! -e "$root/include/kcs/kcs_ref_scale.h" ] || fail "the test-only op's header kcs_ref_scale.h is installed"
! grep -q 'kcs_ref_scale' "$root"/include/kcs/*.h || fail "an installed header declares the test-only op scale"

for library in ref $device_backends; do
    so=$root/lib/libkcs_$library.so
    [ -L "$so" ] && [ -L "$so.0" ] && [ -f "$(readlink -f "$so")" ] || fail "libkcs_$library.so symlinks"
    soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
    [ "$soname" = "libkcs_$library.so.0" ] || fail "libkcs_$library.so has soname '$soname'"
    others=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^kcs_' || true)
    [ -z "$others" ] || fail "libkcs_$library.so exports more than kcs_*: $(echo $others | head -c 300)"
    echo "libkcs_$library.so: soname $soname, exports $(nm -D --defined-only "$so" | wc -l) kcs_* symbols only"
    [ -f "$root/lib/libkcs_$library.a" ] || fail "no static libkcs_$library.a"
done
nm -D --defined-only "$root/lib/libkcs_ref.so" | grep -q ' kcs_ref_sumsq_f64$' || fail "kcs_ref_sumsq_f64 not exported"
nm -D --defined-only "$root/lib/libkcs_ref.so" | grep -q ' kcs_call$' || fail "kcs_call not exported"
! nm -D --defined-only "$root/lib/libkcs_ref.so" | grep -q ' kcs_backend_find_kernel$' || fail "an internal symbol is exported"
for archive in "$root"/lib/libkcs_*.a; do
    ! nm "$archive" 2>/dev/null | grep -q ' kcs_op_scale$\| kcs_ref_scale_\| kcs_[a-z]*_scale_kernels$' ||
        fail "$(basename "$archive") holds the test-only op scale"
done

export PKG_CONFIG_PATH=$root/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$stage PKG_CONFIG_LIBDIR=
cat > "$work/program.c" <<'PROGRAM'
/* A program outside the kcs tree: the reference library, then the device API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <kcs/kcs_ref.h>
#include <kcs/kcs_device.h>
#ifdef WITH_OPENCL
#include <kcs/kcs_device_opencl.h>
#endif

static int check(kcs_status status, const kcs_error *err)
{
    if (status != KCS_OK) {
        fprintf(stderr, "program: %s\n", err->message);
        exit(1);
    }
    return 0;
}

int main(void)
{
    enum { n = 1000 };
    double x[n];
    for (int i = 0; i < n; i++)
        x[i] = i + 1;
    double closed = (double)n * (n + 1) * (2 * n + 1) / 6; /* 333833500, exact in double */
    if (kcs_ref_sumsq_f64(x, n) != closed) {
        fprintf(stderr, "program: kcs_ref_sumsq_f64 gave %.17g, not %.17g\n", kcs_ref_sumsq_f64(x, n), closed);
        return 1;
    }
    kcs_error err = {{0}};
    kcs_context *context;
#ifdef WITH_OPENCL
    check(kcs_open_opencl(0, 0, &context, &err), &err);
#else
    check(kcs_open_reference(&context, &err), &err);
#endif
    printf("library %s on %s (%s)\n", kcs_library_version(), kcs_context_device_name(context),
           kcs_context_backend(context));
    kcs_device_buffer *bx, *bs, *small;
    check(kcs_allocate(context, sizeof x, &bx, &err), &err);
    check(kcs_allocate(context, sizeof(double), &bs, &err), &err);
    check(kcs_upload(context, bx, x, sizeof x, &err), &err);
    kcs_op_args args = {.op = "sumsq", .dtype = KCS_F64, .sumsq = {.n = n}};
    for (int call = 0; call < 3; call++) /* asynchronous, back to back on the queue */
        check(kcs_call(context, &args, NULL, (kcs_device_buffer *[]){bx}, (kcs_device_buffer *[]){bs}, &err), &err);
    double s = 0;
    check(kcs_download(context, bs, &s, sizeof s, &err), &err);
    if (s != closed) { /* every partial sum is an integer below 2^53: exact in any order */
        fprintf(stderr, "program: sumsq on the device gave %.17g, not %.17g\n", s, closed);
        return 1;
    }
    /* assign: 4 points of 2 dimensions, 2 anchors; exact (small integers). */
    float points[8] = {0, 0, 1, 1, 9, 9, 10, 10}, anchors[4] = {10, 10, 0, 1};
    kcs_device_buffer *bp, *ba, *bidx, *bdist;
    check(kcs_allocate(context, sizeof points, &bp, &err), &err);
    check(kcs_allocate(context, sizeof anchors, &ba, &err), &err);
    check(kcs_allocate(context, 4 * sizeof(int), &bidx, &err), &err);
    check(kcs_allocate(context, 4 * sizeof(float), &bdist, &err), &err);
    check(kcs_upload(context, bp, points, sizeof points, &err), &err);
    check(kcs_upload(context, ba, anchors, sizeof anchors, &err), &err);
    kcs_op_args assign = {.op = "assign", .dtype = KCS_F32, .assign = {.n = 4, .d = 2, .m = 2}};
    check(kcs_call(context, &assign, NULL, (kcs_device_buffer *[]){bp, ba}, (kcs_device_buffer *[]){bidx, bdist},
                   &err), &err);
    check(kcs_finish(context, &err), &err);
    int idx[4];
    float dist[4];
    check(kcs_download(context, bidx, idx, sizeof idx, &err), &err);
    check(kcs_download(context, bdist, dist, sizeof dist, &err), &err);
    int want_idx[4] = {1, 1, 0, 0};
    float want_dist[4] = {1, 1, 2, 0};
    for (int i = 0; i < 4; i++)
        if (idx[i] != want_idx[i] || dist[i] != want_dist[i]) {
            fprintf(stderr, "program: assign point %d: idx %d dist %g, expected %d %g\n", i, idx[i], dist[i],
                    want_idx[i], want_dist[i]);
            return 1;
        }
    /* A buffer too small for the op is refused before any kernel runs, saying which. */
    check(kcs_allocate(context, 8, &small, &err), &err);
    kcs_status status = kcs_call(context, &args, NULL, (kcs_device_buffer *[]){small}, (kcs_device_buffer *[]){bs}, &err);
    if (status == KCS_OK || !strstr(err.message, "input 0 (x) needs 8000 bytes, its buffer has 8")) {
        fprintf(stderr, "program: a too-small buffer gave status %d, '%s'\n", (int)status, err.message);
        return 1;
    }
    printf("refused as it should: %s\n", err.message);
    /* scale is the tests' op (tests/cases/): the runner has it, the libraries do not. */
    kcs_op_args scale = {.op = "scale", .dtype = KCS_F64};
    status = kcs_call(context, &scale, NULL, (kcs_device_buffer *[]){bx}, (kcs_device_buffer *[]){bx}, &err);
    if (status == KCS_OK || !strstr(err.message, "there is no op 'scale'")) {
        fprintf(stderr, "program: the test-only op scale gave status %d, '%s'\n", (int)status, err.message);
        return 1;
    }
    printf("refused as it should: %s\n", err.message);
    kcs_close(context);
    printf("ok\n");
    return 0;
}
PROGRAM

run_program() { # NAME PACKAGE [static] [CFLAGS]
    name=$1 package=$2 how=$3 extra=$4
    if [ "$how" = static ]; then
        libs="-Wl,-Bstatic $(pkg-config --libs-only-L --libs-only-l $package | tr ' ' '\n' | grep '^-lkcs_' | tr '\n' ' ')-Wl,-Bdynamic"
        libs="$(pkg-config --libs-only-L $package) $libs $(pkg-config --static --libs $package | tr ' ' '\n' | grep -v '^-lkcs_\|^-L' | tr '\n' ' ')"
    else
        libs=$(pkg-config --libs $package)
    fi
    cflags=$(pkg-config --cflags $package)
    echo "cc program.c $cflags $extra $libs"
    (cd "$work" && cc -std=c11 -Wall -Werror -o "$name" program.c $cflags $extra $libs) || fail "$name did not build"
    if [ "$how" = static ]; then
        ! ldd "$work/$name" | grep -q libkcs_ || fail "$name is linked statically yet needs a shared libkcs"
    fi
    LD_LIBRARY_PATH=$root/lib "$work/$name" || fail "$name failed"
}
run_program reference-shared kcs_ref shared ""
run_program reference-static kcs_ref static ""
case " $device_backends " in *" opencl "*)
    run_program opencl-shared kcs_opencl shared -DWITH_OPENCL
    run_program opencl-static kcs_opencl static -DWITH_OPENCL ;;
esac

# The examples, as a user builds them: copied out of the tree, compiled with
# the command docs/library.md gives, pkg-config pointed at the DESTDIR install
# with --define-prefix (the program above used PKG_CONFIG_SYSROOT_DIR).
examples=$work/examples
mkdir "$examples"
cp "$examples_source"/*.c "$examples_source"/*.h "$examples"
packages="kcs_ref$(for b in $device_backends; do printf ' kcs_%s' "$b"; done)"
for source in "$examples"/*.c; do
    name=$(basename "$source" .c)
    flags=$(env -u PKG_CONFIG_SYSROOT_DIR pkg-config --define-prefix --cflags --libs $packages)
    echo "cc -O2 -o $name $name.c $flags -lm"
    (cd "$examples" && cc -O2 -o "$name" "$name.c" $flags -lm) || fail "examples/$name.c did not build outside the tree"
done
export LD_LIBRARY_PATH=$root/lib
# Every device backend built is offered: on this machine CUDA has no device,
# so its example must get as far as kcs_open_cuda.
for backend in $device_backends; do
    message=$("$examples/sumsq" --backend $backend --n 1000 --calls 2 2>&1) && continue
    echo "$message" | grep -q "no backend '$backend'" && fail "examples/sumsq does not offer $backend: $message"
    echo "examples/sumsq on $backend here: $message"
done
# The examples, on every backend that runs here (not CUDA: no GPU on the build machine).
for backend in reference $(echo " $device_backends " | grep -o ' opencl '); do
    "$examples/sumsq" --backend $backend --n 100000 --calls 3 || fail "examples/sumsq on $backend"
    "$examples/anneal" --backend $backend --n 3000 --d 16 --m 24 --iterations 4 --compare 3 > "$work/anneal.log" ||
        { cat "$work/anneal.log"; fail "examples/anneal on $backend"; }
    cat "$work/anneal.log"
    [ "$(grep -c 'counts equal, anchors and velocities within their bounds' "$work/anneal.log")" -eq 3 ] ||
        fail "examples/anneal on $backend compared fewer than 3 iterations in full"
done
# The probe through the installed library (lib/kcs_probe.h), beside the anneal loop on the reference.
"$examples/anneal" --backend reference --n 3000 --d 16 --m 24 --iterations 4 --compare 0 --async --probe 0.001 \
    > "$work/anneal.log" || { cat "$work/anneal.log"; fail "examples/anneal --probe"; }
grep -q "^probe: 4 steps passed, 0 mismatched, 0 undecided" "$work/anneal.log" ||
    { cat "$work/anneal.log"; fail "examples/anneal --probe: its 4 probe steps did not all pass"; }

DESTDIR=$stage sh tools/install.sh uninstall $prefix "$manifest" > /dev/null
left=$(find "$stage" -type f -o -type l)
[ -z "$left" ] || fail "uninstall left $left"
echo "library_install: all checks passed"
