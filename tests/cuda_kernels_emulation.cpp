/* cuda_kernels_emulation.cpp: cuda/elementwise.cu, cuda/softmax.cu and the
 * anneal steps' cuda/assign.cu, reduce.cu, update.cu and energy.cu run on the
 * host (tests/cuda_kernels_emulation.sh builds and runs it;
 * tests/cuda_kernels_emulation.h says what is emulated).
 *
 * Each test takes a kernel row from the table its file exports (by op,
 * dtype and variant) and calls its run function, as the runner would, on
 * buffers of exactly the array's size (AddressSanitizer catches a read or
 * write past them) poisoned with NaN bits, sometimes starting a few bytes
 * past an alignment boundary, with small grids (one or two SMs' worth) so
 * that the persistent loops go round, and checks every output:
 *   elementwise  bit for bit against the same formula on the host (f16 and
 *                bf16 widened, computed in float, rounded once), over
 *                special values, sizes around the vector width, misaligned
 *                and differently aligned arrays, in all four types;
 *   softmax      every row (auto and the four kernel families) on every
 *                shape its supports() takes: against long double within
 *                1e-5 (f32) or 1e-13 (f64) relative, NaN rows, masked
 *                entries exactly 0, for shapes that select every
 *                configuration (warp groups of 1 to 32 lanes, the block
 *                of 128, 256 and 512 threads with and without
 *                shared-memory slots, clusters of 2 to 16 blocks with
 *                slices of nothing but -inf, the online kernel, vector and
 *                scalar slots); auto bit for bit the same as the family it
 *                picks; the block size the block family picks for a row
 *                length, a block a row, and the cluster size the cluster
 *                family picks; auto without clusters (compute capability
 *                8.0, or a stub built below sm_90); where each family's
 *                supports() stops, and run() refusing rows that
 *                misalignment makes too long or clusters the device
 *                cannot place;
 *   assign       both variants, f32 and f16: idx against long double (only
 *                near ties of random data may differ; ties of integer data
 *                must go to the smallest index) and dist within gamma(d + 2);
 *   reduce       counts exactly, mean and var within 1e-6 relative of long
 *                double, with empty anchors, d beyond a panel of 128, all
 *                points on one anchor;
 *   update       bit for bit; energy against long double, NaN and n = 0.
 *
 *     tests/cuda_kernels_emulation.sh [--quick] [elementwise|softmax|assign|reduce|update|energy]
 *
 * --quick keeps every kernel and configuration, the special values and the
 * misaligned arrays, with fewer sizes, kinds of data and rows.
 */
#include "cuda_kernels_emulation.h"

#include <functional>
#include <random>
#include <string>
#include <vector>

/* The tables the sources export (cuda/<op>.cu). */
extern "C" const kcs_kernel_table kcs_cuda_elementwise_kernels, kcs_cuda_softmax_kernels, kcs_cuda_assign_kernels,
    kcs_cuda_reduce_kernels, kcs_cuda_update_kernels, kcs_cuda_energy_kernels;

/* The row of a table for op, dtype and variant, found as the runner finds it. */
static const kcs_kernel &row_of(const kcs_kernel_table &table, const char *op, kcs_dtype dtype, const char *variant)
{
    for (size_t i = 0; i < table.count; i++) {
        const kcs_kernel &row = table.rows[i];
        if (std::strcmp(row.op, op) == 0 && row.dtype == dtype && std::strcmp(row.variant, variant) == 0)
            return row;
    }
    std::fprintf(stderr, "emulation: no row %s %d %s\n", op, (int)dtype, variant);
    std::exit(2);
}

static long failures = 0, checks = 0;
static std::mt19937_64 rng(12345);
static bool quick = false; /* --quick: see the header comment */

#define EXPECT(cond, ...)                                                                                 \
    do {                                                                                                  \
        checks++;                                                                                         \
        if (!(cond)) {                                                                                    \
            if (failures < 40) {                                                                          \
                std::printf("FAIL %s:%d: ", __FILE__, __LINE__);                                          \
                std::printf(__VA_ARGS__);                                                                 \
                std::printf("\n");                                                                        \
            }                                                                                             \
            failures++;                                                                                   \
        }                                                                                                 \
    } while (0)

/* Host memory of exactly `bytes` (ASan sees overruns), optionally starting `offset` bytes into it. */
struct host_buffer {
    std::vector<unsigned char> storage;
    kcs_buffer buffer;
    host_buffer(size_t bytes, size_t offset = 0) : storage(bytes + offset)
    {
        buffer.data = storage.data() + offset;
        buffer.bytes = bytes;
        if (bytes) std::memset(buffer.data, 0xff, bytes); /* poison: NaN for floats, -1 for ints */
    }
    template <typename T> T *as() { return (T *)buffer.data; }
};

static int emu_compute_capability = 90; /* the emulated device's, as kcs_device has it: 90 runs clusters */

static kcs_device make_device(int sm_count, int blocks_per_sm)
{
    emu_blocks_per_sm = blocks_per_sm;
    kcs_device d{};
    d.sm_count = sm_count;
    d.compute_capability = emu_compute_capability;
    static unsigned int counter = 0;
    d.blocks_done = &counter;
    return d;
}

static bool same_bits_or_both_nan(double a, double b)
{
    return (std::isnan(a) && std::isnan(b)) || a == b;
}

/* ---------------------------------------------------------------- elementwise */

/* value as a T: rounded to the type (through float for the 16-bit types, as
 * any input will do here). */
template <typename T> static T from_double(double value)
{
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
        return (T)value;
    else
        return kcs_narrow<T>((float)value);
}

template <typename T> static const char *type_name()
{
    if constexpr (std::is_same_v<T, float>) return "f32";
    else if constexpr (std::is_same_v<T, double>) return "f64";
    else if constexpr (std::is_same_v<T, __half>) return "f16";
    else return "bf16";
}

template <typename T> static T special_value(std::mt19937_64 &r)
{
    static const double values[] = {0.0, -0.0, 1e-310, -1e-310, 1e-40, -1e-40, 1e300, -1e300, 3e38, -3e38,
                                    INFINITY, -INFINITY, NAN, 1.0, -2.5, 88.0, -88.0, 100.0, -100.0, 750.0, -750.0,
                                    /* f16's edges: the largest, past it, a subnormal, the smallest normal */
                                    65504.0, -65504.0, 70000.0, 1e-7, -1e-7, 0x1p-14};
    std::uniform_int_distribution<int> pick(0, sizeof values / sizeof values[0] - 1);
    std::normal_distribution<double> normal(0.0, 4.0);
    if (r() % 3 == 0)
        return from_double<T>(values[pick(r)]);
    return from_double<T>(normal(r));
}

/* f in the compute type of T (float for f16 and bf16), rounded once to T. */
template <typename T> static T host_apply(int f, T x_stored, T y_stored)
{
    using C = kcs_compute<T>;
    const C x = kcs_widen(x_stored), y = kcs_widen(y_stored);
    switch (f) {
    case 0: return kcs_narrow<T>(x + y);
    case 1: return kcs_narrow<T>(x * y);
    case 2: return kcs_narrow<T>(x < C(0) ? C(0) : x);
    default:
        if constexpr (std::is_same_v<C, float>)
            return kcs_narrow<T>(1.0f / (1.0f + expf(-x)));
        else
            return 1.0 / (1.0 + exp(-x));
    }
}

template <typename T>
static void test_elementwise(int f, kcs_kernel_run *run, size_t n, size_t offset_x, size_t offset_y, size_t offset_out,
                             int sm, int bps)
{
    kcs_device device = make_device(sm, bps);
    host_buffer x(n * sizeof(T), offset_x), y(n * sizeof(T), offset_y), out(n * sizeof(T), offset_out);
    for (size_t i = 0; i < n; i++) {
        x.as<T>()[i] = special_value<T>(rng);
        y.as<T>()[i] = special_value<T>(rng);
    }
    kcs_op_args args{};
    args.op = f == 0 ? "add" : f == 1 ? "mul" : f == 2 ? "relu" : "sigmoid";
    args.elementwise.n = n;
    kcs_buffer *inputs[] = {&x.buffer, &y.buffer}, *outputs[] = {&out.buffer};
    double seconds;
    kcs_error err{};
    kcs_status status = run(&device, &args, inputs, outputs, &seconds, &err);
    EXPECT(status == KCS_OK, "%s status %d: %s", args.op, status, err.message);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        T expected = host_apply<T>(f, x.as<T>()[i], f <= 1 ? y.as<T>()[i] : x.as<T>()[i]);
        if (!same_bits_or_both_nan(kcs_widen(expected), kcs_widen(out.as<T>()[i])))
            bad++;
    }
    EXPECT(bad == 0, "%s %s n=%zu offsets %zu %zu %zu: %zu wrong", args.op, type_name<T>(), n, offset_x, offset_y,
           offset_out, bad);
}

static void elementwise_tests()
{
    const char *const names[] = {"add", "mul", "relu", "sigmoid"};
    kcs_kernel_run *f32[4], *f64[4], *f16[4], *bf16[4];
    for (int f = 0; f < 4; f++) {
        f32[f] = row_of(kcs_cuda_elementwise_kernels, names[f], KCS_F32, "one-pass").run;
        f64[f] = row_of(kcs_cuda_elementwise_kernels, names[f], KCS_F64, "one-pass").run;
        f16[f] = row_of(kcs_cuda_elementwise_kernels, names[f], KCS_F16, "one-pass").run;
        bf16[f] = row_of(kcs_cuda_elementwise_kernels, names[f], KCS_BF16, "one-pass").run;
    }
    const std::vector<size_t> sizes =
        quick ? std::vector<size_t>{0, 7, 93, 5003} : std::vector<size_t>{0, 1, 3, 7, 93, 1000, 5003, 70001};
    for (int f = 0; f < 4; f++)
        for (size_t n : sizes) {
            test_elementwise<float>(f, f32[f], n, 0, 0, 0, 2, 2);
            test_elementwise<double>(f, f64[f], n, 0, 0, 0, 2, 2);
            test_elementwise<__half>(f, f16[f], n, 0, 0, 0, 2, 2);
            test_elementwise<__nv_bfloat16>(f, bf16[f], n, 0, 0, 0, 2, 2);
        }
    for (int f = 0; f < 4; f++) {
        test_elementwise<float>(f, f32[f], 1001, 4, 4, 4, 1, 1);   /* same misalignment: vectors with a head */
        test_elementwise<float>(f, f32[f], 1001, 8, 4, 8, 1, 2);   /* different: scalar loop (binary ops) */
        test_elementwise<float>(f, f32[f], 2, 12, 12, 12, 1, 1);   /* n smaller than the head */
        test_elementwise<double>(f, f64[f], 1001, 8, 8, 8, 3, 1);
        test_elementwise<double>(f, f64[f], 999, 0, 8, 0, 3, 1);
        test_elementwise<__half>(f, f16[f], 1001, 6, 6, 6, 1, 1);           /* vectors after a head of 5 */
        test_elementwise<__half>(f, f16[f], 1001, 2, 4, 2, 1, 2);           /* different: scalar loop (binary ops) */
        test_elementwise<__nv_bfloat16>(f, bf16[f], 3, 10, 10, 10, 1, 1);   /* n smaller than the head of 3 */
        test_elementwise<__nv_bfloat16>(f, bf16[f], 2003, 14, 14, 14, 3, 1); /* a head of 1 */
        test_elementwise<__nv_bfloat16>(f, bf16[f], 999, 0, 2, 0, 3, 1);
    }
}

/* ---------------------------------------------------------------- softmax */

/* cuda/softmax.cu's rows: "auto", then the families in the order auto tries them. */
static const char *const softmax_variants[] = {"auto", "warp-groups", "block-resident", "cluster", "online"};

static kcs_op_args softmax_args(size_t rows, size_t cols)
{
    kcs_op_args args{};
    args.op = "softmax";
    args.softmax.rows = rows;
    args.softmax.cols = cols;
    return args;
}

/* The dtype of element type T, and an element of it as a long double (f16 and bf16 widened exactly). */
template <typename T> static kcs_dtype dtype_of()
{
    if constexpr (std::is_same_v<T, float>) return KCS_F32;
    else if constexpr (std::is_same_v<T, double>) return KCS_F64;
    else if constexpr (std::is_same_v<T, __half>) return KCS_F16;
    else return KCS_BF16;
}

template <typename T> static long double wide(T value)
{
    return (long double)kcs_widen(value);
}

/* rows x cols inputs of one kind (see the comments); f16 and bf16 rounded from them. */
template <typename T> static std::vector<T> softmax_input(size_t rows, size_t cols, int kind)
{
    std::vector<T> x(rows * cols);
    std::normal_distribution<double> normal(0.0, 3.0);
    for (size_t i = 0; i < rows * cols; i++) {
        double v = normal(rng);
        if (kind == 1 && rng() % 10 == 0) v = -INFINITY;             /* masked */
        if (kind == 2 && rng() % 50 == 0) v = NAN;                   /* NaN rows */
        if (kind == 3 && rng() % 50 == 0) v = INFINITY;              /* +inf rows */
        if (kind == 4) v = -INFINITY;                                /* all masked */
        if (kind == 5) v = 9990.0 + (double)(rng() % 1000) / 100.0;  /* near 1e4 */
        if (kind == 6) v = (i % cols) * 0.5;                         /* ramp: underflow */
        if (kind == 7 && rng() % 5 == 0) v = (rng() % 2 ? 1 : -1) * 3e38;
        if (kind == 8 && i % cols >= cols / 3) v = -INFINITY;        /* the row's last two thirds masked */
        if (kind == 9 && i % cols < cols / 2) v = -INFINITY;         /* the first half masked, */
        x[i] = from_double<T>(v);
    }
    if (kind == 9 && rows > 1 && cols > 1)
        x[cols + cols / 4] = from_double<T>(NAN); /* and in row 1 a NaN among them: row 1 is NaN throughout */
    if (kind == 2 && rows > 1) {
        for (size_t k = 0; k < cols; k++) x[k] = from_double<T>(NAN); /* a whole NaN row */
    }
    if (kind == 10) /* one spike a row, at the r-th element of a 16-byte slot in row r: a max that misses it leaves
                       exp(x - max) = inf (beyond f64's exp too) and the row NaN */
        for (size_t r = 0; r < rows && cols > 0; r++)
            x[r * cols + (cols / 2 / 8 * 8 + r % 8) % cols] = from_double<T>(1000.0);
    return x;
}

/* Runs row on input in buffers offset bytes past 16-byte alignment and checks every output against long
 * double: within 1e-5 (f32) or 1e-13 (f64) relative, and for f16 and bf16 within 1e-5 plus the one final
 * rounding (u_s relative, half the smallest subnormal absolute); *output gets the outputs. False when run() refused the rows (KCS_UNSUPPORTED): only rows that
 * are not 16-byte aligned, so held in 4 or 2 times as many slots as supports() assumed, may be refused. */
template <typename T>
static bool check_softmax(const kcs_kernel &row, const std::vector<T> &input, size_t rows, size_t cols, int kind,
                          size_t offset, int sm, int bps, std::vector<T> *output)
{
    kcs_device device = make_device(sm, bps);
    host_buffer x(rows * cols * sizeof(T), offset), y(rows * cols * sizeof(T), offset);
    T *xv = x.as<T>(), *yv = y.as<T>();
    if (!input.empty())
        std::memcpy(xv, input.data(), input.size() * sizeof(T));
    const kcs_op_args args = softmax_args(rows, cols);
    kcs_buffer *inputs[] = {&x.buffer}, *outputs[] = {&y.buffer};
    double seconds;
    kcs_error err{};
    kcs_status status = row.run(&device, &args, inputs, outputs, &seconds, &err);
    if (status == KCS_UNSUPPORTED && offset % 16 != 0)
        return false;
    EXPECT(status == KCS_OK, "softmax %s status %d: %s", row.variant, status, err.message);
    const kcs_dtype dtype = dtype_of<T>();
    /* f16, bf16: u_s = 2^-11, 2^-8; half the smallest subnormal, 2^-25 and 2^-134 */
    const double rounding = dtype == KCS_F16 ? 0x1p-11 : dtype == KCS_BF16 ? 0x1p-8 : 0.0;
    const double tolerance = (dtype == KCS_F64 ? 1e-13 : 1e-5) + rounding;
    const double absolute = dtype == KCS_F64 ? 4e-308 : dtype == KCS_F16 ? 0x1p-25 + 2e-38 : 2e-38;
    size_t bad = 0;
    double worst = 0;
    for (size_t r = 0; r < rows; r++) {
        const T *in = xv + r * cols;
        const T *out = yv + r * cols;
        bool special = false;
        long double max = -INFINITY;
        for (size_t k = 0; k < cols; k++) {
            if (std::isnan(wide(in[k])) || wide(in[k]) == INFINITY) special = true;
            else if (wide(in[k]) > max) max = wide(in[k]);
        }
        if (special || max == -INFINITY) {
            for (size_t k = 0; k < cols; k++)
                if (!std::isnan(wide(out[k]))) bad++;
            continue;
        }
        long double sum = 0;
        for (size_t k = 0; k < cols; k++)
            sum += expl(wide(in[k]) - max);
        for (size_t k = 0; k < cols; k++) {
            long double g = expl(wide(in[k]) - max) / sum;
            if (wide(in[k]) == -INFINITY) {
                if (wide(out[k]) != 0) bad++;
                continue;
            }
            double error = std::fabs((double)(wide(out[k]) - g));
            double allowed = tolerance * (double)g + absolute;
            if (!(error <= allowed)) {
                if (bad < 3)
                    std::printf("  softmax %s %s %zux%zu kind %d row %zu col %zu: %.9Lg vs %.9Lg\n", row.variant,
                                type_name<T>(), rows, cols, kind, r, k, wide(out[k]), g);
                bad++;
            }
            if (g > 0) worst = std::max(worst, error / (double)g);
        }
    }
    EXPECT(bad == 0, "softmax %s %s %zux%zu kind %d offset %zu: %zu wrong (worst relative %.3g)", row.variant,
           type_name<T>(), rows, cols, kind, offset, bad, worst);
    output->assign(yv, yv + rows * cols);
    return true;
}

/* Every row whose supports() takes the shape, on the same input: each checked, and auto bit for bit the
 * same as the first family that runs it (the one auto picks: cuda/softmax.cu's plan_for). */
template <typename T> static void test_softmax(size_t rows, size_t cols, int kind, size_t offset, int sm, int bps)
{
    const std::vector<T> input = softmax_input<T>(rows, cols, kind);
    const kcs_op_args args = softmax_args(rows, cols);
    std::vector<T> chosen, output;
    bool family_ran = false;
    /* auto gives the warp groups rows of at most 2 KB, 4 KB in f64 (cuda/softmax.cu, auto_group_row_bytes) */
    const bool auto_takes_groups = cols * sizeof(T) <= (sizeof(T) == 8 ? 4096 : 2048);
    for (const char *variant : softmax_variants) {
        const kcs_kernel &row = row_of(kcs_cuda_softmax_kernels, "softmax", dtype_of<T>(), variant);
        const bool automatic = std::strcmp(variant, "auto") == 0;
        kcs_device device = make_device(sm, bps);
        kcs_error err{};
        const kcs_status supported = row.supports(&device, &args, &err);
        EXPECT(supported == KCS_OK || (supported == KCS_UNSUPPORTED && !automatic), "softmax %s %zux%zu: %s",
               variant, rows, cols, err.message);
        if (supported != KCS_OK || !check_softmax<T>(row, input, rows, cols, kind, offset, sm, bps, &output))
            continue;
        if (automatic) {
            chosen = output;
        } else if (!family_ran && (auto_takes_groups || std::strcmp(variant, "warp-groups") != 0)) {
            family_ran = true;
            EXPECT(output.size() == chosen.size() &&
                       (output.empty() || std::memcmp(output.data(), chosen.data(), output.size() * sizeof(T)) == 0),
                   "softmax %s %zux%zu kind %d offset %zu: auto's bits differ from %s's", type_name<T>(), rows,
                   cols, kind, offset, variant);
        }
    }
    EXPECT(family_ran, "softmax %zux%zu: no family ran it", rows, cols);
}

/* supports(): where each family's reach ends, for rows from cudaMalloc (the emulated device has 227 KB of
 * shared memory a block), and the depth rule at both ends for the online kernel. */
static void test_softmax_reach()
{
    struct reach {
        const char *variant;
        kcs_dtype dtype;
        size_t cols;
        bool supported;
    };
    const reach reaches[] = {
        {"auto", KCS_F32, 100000000, false}, {"auto", KCS_F32, 32768, true}, {"auto", KCS_F32, 3000000, true},
        {"auto", KCS_F32, 100, true},        {"auto", KCS_F64, 1, true},
        /* 256 slots (32 lanes x 8): 1024 f32 or 512 f64 columns as vectors, 256 as elements (255: not 16-byte
         * rows) */
        {"warp-groups", KCS_F32, 1024, true}, {"warp-groups", KCS_F32, 1028, false},
        {"warp-groups", KCS_F32, 255, true},  {"warp-groups", KCS_F32, 257, false},
        {"warp-groups", KCS_F64, 512, true},  {"warp-groups", KCS_F64, 514, false},
        /* 28 shared slots a thread fit 227 KB, 29 do not */
        {"block-resident", KCS_F32, 65536, true}, {"block-resident", KCS_F32, 65540, false},
        {"block-resident", KCS_F64, 32768, true}, {"block-resident", KCS_F64, 32770, false},
        {"block-resident", KCS_F32, 1, true},
        /* depth: at most cols - 1, and at most 2048 + ceil(log2 cols) */
        {"online", KCS_F32, 3000000, true}, {"online", KCS_F32, 100000000, false},
        {"online", KCS_F32, 128, true},     {"online", KCS_F32, 100, false},
        {"online", KCS_F64, 0, true},
        /* f16 and bf16: half the register slots of f32, 8 elements to a vector slot */
        {"auto", KCS_BF16, 122888, true},     {"auto", KCS_F16, 33, true},
        {"warp-groups", KCS_BF16, 1024, true}, {"warp-groups", KCS_BF16, 1032, false},
        {"warp-groups", KCS_F16, 127, true},   {"warp-groups", KCS_F16, 129, false},
        /* 28 shared slots of 8 a thread beyond 2 in registers */
        {"block-resident", KCS_BF16, 122880, true}, {"block-resident", KCS_BF16, 122888, false},
        {"online", KCS_F16, 128, true},       {"online", KCS_BF16, 104, false},
        /* the cluster kernel: 16 blocks of at most 227 KB less 1 KB, its 192 bytes of arrays and the 8 of its
         * pairs barrier, 14451 slots of 16 bytes (14439 in f64: 384 bytes of arrays), beyond 3 a thread in
         * registers in f32 and f64 (768 a block), 1 in 16 bits (256); the depth rule (33 columns: 1 + 25
         * additions, D = 32; 27 columns: D = 26; 26 columns: D = 25) */
        {"cluster", KCS_F32, 262144, true},   {"cluster", KCS_F32, 974016, true},
        {"cluster", KCS_F32, 974020, false},  {"cluster", KCS_F64, 262144, true},
        {"cluster", KCS_F64, 486624, true},   {"cluster", KCS_F64, 486626, false},
        {"cluster", KCS_BF16, 262144, true},  {"cluster", KCS_F16, 1882496, true},
        {"cluster", KCS_F16, 1882504, false}, {"cluster", KCS_F32, 33, true},
        {"cluster", KCS_F32, 27, true},       {"cluster", KCS_F32, 26, false},
        {"cluster", KCS_F64, 4, false},
        /* auto: the cluster kernel beyond the block's reach while it holds the row, online beyond it */
        {"auto", KCS_F32, 925000, true},
    };
    for (const reach &r : reaches) {
        kcs_device device = make_device(1, 1);
        const kcs_op_args args = softmax_args(1, r.cols);
        const kcs_kernel &row = row_of(kcs_cuda_softmax_kernels, "softmax", r.dtype, r.variant);
        kcs_error err{};
        const kcs_status status = row.supports(&device, &args, &err);
        EXPECT(status == (r.supported ? KCS_OK : KCS_UNSUPPORTED), "softmax %s %s supports(%zu cols) = %d: %s",
               r.variant,
               r.dtype == KCS_F32 ? "f32" : r.dtype == KCS_F64 ? "f64" : r.dtype == KCS_F16 ? "f16" : "bf16", r.cols,
               status, err.message);
        EXPECT(r.supported || std::strstr(err.message, "softmax rows of") == err.message,
               "softmax %s %zu cols: the reason \"%s\" does not say what is refused", r.variant, r.cols,
               err.message);
    }
    /* run() refuses what supports() took when the rows turn out not to be 16-byte aligned */
    {
        const kcs_kernel &row = row_of(kcs_cuda_softmax_kernels, "softmax", KCS_F32, "warp-groups");
        kcs_device device = make_device(1, 1);
        host_buffer x(2 * 1024 * 4, 4), y(2 * 1024 * 4, 4);
        const kcs_op_args args = softmax_args(2, 1024);
        kcs_buffer *inputs[] = {&x.buffer}, *outputs[] = {&y.buffer};
        double seconds;
        kcs_error err{};
        EXPECT(row.run(&device, &args, inputs, outputs, &seconds, &err) == KCS_UNSUPPORTED,
               "softmax warp-groups: 1024 unaligned f32 columns (1024 slots) must be refused");
    }
}

/* Runs a softmax row on rows x cols of plain inputs, which it must take and get right; its launch is then in
 * emu_last_grid, emu_last_block and emu_last_cluster. */
template <typename T> static void run_softmax_row(const char *variant, size_t rows, size_t cols)
{
    const kcs_kernel &row = row_of(kcs_cuda_softmax_kernels, "softmax", dtype_of<T>(), variant);
    std::vector<T> output;
    EXPECT(check_softmax<T>(row, softmax_input<T>(rows, cols, 0), rows, cols, 0, 0, 1, 1, &output),
           "softmax %s %s %zu columns: refused", variant, type_name<T>(), cols);
}

/* Which family auto launches for rows of cols (8 rows), told by its launch. The warp groups run a warp a row:
 * for rows under 2 KB, 4 rows a block of 128 threads (2 blocks); for rows of 2 KB or more, blocks of one warp
 * (8 blocks of 32 threads: warp_block_threads, cuda/softmax.cu). The block kernel runs a block of 128 threads or
 * more a row (8 blocks). */
template <typename T> static void expect_auto_family(size_t cols, bool groups)
{
    run_softmax_row<T>("auto", 8, cols);
    const bool warp_blocks = groups && cols * sizeof(T) >= 2048;
    const unsigned grid = groups && !warp_blocks ? 2 : 8;
    const char *family = warp_blocks ? "the warp groups in blocks of one warp"
                         : groups    ? "the warp groups"
                                     : "the block kernel";
    EXPECT(emu_last_grid.x == grid, "softmax auto %s %zu columns: %u blocks for 8 rows, not %u (%s)", type_name<T>(),
           cols, emu_last_grid.x, grid, family);
    EXPECT(warp_blocks ? emu_last_block.x == 32 : groups ? emu_last_block.x == 128 : emu_last_block.x >= 128,
           "softmax auto %s %zu columns: blocks of %u threads (%s)", type_name<T>(), cols, emu_last_block.x, family);
}

static void test_softmax_auto_families()
{
    expect_auto_family<float>(512, true);
    expect_auto_family<float>(516, false); /* 2064 bytes */
    expect_auto_family<float>(1024, false);
    expect_auto_family<__nv_bfloat16>(1024, true);
    expect_auto_family<__half>(1024, true);
    expect_auto_family<__nv_bfloat16>(512, true); /* 1 KB: blocks of 128 threads */
    expect_auto_family<double>(256, true);
    expect_auto_family<double>(512, true);  /* 4 KB: f64 rows the warp groups hold */
    expect_auto_family<double>(520, false); /* more than 32 lanes of 8 double2 */
}

/* The block family's block size for rows of cols on the emulated device (227 KB of shared memory a block, as an
 * H100's; cuda/softmax.cu, plan_for): among the sizes that keep at least four blocks on an SM, the one with the
 * fewest stash slots a thread, else the one that keeps the most threads; ties to the smaller; and a block a row.
 * Each expected size is the one measured fastest, or within 1.1% of it (docs/softmax.md, Speed). */
template <typename T> static void expect_block_size(size_t cols, unsigned threads)
{
    const size_t rows = 3;
    run_softmax_row<T>("block-resident", rows, cols);
    EXPECT(emu_last_block.x == threads && emu_last_grid.x == rows,
           "softmax block-resident %s %zu columns: %u blocks of %u threads, not %zu of %u", type_name<T>(), cols,
           emu_last_grid.x, emu_last_block.x, rows, threads);
}

static void test_softmax_block_sizes()
{
    /* f32, 4 float4 a thread in registers: 2048 columns fill 128 threads' registers (8 blocks an SM), and 256
     * threads' half: no stash either way, so the smaller */
    expect_block_size<float>(2048, 128);
    /* 4096: 128 threads would stash 4 slots a thread, 256 none (4 blocks an SM) */
    expect_block_size<float>(4096, 256);
    /* 16384: 128 threads keep 3 blocks (56 KB of stash each), 256 keep 4 (48 KB), 512 only 2 */
    expect_block_size<float>(16384, 256);
    /* 32768: no size keeps 4 blocks; 512 threads keep 2 of 96 KB (1024 threads), 256 threads 2 of 112 KB */
    expect_block_size<float>(32768, 512);
    /* 65536: only 512 threads' stash (224 KB) fits */
    expect_block_size<float>(65536, 512);
    /* 16-bit, 2 uint4 a thread in registers */
    expect_block_size<__nv_bfloat16>(4096, 256);
    expect_block_size<__nv_bfloat16>(16384, 256);
    expect_block_size<__half>(32768, 512);
    /* f64, 4 double2 a thread in registers */
    expect_block_size<double>(1024, 128);
    expect_block_size<double>(4096, 256);
    expect_block_size<double>(8192, 256);
    /* rows not 16-byte aligned, 4097 element slots: 128 threads stash 29 a thread, 256 threads 13 (4 blocks) */
    expect_block_size<float>(4097, 256);
}

/* The cluster kernel's blocks a row for rows of cols (cuda/softmax.cu, plan_for): the fewest of 2, 4, 8 and 16
 * whose slices are at most 64 KB and 16384 elements, else 16; a grid of rows times that, launched with the
 * load-balancing cluster scheduling policy, and auto taking the cluster kernel beyond the block kernel's reach. */
template <typename T> static void expect_cluster_size(const char *variant, size_t rows, size_t cols, unsigned blocks)
{
    run_softmax_row<T>(variant, rows, cols);
    EXPECT(emu_last_cluster == blocks && emu_last_grid.x == rows * blocks && emu_last_block.x == 256,
           "softmax %s %s %zu columns: %u blocks of %u threads in clusters of %u, not %zu of 256 in clusters of %u",
           variant, type_name<T>(), cols, emu_last_grid.x, emu_last_block.x, emu_last_cluster, rows * blocks, blocks);
    /* the policy measured faster on an H200 (cuda/softmax.cu, launch_cluster) */
    EXPECT(emu_last_cluster_policy == cudaClusterSchedulingPolicyLoadBalancing,
           "softmax %s %s %zu columns: cluster scheduling policy %d, not load balancing (%d)", variant,
           type_name<T>(), cols, emu_last_cluster_policy, (int)cudaClusterSchedulingPolicyLoadBalancing);
}

/* The cluster kernel (cuda/softmax.cu, kcs_softmax_cluster): slices of every size and ragged ends, masked slices,
 * a NaN in a slice with no finite max, every type; auto's choice on devices with and without clusters. */
static void test_softmax_clusters()
{
    /* 2 blocks: to 32768 f32 columns (64 KB slices); 4 to 65536; 8 to 131072; then 16. 16-bit: the same
     * columns (32 KB slices); f64: half of them (64 KB) */
    expect_cluster_size<float>("cluster", 3, 1000, 2);
    expect_cluster_size<float>("cluster", 1, 32769, 4);
    expect_cluster_size<float>("auto", 1, 65540, 8);
    if (!quick) {
        expect_cluster_size<float>("cluster", 1, 131076, 16);
        expect_cluster_size<__nv_bfloat16>("auto", 1, 262144, 16);
        expect_cluster_size<double>("auto", 1, 70000, 16);
    }
    expect_cluster_size<__half>("auto", 1, 130000, 8);
    /* slices of nothing but -inf (the last two thirds of a row; the first half) in rows with a finite max, a
     * NaN among them, the other special values; a slice with no slots (33 columns over 2 blocks of 17 hold all;
     * 3 rows of 70001 over 8) */
    for (int kind : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
        test_softmax<float>(3, 300, kind, 0, 1, 1);
        test_softmax<float>(2, 70001, kind, 0, 1, 1);
        if (quick && kind % 3 != 0)
            continue;
        test_softmax<double>(2, 40001, kind, 0, 1, 1);
        test_softmax<__half>(2, 130001, kind, 0, 1, 1);
        test_softmax<__nv_bfloat16>(3, 123000, kind, 0, 1, 1);
    }
    /* a spike at each element of a slot (8 rows): the slices' max must see every element, 16-bit pairs included */
    test_softmax<float>(8, 70000, 10, 0, 1, 1);
    test_softmax<__half>(8, 130000, 10, 0, 1, 1);
    test_softmax<__nv_bfloat16>(8, 123000, 10, 0, 1, 1);
    if (!quick)
        test_softmax<double>(8, 40000, 10, 0, 1, 1);
    /* ragged: rows not 16-byte aligned (element slots; 2-byte ones copied without cp.async) */
    test_softmax<float>(3, 70000, 1, 4, 1, 1);
    test_softmax<__nv_bfloat16>(2, 130000, 9, 2, 1, 1);
    if (!quick)
        test_softmax<double>(2, 40000, 8, 8, 1, 1);
    /* 16 blocks a row */
    test_softmax<float>(1, 262147, 9, 0, 1, 1);
    {
        /* no clusters (compute capability 8.0, or code built below sm_90): auto takes the online kernel, the cluster
         * row refuses with the reason; a cluster this device cannot place: run() refuses */
        const kcs_kernel &cluster = row_of(kcs_cuda_softmax_kernels, "softmax", KCS_F32, "cluster");
        const kcs_kernel &automatic = row_of(kcs_cuda_softmax_kernels, "softmax", KCS_F32, "auto");
        const kcs_op_args args = softmax_args(2, 70001);
        for (int setting = 0; setting < 2; setting++) {
            (setting == 0 ? emu_compute_capability : emu_ptx_version) = 80;
            kcs_device device = make_device(1, 1);
            kcs_error err{};
            EXPECT(cluster.supports(&device, &args, &err) == KCS_UNSUPPORTED &&
                       std::strstr(err.message, "softmax rows of 70001 columns: the cluster kernel needs") ==
                           err.message,
                   "softmax cluster without clusters: supports() took it, or said \"%s\"", err.message);
            std::vector<float> output;
            EXPECT(check_softmax<float>(automatic, softmax_input<float>(2, 70001, 1), 2, 70001, 1, 0, 1, 1, &output) &&
                       emu_last_cluster == 1 && emu_last_block.x == 1024,
                   "softmax auto without clusters: not the online kernel (clusters of %u, blocks of %u)",
                   emu_last_cluster, emu_last_block.x);
            emu_compute_capability = 90;
            emu_ptx_version = 90;
        }
        emu_active_clusters = 0;
        kcs_device device = make_device(1, 1);
        host_buffer x(2 * 70001 * 4), y(2 * 70001 * 4);
        kcs_buffer *inputs[] = {&x.buffer}, *outputs[] = {&y.buffer};
        double seconds;
        kcs_error err{};
        EXPECT(cluster.run(&device, &args, inputs, outputs, &seconds, &err) == KCS_UNSUPPORTED &&
                   std::strstr(err.message, "this device places no cluster of 8 blocks"),
               "softmax cluster: a cluster the device cannot place was not refused (\"%s\")", err.message);
        emu_active_clusters = 1;
    }
}

static void softmax_tests()
{
    struct shape { size_t rows, cols; };
    /* Every family's configurations, vector and scalar slots, no rows, no columns. Quick: fewer rows, on one
     * SM's block (the persistent loops still go round), as blocks of 512 or 1024 emulated threads are slow. */
    const int sm = quick ? 1 : 2, blocks_per_sm = quick ? 1 : 2;
    const std::vector<shape> shapes =
        quick ? std::vector<shape>{{7, 1}, {5, 20}, {9, 128}, {17, 33}, {9, 1000}, {1, 4097}, {2, 32768}, {1, 0},
                                   {0, 5}}
              : std::vector<shape>{{7, 1}, {65, 33}, {9, 1000}, {1, 4097}, {200, 3}, {5, 40}, {40, 128},
                                   {33, 1024}, {3, 2048}, {2, 2052}, {3, 8192}, {2, 32768}, {1, 0}, {0, 5},
                                   {300, 4}, {70, 8}, {17, 64}, {9, 500}, {4, 300}, {5, 20}, {3, 16}, {6, 24},
                                   {31, 2}};
    for (const shape &s : shapes)
        for (int kind : {0, 1, 2, 3}) {
            test_softmax<float>(s.rows, s.cols, kind, 0, sm, blocks_per_sm);
            if (!quick || kind % 2 == 0) /* quick: f64 without masked entries and +inf */
                test_softmax<double>(s.rows, s.cols, kind, 0, sm, blocks_per_sm);
        }
    /* f16 and bf16: warp groups of 1 to 32 lanes (8, 32, 64, 128, 256, 512 and 1000 columns; 1, 5, 20, 33, 100 as
     * single elements), the block without and with shared-memory slots (2048; 32768, and 4097 of 2-byte slots
     * copied without cp.async), online */
    const std::vector<shape> half_shapes =
        quick ? std::vector<shape>{{7, 1}, {5, 20}, {9, 128}, {3, 256}, {17, 33}, {4, 512}, {9, 1000}, {1, 4097},
                                   {2, 32768}, {1, 0}, {0, 5}}
              : std::vector<shape>{{7, 1}, {65, 33}, {9, 1000}, {1, 4097}, {200, 3}, {5, 40}, {40, 128}, {33, 1024},
                                   {3, 2048}, {2, 32768}, {1, 0}, {0, 5}, {300, 8}, {17, 64}, {9, 32}, {6, 256},
                                   {4, 512}, {3, 100}, {5, 20}, {31, 2}, {8, 5}};
    for (const shape &s : half_shapes)
        for (int kind : {0, 1, 2, 3}) {
            if (!quick || kind == 2) /* quick: NaN rows in f16, masked entries in bf16 */
                test_softmax<__half>(s.rows, s.cols, kind, 0, sm, blocks_per_sm);
            if (!quick || kind == 1)
                test_softmax<__nv_bfloat16>(s.rows, s.cols, kind, 0, sm, blocks_per_sm);
        }
    for (int kind : {4, 5, 6, 7}) {
        test_softmax<__half>(4, 300, kind, 0, 1, 1);
        test_softmax<__nv_bfloat16>(4, 296, kind, 0, 1, 1);
        test_softmax<float>(4, 300, kind, 0, 1, 1);
        if (quick)
            continue;
        test_softmax<float>(5, 40, kind, 0, 1, 1);
        test_softmax<double>(4, 300, kind, 0, 1, 1);
        test_softmax<float>(2, 5000, kind, 0, 1, 1);
    }
    /* a spike at each element of a slot (8 rows), in a warp group's later slots, in a block's second register
     * slot and in its stash: every family's max must see every element, 16-bit pairs included (the cluster
     * kernel's slices: test_softmax_clusters) */
    for (size_t cols : {1024, 4096, 32768}) {
        test_softmax<float>(8, cols, 10, 0, 1, 1);
        test_softmax<__half>(8, cols, 10, 0, 1, 1);
        test_softmax<__nv_bfloat16>(8, cols, 10, 0, 1, 1);
        if (!quick)
            test_softmax<double>(8, cols / 2, 10, 0, 1, 1);
    }
    /* longer than a block holds: only the online kernel (and auto) */
    test_softmax<float>(2, 70001, 2, 0, 1, 1);
    if (!quick) {
        /* f64 32768: a block with 28 shared slots a thread; the online kernel beyond */
        test_softmax<double>(2, 32768, 0, 0, 1, 1);
        test_softmax<double>(2, 40000, 1, 0, 1, 1);
        test_softmax<float>(2, 70000, 1, 0, 1, 1);
        test_softmax<float>(3, 300000, 3, 0, 1, 1);
        test_softmax<double>(1, 65536 + 7, 5, 0, 1, 1);
    }
    /* rows not 16-byte aligned: scalar slots */
    test_softmax<float>(9, 1000, 1, 4, 1, 2);
    test_softmax<double>(9, 128, 1, 8, 1, 2);
    test_softmax<__half>(9, 1000, 1, 2, 1, 2);
    test_softmax<__nv_bfloat16>(5, 128, 2, 6, 1, 2);
    if (!quick)
        test_softmax<float>(3, 32768, 0, 4, 1, 2);
    test_softmax_reach();
    test_softmax_block_sizes();
    test_softmax_auto_families();
    test_softmax_clusters();
}

/* ---------------------------------------------------------------- assign */

template <typename P> static float widen_host(P v)
{
    if constexpr (sizeof(P) == 4)
        return v;
    else
        return __half2float(v);
}

template <typename P>
static void test_assign(kcs_kernel_run *run, size_t n, size_t d, size_t m, int kind, int sm, int bps)
{
    kcs_device device = make_device(sm, bps);
    host_buffer x(n * d * sizeof(P)), a(m * d * sizeof(float)), idx(n * 4), dist(n * 4);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_int_distribution<int> small(0, 3);
    for (size_t i = 0; i < n * d; i++) {
        double v = kind == 0 ? normal(rng) : kind == 1 ? small(rng) : kind == 2 ? 2.0 : (double)(i % 7);
        if constexpr (sizeof(P) == 4)
            x.as<P>()[i] = (float)v;
        else
            x.as<P>()[i] = __ushort_as_half(emu_float_to_half_bits((float)v));
    }
    for (size_t i = 0; i < m * d; i++) {
        double v = kind == 0 ? normal(rng) : kind == 1 ? small(rng) : kind == 2 ? -1.0 : (double)((i * 3) % 5);
        a.as<float>()[i] = (float)v;
    }
    kcs_op_args args{};
    args.op = "assign";
    args.assign.n = n;
    args.assign.d = d;
    args.assign.m = m;
    kcs_buffer *inputs[] = {&x.buffer, &a.buffer}, *outputs[] = {&idx.buffer, &dist.buffer};
    double seconds;
    kcs_error err{};
    kcs_status status = run(&device, &args, inputs, outputs, &seconds, &err);
    EXPECT(status == KCS_OK, "assign status %d: %s", status, err.message);
    size_t bad_index = 0, bad_dist = 0, near = 0;
    const double gamma = (double)(d + 2) * 0x1.0p-24 / (1 - (double)(d + 2) * 0x1.0p-24);
    for (size_t i = 0; i < n; i++) {
        long double best = INFINITY;
        size_t best_j = 0;
        std::vector<long double> distances(m);
        for (size_t j = 0; j < m; j++) {
            long double s = 0;
            for (size_t k = 0; k < d; k++) {
                long double diff = (long double)widen_host(x.as<P>()[i * d + k]) - a.as<float>()[j * d + k];
                s += diff * diff;
            }
            distances[j] = s;
            if (s < best) {
                best = s;
                best_j = j;
            }
        }
        int got = idx.as<int>()[i];
        if (got < 0 || (size_t)got >= m) {
            bad_index++;
            continue;
        }
        if ((size_t)got != best_j) {
            long double gap = distances[got] - best;
            if (gap <= gamma * (distances[got] + best) && kind == 0)
                near++;
            else {
                if (bad_index < 3)
                    std::printf("  assign n=%zu d=%zu m=%zu kind %d point %zu: idx %d (%.9Lg) vs %zu (%.9Lg)\n", n,
                                d, m, kind, i, got, distances[got], best_j, best);
                bad_index++;
            }
        }
        long double g = distances[got];
        float out = dist.as<float>()[i];
        if (!(std::fabs((double)(out - g)) <= gamma * (double)g + 1e-37)) {
            if (bad_dist < 3)
                std::printf("  assign dist point %zu: %.9g vs %.9Lg\n", i, out, g);
            bad_dist++;
        }
    }
    EXPECT(bad_index == 0 && bad_dist == 0, "assign %s n=%zu d=%zu m=%zu kind %d: %zu wrong idx, %zu wrong dist (%zu near ties)",
           sizeof(P) == 4 ? "f32" : "f16", n, d, m, kind, bad_index, bad_dist, near);
}

static void assign_tests()
{
    struct shape { size_t n, d, m; };
    const std::vector<shape> shapes =
        quick ? std::vector<shape>{{100, 8, 10}, {50, 1, 5}, {129, 128, 130}, {1, 3, 1}, {0, 4, 3}, {64, 0, 3}}
              : std::vector<shape>{{100, 8, 10}, {200, 7, 17}, {150, 13, 9}, {50, 1, 5}, {300, 2, 16},
                                   {20, 5, 8}, {129, 128, 130}, {257, 16, 300}, {130, 130, 129}, {1, 3, 1},
                                   {0, 4, 3}, {40, 6, 25}, {300, 9, 1}, {64, 0, 3}};
    for (const char *variant : {"direct", "shortlist"}) {
        kcs_kernel_run *const f32 = row_of(kcs_cuda_assign_kernels, "assign", KCS_F32, variant).run;
        kcs_kernel_run *const f16 = row_of(kcs_cuda_assign_kernels, "assign", KCS_F16, variant).run;
        for (const shape &s : shapes)
            for (int kind : {0, 1, 2, 3}) {
                if (quick && kind >= 2)
                    continue;
                test_assign<float>(f32, s.n, s.d, s.m, kind, 2, 2);
                test_assign<__half>(f16, s.n, s.d, s.m, kind, 1, 2);
            }
    }
}

/* ---------------------------------------------------------------- reduce */

template <typename P>
static void test_reduce(kcs_kernel_run *run, size_t n, size_t d, size_t m, int kind, int sm, int bps)
{
    kcs_device device = make_device(sm, bps);
    host_buffer x(n * d * sizeof(P)), idx(n * 4), count(m * 4), mean(m * d * 4), var(m * d * 4);
    std::normal_distribution<double> normal(kind == 1 ? 1000.0 : 0.5, kind == 1 ? 0.1 : 2.0);
    for (size_t i = 0; i < n * d; i++) {
        double v = kind == 2 ? (double)i : normal(rng);
        if constexpr (sizeof(P) == 4)
            x.as<P>()[i] = (float)v;
        else
            x.as<P>()[i] = __ushort_as_half(emu_float_to_half_bits((float)(kind == 2 ? 0.1 : v)));
    }
    const size_t used = m > 3 ? m - m / 3 : m; /* leave anchors empty */
    for (size_t i = 0; i < n; i++)
        idx.as<int>()[i] = kind == 2 ? 0 : (int)(rng() % used);
    kcs_op_args args{};
    args.op = "reduce";
    args.reduce.n = n;
    args.reduce.d = d;
    args.reduce.m = m;
    kcs_buffer *inputs[] = {&x.buffer, &idx.buffer}, *outputs[] = {&count.buffer, &mean.buffer, &var.buffer};
    double seconds;
    kcs_error err{};
    kcs_status status = run(&device, &args, inputs, outputs, &seconds, &err);
    EXPECT(status == KCS_OK, "reduce status %d: %s", status, err.message);
    std::vector<long> counts(m, 0);
    std::vector<long double> sums(m * d, 0), squares(m * d, 0);
    for (size_t i = 0; i < n; i++) {
        int j = idx.as<int>()[i];
        counts[j]++;
        for (size_t k = 0; k < d; k++)
            sums[j * d + k] += widen_host(x.as<P>()[i * d + k]);
    }
    for (size_t i = 0; i < n; i++) {
        int j = idx.as<int>()[i];
        for (size_t k = 0; k < d; k++) {
            long double dev = widen_host(x.as<P>()[i * d + k]) - sums[j * d + k] / counts[j];
            squares[j * d + k] += dev * dev;
        }
    }
    size_t bad = 0;
    for (size_t j = 0; j < m; j++) {
        if (count.as<int>()[j] != counts[j]) bad++;
        for (size_t k = 0; k < d; k++) {
            long double mu = counts[j] ? sums[j * d + k] / counts[j] : 0, v = counts[j] ? squares[j * d + k] / counts[j] : 0;
            float gm = mean.as<float>()[j * d + k], gv = var.as<float>()[j * d + k];
            if (!(std::fabs((double)(gm - mu)) <= 1e-6 * std::fabs((double)mu) + 1e-30)) {
                if (bad < 3) std::printf("  reduce mean %zu %zu: %.9g vs %.9Lg\n", j, k, gm, mu);
                bad++;
            }
            if (!(std::fabs((double)(gv - v)) <= 1e-6 * std::fabs((double)v) + 1e-30)) {
                if (bad < 3) std::printf("  reduce var %zu %zu: %.9g vs %.9Lg\n", j, k, gv, v);
                bad++;
            }
        }
    }
    EXPECT(bad == 0, "reduce %s n=%zu d=%zu m=%zu kind %d: %zu wrong", sizeof(P) == 4 ? "f32" : "f16", n, d, m, kind,
           bad);
}

static void reduce_tests()
{
    struct shape { size_t n, d, m; };
    /* the last two: several counting-sort tiles, a ragged last one; m + 1 > 1536: the radix sort */
    const std::vector<shape> shapes =
        quick ? std::vector<shape>{{200, 5, 7}, {700, 130, 9}, {0, 4, 5}, {10, 0, 3}, {5, 4, 1}, {5000, 3, 40}}
              : std::vector<shape>{{200, 5, 7}, {500, 13, 11}, {100, 3, 10}, {300, 6, 5}, {1024, 4, 64},
                                   {4096, 4, 3}, {1000, 3, 4}, {3000, 128, 20}, {700, 130, 9}, {600, 260, 5},
                                   {0, 4, 5}, {10, 0, 3}, {5, 4, 1}, {2000, 1, 300}, {5000, 3, 40},
                                   {3000, 2, 1600}};
    kcs_kernel_run *const f32 = row_of(kcs_cuda_reduce_kernels, "reduce", KCS_F32, "sorted-welford").run;
    kcs_kernel_run *const f16 = row_of(kcs_cuda_reduce_kernels, "reduce", KCS_F16, "sorted-welford").run;
    for (const shape &s : shapes)
        for (int kind : {0, 1, 2}) {
            if (quick && kind == 1)
                continue;
            test_reduce<float>(f32, s.n, s.d, s.m, kind, 2, 2);
            test_reduce<__half>(f16, s.n, s.d, s.m, kind, 1, 1);
        }
    if (quick) /* the radix sort once: its 1600 blocks of statistics are slow to emulate */
        test_reduce<float>(f32, 3000, 2, 1600, 0, 2, 2);
}

/* ---------------------------------------------------------------- update, energy */

static void test_update(size_t m, size_t d)
{
    kcs_device device = make_device(2, 2);
    host_buffer a(m * d * 4), v(m * d * 4), mean(m * d * 4), count(m * 4), a_next(m * d * 4), v_next(m * d * 4);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (size_t i = 0; i < m * d; i++) {
        a.as<float>()[i] = (float)normal(rng);
        v.as<float>()[i] = (float)(0.1 * normal(rng));
        mean.as<float>()[i] = (float)normal(rng);
    }
    for (size_t j = 0; j < m; j++)
        count.as<int>()[j] = (int)(rng() % 4);
    kcs_op_args args{};
    args.op = "update";
    args.update.m = m;
    args.update.d = d;
    args.update.temperature = 0.5;
    args.update.learning_rate = 0.1;
    args.update.momentum = 0.9;
    kcs_buffer *inputs[] = {&a.buffer, &v.buffer, &mean.buffer, &count.buffer}, *outputs[] = {&a_next.buffer, &v_next.buffer};
    double seconds;
    kcs_error err{};
    kcs_kernel_run *const run = row_of(kcs_cuda_update_kernels, "update", KCS_F32, "elementwise").run;
    EXPECT(run(&device, &args, inputs, outputs, &seconds, &err) == KCS_OK, "update status");
    size_t bad = 0;
    const float mu = 0.9f, rate = 0.1f * 0.5f;
    for (size_t i = 0; i < m * d; i++) {
        float vv = count.as<int>()[i / d] > 0 ? std::fma(mu, v.as<float>()[i], mean.as<float>()[i] - a.as<float>()[i])
                                              : mu * v.as<float>()[i];
        float aa = std::fma(rate, vv, a.as<float>()[i]);
        if (v_next.as<float>()[i] != vv || a_next.as<float>()[i] != aa) bad++;
    }
    EXPECT(bad == 0, "update m=%zu d=%zu: %zu wrong", m, d, bad);
}

static void test_energy(size_t n, int kind, size_t offset)
{
    kcs_device device = make_device(2, 2);
    host_buffer dist(n * 4, offset), e(4);
    std::uniform_real_distribution<double> u(0.0, 2.0);
    for (size_t i = 0; i < n; i++)
        dist.as<float>()[i] = kind == 1 && i == n / 2 ? NAN : kind == 2 ? (float)i : (float)u(rng);
    kcs_op_args args{};
    args.op = "energy";
    args.energy.n = n;
    kcs_buffer *inputs[] = {&dist.buffer}, *outputs[] = {&e.buffer};
    double seconds;
    kcs_error err{};
    kcs_kernel_run *const run = row_of(kcs_cuda_energy_kernels, "energy", KCS_F32, "vector-grid").run;
    EXPECT(run(&device, &args, inputs, outputs, &seconds, &err) == KCS_OK, "energy status");
    long double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += dist.as<float>()[i];
    float expected = (float)(sum / n);
    float got = e.as<float>()[0];
    EXPECT(same_bits_or_both_nan(got, expected) || std::fabs(got - expected) <= 1.2e-7 * std::fabs(expected),
           "energy n=%zu kind %d offset %zu: %.9g vs %.9g", n, kind, offset, got, expected);
}

int main(int argc, char **argv)
{
    quick = argc > 1 && std::string(argv[1]) == "--quick";
    std::string only = argc > 1 + quick ? argv[1 + quick] : "";
    if (only.empty() || only == "elementwise") elementwise_tests();
    if (only.empty() || only == "softmax") softmax_tests();
    if (only.empty() || only == "assign") assign_tests();
    if (only.empty() || only == "reduce") reduce_tests();
    if (only.empty() || only == "update") {
        test_update(64, 9);
        test_update(1024, 128);
        test_update(0, 5);
        test_update(5, 0);
    }
    if (only.empty() || only == "energy") {
        for (size_t n : {0, 1, 2, 3, 7, 1000, 100003, 1000001})
            for (int kind : {0, 1, 2})
                if (!quick || n <= 100003)
                    test_energy(n, kind, 0);
        test_energy(1003, 0, 4);
        test_energy(2, 0, 8);
    }
    std::printf("%ld checks, %ld failures, %ld launches\n", checks, failures, emu_launches);
    return failures != 0;
}
