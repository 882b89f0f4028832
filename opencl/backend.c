/* backend.c: OpenCL as a kcs backend (see harness/backend.h).
 *
 * Devices are every device of every platform the ICD loader offers, as one
 * flat index in platform order, then device order, so the NVIDIA and POCL
 * platforms of one machine are compared in one run. Each open device has its
 * own context and an in-order queue with profiling enabled: kernel time is
 * device time from profiling events, never the host's clock around a
 * launch. Programs are built lazily, once per device and program
 * descriptor (opencl/kcs_opencl.h); each op's programs, launchers and kernel
 * rows live in its own file (opencl/sumsq.c), and configure.py lists their
 * tables for this file's backend struct.
 *
 * Run only it: build/kcs run --backend opencl      (build/kcs devices lists them)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcs_opencl.h"
#include "op.h"

_Static_assert(offsetof(kcs_buffer, bytes) == 0, "a buffer begins with its size (harness/backend.h)");

/* ocl-icd's answer when no platform is registered; defined here because it
 * lives in cl_ext.h, which a machine given only a header folder may lack. */
#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

/* ---- errors ---------------------------------------------------------------- */

const char *kcs_opencl_error_name(cl_int code)
{
    switch (code) {
#define KCS_OPENCL_NAME(symbol) case symbol: return #symbol;
    KCS_OPENCL_NAME(CL_SUCCESS)
    KCS_OPENCL_NAME(CL_DEVICE_NOT_FOUND)
    KCS_OPENCL_NAME(CL_DEVICE_NOT_AVAILABLE)
    KCS_OPENCL_NAME(CL_COMPILER_NOT_AVAILABLE)
    KCS_OPENCL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    KCS_OPENCL_NAME(CL_OUT_OF_RESOURCES)
    KCS_OPENCL_NAME(CL_OUT_OF_HOST_MEMORY)
    KCS_OPENCL_NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
    KCS_OPENCL_NAME(CL_MEM_COPY_OVERLAP)
    KCS_OPENCL_NAME(CL_IMAGE_FORMAT_MISMATCH)
    KCS_OPENCL_NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    KCS_OPENCL_NAME(CL_BUILD_PROGRAM_FAILURE)
    KCS_OPENCL_NAME(CL_MAP_FAILURE)
    KCS_OPENCL_NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    KCS_OPENCL_NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    KCS_OPENCL_NAME(CL_COMPILE_PROGRAM_FAILURE)
    KCS_OPENCL_NAME(CL_LINKER_NOT_AVAILABLE)
    KCS_OPENCL_NAME(CL_LINK_PROGRAM_FAILURE)
    KCS_OPENCL_NAME(CL_DEVICE_PARTITION_FAILED)
    KCS_OPENCL_NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    KCS_OPENCL_NAME(CL_INVALID_VALUE)
    KCS_OPENCL_NAME(CL_INVALID_DEVICE_TYPE)
    KCS_OPENCL_NAME(CL_INVALID_PLATFORM)
    KCS_OPENCL_NAME(CL_INVALID_DEVICE)
    KCS_OPENCL_NAME(CL_INVALID_CONTEXT)
    KCS_OPENCL_NAME(CL_INVALID_QUEUE_PROPERTIES)
    KCS_OPENCL_NAME(CL_INVALID_COMMAND_QUEUE)
    KCS_OPENCL_NAME(CL_INVALID_HOST_PTR)
    KCS_OPENCL_NAME(CL_INVALID_MEM_OBJECT)
    KCS_OPENCL_NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    KCS_OPENCL_NAME(CL_INVALID_IMAGE_SIZE)
    KCS_OPENCL_NAME(CL_INVALID_SAMPLER)
    KCS_OPENCL_NAME(CL_INVALID_BINARY)
    KCS_OPENCL_NAME(CL_INVALID_BUILD_OPTIONS)
    KCS_OPENCL_NAME(CL_INVALID_PROGRAM)
    KCS_OPENCL_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
    KCS_OPENCL_NAME(CL_INVALID_KERNEL_NAME)
    KCS_OPENCL_NAME(CL_INVALID_KERNEL_DEFINITION)
    KCS_OPENCL_NAME(CL_INVALID_KERNEL)
    KCS_OPENCL_NAME(CL_INVALID_ARG_INDEX)
    KCS_OPENCL_NAME(CL_INVALID_ARG_VALUE)
    KCS_OPENCL_NAME(CL_INVALID_ARG_SIZE)
    KCS_OPENCL_NAME(CL_INVALID_KERNEL_ARGS)
    KCS_OPENCL_NAME(CL_INVALID_WORK_DIMENSION)
    KCS_OPENCL_NAME(CL_INVALID_WORK_GROUP_SIZE)
    KCS_OPENCL_NAME(CL_INVALID_WORK_ITEM_SIZE)
    KCS_OPENCL_NAME(CL_INVALID_GLOBAL_OFFSET)
    KCS_OPENCL_NAME(CL_INVALID_EVENT_WAIT_LIST)
    KCS_OPENCL_NAME(CL_INVALID_EVENT)
    KCS_OPENCL_NAME(CL_INVALID_OPERATION)
    KCS_OPENCL_NAME(CL_INVALID_GL_OBJECT)
    KCS_OPENCL_NAME(CL_INVALID_BUFFER_SIZE)
    KCS_OPENCL_NAME(CL_INVALID_MIP_LEVEL)
    KCS_OPENCL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
    KCS_OPENCL_NAME(CL_INVALID_PROPERTY)
    KCS_OPENCL_NAME(CL_INVALID_IMAGE_DESCRIPTOR)
    KCS_OPENCL_NAME(CL_INVALID_COMPILER_OPTIONS)
    KCS_OPENCL_NAME(CL_INVALID_LINKER_OPTIONS)
    KCS_OPENCL_NAME(CL_INVALID_DEVICE_PARTITION_COUNT)
    KCS_OPENCL_NAME(CL_PLATFORM_NOT_FOUND_KHR)
#undef KCS_OPENCL_NAME
    }
    return "unknown OpenCL error";
}

/* The path from the source tree's top ("opencl/sumsq.c"), for shorter messages. */
static const char *short_path(const char *file)
{
    const char *last = strrchr(file, '/');
    if (!last)
        return file;
    const char *before = last;
    while (before > file && before[-1] != '/')
        before--;
    return before;
}

kcs_status kcs_opencl_fail(kcs_error *err, cl_int code, const char *expression, const char *file,
                           int line)
{
    return kcs_fail(err, KCS_ERROR, "%s:%d: %s failed with %s (%d)", short_path(file), line,
                    expression, kcs_opencl_error_name(code), (int)code);
}

/* ---- finding devices ------------------------------------------------------- */

/* The platforms the loader offers, in a malloc'd array; KCS_UNSUPPORTED when there are none. */
static kcs_status list_platforms(cl_platform_id **platforms, cl_uint *count, kcs_error *err)
{
    *platforms = NULL;
    *count = 0;
    cl_int code = clGetPlatformIDs(0, NULL, count);
    if (code == CL_PLATFORM_NOT_FOUND_KHR || (code == CL_SUCCESS && *count == 0))
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "the OpenCL ICD loader found no platform (install an ICD such as "
                        "pocl-opencl-icd, or name one in a folder given by OCL_ICD_VENDORS)");
    KCS_OPENCL_CHECK(code, err);
    *platforms = malloc(*count * sizeof **platforms);
    if (!*platforms)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    code = clGetPlatformIDs(*count, *platforms, NULL);
    if (code != CL_SUCCESS) {
        free(*platforms);
        *platforms = NULL;
    }
    KCS_OPENCL_CHECK(code, err);
    return KCS_OK;
}

/* The number of devices of one platform (0 when it has none). */
static kcs_status platform_device_count(cl_platform_id platform, cl_uint *count, kcs_error *err)
{
    *count = 0;
    cl_int code = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, count);
    if (code == CL_DEVICE_NOT_FOUND) {
        *count = 0;
        return KCS_OK;
    }
    KCS_OPENCL_CHECK(code, err);
    return KCS_OK;
}

/* Walks platforms then devices: the total count, and the platform and device at
 * index when index is in range. */
static kcs_status locate_device(int index, int *total, cl_platform_id *platform,
                                cl_device_id *device, kcs_error *err)
{
    cl_platform_id *platforms;
    cl_uint platform_count;
    kcs_status status = list_platforms(&platforms, &platform_count, err);
    if (status != KCS_OK)
        return status;
    *total = 0;
    for (cl_uint p = 0; p < platform_count && status == KCS_OK; p++) {
        cl_uint count;
        status = platform_device_count(platforms[p], &count, err);
        if (status != KCS_OK || count == 0)
            continue;
        if (index >= *total && index < *total + (int)count) {
            cl_device_id *ids = malloc(count * sizeof *ids);
            if (!ids) {
                status = kcs_fail(err, KCS_ERROR, "out of memory");
                break;
            }
            cl_int code = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, count, ids, NULL);
            if (code == CL_SUCCESS) {
                *platform = platforms[p];
                *device = ids[index - *total];
            } else {
                status = kcs_opencl_fail(err, code, "clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, ...)",
                                         __FILE__, __LINE__);
            }
            free(ids);
        }
        *total += (int)count;
    }
    free(platforms);
    return status;
}

static kcs_status device_count(int *count, kcs_error *err)
{
    *count = 0;
    kcs_status status = locate_device(-1, count, NULL, NULL, err);
    if (status != KCS_OK)
        return status;
    if (*count == 0)
        return kcs_fail(err, KCS_UNSUPPORTED, "the OpenCL platforms offer no device");
    return KCS_OK;
}

/* ---- describing a device --------------------------------------------------- */

/* A device string parameter in a malloc'd buffer. */
static kcs_status device_string(cl_device_id device, cl_device_info parameter, char **text,
                                kcs_error *err)
{
    size_t size = 0;
    *text = NULL;
    KCS_OPENCL_CHECK(clGetDeviceInfo(device, parameter, 0, NULL, &size), err);
    *text = calloc(size + 1, 1);
    if (!*text)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    KCS_OPENCL_CHECK(clGetDeviceInfo(device, parameter, size, *text, NULL), err);
    return KCS_OK;
}

/* A platform string parameter into a fixed buffer (truncated to fit). */
static kcs_status platform_string(cl_platform_id platform, cl_platform_info parameter, char *text,
                                  size_t capacity, kcs_error *err)
{
    size_t size = 0;
    KCS_OPENCL_CHECK(clGetPlatformInfo(platform, parameter, 0, NULL, &size), err);
    char *full = calloc(size + 1, 1);
    if (!full)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    cl_int code = clGetPlatformInfo(platform, parameter, size, full, NULL);
    if (code == CL_SUCCESS)
        snprintf(text, capacity, "%s", full);
    free(full);
    KCS_OPENCL_CHECK(code, err);
    return KCS_OK;
}

/* Whether a space-separated extension list holds name as a whole word. */
static int has_extension(const char *extensions, const char *name)
{
    size_t length = strlen(name);
    for (const char *at = strstr(extensions, name); at; at = strstr(at + 1, name)) {
        int starts = at == extensions || at[-1] == ' ';
        int ends = at[length] == '\0' || at[length] == ' ';
        if (starts && ends)
            return 1;
    }
    return 0;
}

/* The one place that decides which devices get NVIDIA's PTX conversions in
 * opencl/half.cl: a device that offers NVIDIA's cl_nv_device_attribute_query
 * (its OpenCL compiles to PTX and accepts inline PTX) is built with
 * -DKCS_OPENCL_NVIDIA_SM=<compute capability, e.g. 90>; every other device
 * keeps half.cl's portable code. Decided once, when the device is opened, from
 * its extensions; writes the option, or nothing, into option. */
static void nvidia_option(cl_device_id id, const char *extensions, char *option, size_t size)
{
    option[0] = '\0';
    cl_uint major = 0, minor = 0;
    if (has_extension(extensions, "cl_nv_device_attribute_query") &&
        clGetDeviceInfo(id, 0x4000 /* CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV */, sizeof major, &major, NULL) ==
            CL_SUCCESS &&
        clGetDeviceInfo(id, 0x4001 /* CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV */, sizeof minor, &minor, NULL) ==
            CL_SUCCESS)
        snprintf(option, size, "-DKCS_OPENCL_NVIDIA_SM=%u", major * 10 + minor);
}

/* The device's PCI address as the CUDA backend writes it ("; pci_bus_id=DDDD:BB:DD.F"), appended
 * to details where the device tells it: cl_khr_pci_bus_info, else NVIDIA's
 * cl_nv_device_attribute_query (bus 0x4008, slot 0x4009 holding device << 3 | function, domain
 * 0x400A on newer drivers, else 0), else AMD's topology query (0x4037). The runner puts the CUDA
 * and OpenCL devices of one card in one lane by it (docs/runner.md, "All devices at once"). */
static void append_pci_bus_id(cl_device_id id, const char *extensions, char *details, size_t size)
{
    unsigned domain = 0, bus = 0, slot = 0, function = 0;
    int found = 0;
    if (has_extension(extensions, "cl_khr_pci_bus_info")) {
        cl_uint info[4] = {0}; /* cl_device_pci_bus_info_khr: domain, bus, device, function */
        if (clGetDeviceInfo(id, 0x410F /* CL_DEVICE_PCI_BUS_INFO_KHR */, sizeof info, info, NULL) == CL_SUCCESS) {
            domain = info[0], bus = info[1], slot = info[2], function = info[3];
            found = 1;
        }
    }
    if (!found && has_extension(extensions, "cl_nv_device_attribute_query")) {
        cl_uint nv_bus = 0, nv_slot = 0, nv_domain = 0;
        if (clGetDeviceInfo(id, 0x4008 /* CL_DEVICE_PCI_BUS_ID_NV */, sizeof nv_bus, &nv_bus, NULL) == CL_SUCCESS &&
            clGetDeviceInfo(id, 0x4009 /* CL_DEVICE_PCI_SLOT_ID_NV */, sizeof nv_slot, &nv_slot, NULL) == CL_SUCCESS) {
            if (clGetDeviceInfo(id, 0x400A /* CL_DEVICE_PCI_DOMAIN_ID_NV */, sizeof nv_domain, &nv_domain, NULL) !=
                CL_SUCCESS)
                nv_domain = 0;
            domain = nv_domain, bus = nv_bus, slot = nv_slot >> 3, function = nv_slot & 7;
            found = 1;
        }
    }
    if (!found && has_extension(extensions, "cl_amd_device_attribute_query")) {
        unsigned char topology[24] = {0}; /* cl_device_topology_amd: type 1 (PCIe), then bus, device, function at 21..23 */
        if (clGetDeviceInfo(id, 0x4037 /* CL_DEVICE_TOPOLOGY_AMD */, sizeof topology, topology, NULL) == CL_SUCCESS &&
            topology[0] == 1) {
            bus = topology[21], slot = topology[22], function = topology[23];
            found = 1;
        }
    }
    if (found) {
        size_t used = strlen(details);
        snprintf(details + used, size - used, "; pci_bus_id=%04x:%02x:%02x.%x", domain, bus, slot, function);
    }
}

static const char *type_name(cl_device_type type)
{
    if (type & CL_DEVICE_TYPE_GPU)
        return "GPU";
    if (type & CL_DEVICE_TYPE_CPU)
        return "CPU";
    if (type & CL_DEVICE_TYPE_ACCELERATOR)
        return "accelerator";
    return "other";
}

/* The settings from the environment that change how this device's kernels
 * are compiled, as "NAME=value" pairs separated by spaces ("" when none):
 * KCS_OPENCL_BUILD_OPTIONS on any device, and on POCL its work-group method
 * and kernel library (POCL_WORK_GROUP_METHOD, POCL_KERNELLIB_NAME;
 * docs/runner.md, "Compilation paths"). describe() appends them to the
 * driver version, since they make another compiler of the same driver: an
 * expectation written for a driver's default path (expectations/known-bugs.txt)
 * then does not claim a run on another path, and a comparison of the two
 * paths is one of two drivers. */
static void compiler_settings(const char *platform, char *text, size_t size)
{
    static const struct {
        const char *variable;
        int pocl_only;
    } settings[] = {
        {"KCS_OPENCL_BUILD_OPTIONS", 0},
        {"POCL_WORK_GROUP_METHOD", 1},
        {"POCL_KERNELLIB_NAME", 1},
    };
    int pocl = strstr(platform, "Portable Computing Language") != NULL;
    size_t used = 0;
    text[0] = '\0';
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const char *value = getenv(settings[i].variable);
        if (!value || !value[0] || (settings[i].pocl_only && !pocl))
            continue;
        int wrote = snprintf(text + used, size - used, "%s%s=%s", used ? " " : "", settings[i].variable, value);
        if (wrote < 0 || (size_t)wrote >= size - used)
            break;
        used += (size_t)wrote;
    }
}

/* KCS_OPENCL_PLAN_AS: launch plans made as a larger device would make them
 * (docs/runner.md, "Launch plans"). Its value is "name=value" pairs
 * separated by spaces: compute_units=N, type=gpu or type=cpu,
 * local_memory=BYTES and max_work_group=N (a cap on every kernel's
 * work-group, as NVIDIA's OpenCL allows softmax's kernels 256 work-items
 * where POCL allows 1024), each replacing what the device reports for the
 * launchers' decisions only (how many work-groups fill the device, which
 * path fits its local memory), never for what the runner schedules. It lets
 * a 2-core CPU run the branches a 132-unit GPU takes, e.g. the one-launch
 * 16-bit sum of squares beyond 768 work-groups. */
static kcs_status plan_as(kcs_device *device, const char *spec, kcs_error *err)
{
    char copy[256];
    if (strlen(spec) >= sizeof copy)
        return kcs_fail(err, KCS_ERROR, "KCS_OPENCL_PLAN_AS is longer than %zu characters", sizeof copy - 1);
    strcpy(copy, spec);
    char *saved = NULL;
    for (char *pair = strtok_r(copy, " ", &saved); pair; pair = strtok_r(NULL, " ", &saved)) {
        char *equals = strchr(pair, '=');
        const char *value = equals ? equals + 1 : "";
        char *end = NULL;
        unsigned long long number = 0;
        if (equals) {
            *equals = '\0';
            errno = 0;
            number = strtoull(value, &end, 10);
        }
        int whole = equals && value[0] >= '0' && value[0] <= '9' && *end == '\0' && errno == 0;
        if (equals && strcmp(pair, "compute_units") == 0 && whole && number >= 1 && number <= 1u << 20)
            device->compute_units = (cl_uint)number;
        else if (equals && strcmp(pair, "local_memory") == 0 && whole && number >= 1024)
            device->local_memory = (cl_ulong)number;
        else if (equals && strcmp(pair, "max_work_group") == 0 && whole && number >= 1 && number <= 1u << 16)
            device->plan_group_limit = (size_t)number;
        else if (equals && strcmp(pair, "type") == 0 && strcmp(value, "gpu") == 0)
            device->type = CL_DEVICE_TYPE_GPU;
        else if (equals && strcmp(pair, "type") == 0 && strcmp(value, "cpu") == 0)
            device->type = CL_DEVICE_TYPE_CPU;
        else
            return kcs_fail(err, KCS_ERROR,
                            "KCS_OPENCL_PLAN_AS=\"%s\": \"%s%s%s\" is not compute_units=N (1 to 2^20), "
                            "type=gpu, type=cpu, local_memory=BYTES (at least 1024) or max_work_group=N "
                            "(1 to 65536)",
                            spec, pair, equals ? "=" : "", value);
    }
    return KCS_OK;
}

/* Reads the device's limits into device and its description into info. */
static kcs_status describe(kcs_device *device, kcs_device_info *info, kcs_error *err)
{
    cl_device_id id = device->id;
    cl_ulong global_memory = 0;
    KCS_OPENCL_CHECK(clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof device->type, &device->type, NULL), err);
    KCS_OPENCL_CHECK(clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof device->compute_units,
                                     &device->compute_units, NULL), err);
    KCS_OPENCL_CHECK(clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof device->max_work_group_size,
                                     &device->max_work_group_size, NULL), err);
    KCS_OPENCL_CHECK(clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof device->max_allocation,
                                     &device->max_allocation, NULL), err);
    KCS_OPENCL_CHECK(clGetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof device->local_memory,
                                     &device->local_memory, NULL), err);
    KCS_OPENCL_CHECK(clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global_memory,
                                     &global_memory, NULL), err);
    /* Without CL_FP_DENORM a device may flush f32 subnormals to zero (OpenCL
     * requires them only for double); -cl-denorms-are-zero in
     * KCS_OPENCL_BUILD_OPTIONS asks any device to. Ops that allow it then
     * check with their flushing bounds (docs/gemm.md, "Flush to zero"). */
    cl_device_fp_config single_config = 0;
    KCS_OPENCL_CHECK(clGetDeviceInfo(id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof single_config, &single_config, NULL),
                     err);
    info->shares_host_cores = (device->type & CL_DEVICE_TYPE_CPU) != 0;
    const char *extra_options = getenv("KCS_OPENCL_BUILD_OPTIONS");
    info->flushes_f32_subnormals = !(single_config & CL_FP_DENORM) ||
                                   (extra_options && strstr(extra_options, "-cl-denorms-are-zero"));

    const cl_device_info parameters[] = {CL_DEVICE_NAME, CL_DEVICE_VENDOR, CL_DEVICE_VERSION,
                                         CL_DRIVER_VERSION, CL_DEVICE_OPENCL_C_VERSION,
                                         CL_DEVICE_EXTENSIONS};
    enum { name, vendor, version, driver, c_version, extensions, string_count };
    char *strings[string_count] = {NULL};
    kcs_status status = KCS_OK;
    for (int s = 0; s < string_count && status == KCS_OK; s++)
        status = device_string(id, parameters[s], &strings[s], err);
    char platform_version[256] = "";
    if (status == KCS_OK)
        status = platform_string(device->platform, CL_PLATFORM_NAME, info->platform,
                                 sizeof info->platform, err);
    if (status == KCS_OK)
        status = platform_string(device->platform, CL_PLATFORM_VERSION, platform_version,
                                 sizeof platform_version, err);
    if (status == KCS_OK) {
        device->has_fp64 = has_extension(strings[extensions], "cl_khr_fp64");
        device->has_fp16 = has_extension(strings[extensions], "cl_khr_fp16");
        device->has_nv_compiler_options = has_extension(strings[extensions], "cl_nv_compiler_options");
        nvidia_option(id, strings[extensions], device->nvidia_option, sizeof device->nvidia_option);
        snprintf(device->name, sizeof device->name, "%s", strings[name]);
        snprintf(info->name, sizeof info->name, "%s", strings[name]);
        snprintf(info->vendor, sizeof info->vendor, "%s", strings[vendor]);
        char settings[512];
        compiler_settings(info->platform, settings, sizeof settings);
        snprintf(info->driver_version, sizeof info->driver_version, settings[0] ? "%s [%s]" : "%s%s",
                 strings[driver], settings);
        snprintf(info->runtime_version, sizeof info->runtime_version, "%s, %s", strings[version],
                 strings[c_version]);
        snprintf(info->details, sizeof info->details,
                 "platform_version=%s; type=%s; compute_units=%u; max_work_group_size=%zu; "
                 "fp64=%s; fp16=%s; max_alloc=%" PRIu64 "; f32_subnormals=%s",
                 platform_version, type_name(device->type), (unsigned)device->compute_units,
                 device->max_work_group_size, device->has_fp64 ? "yes" : "no",
                 device->has_fp16 ? "yes" : "no", (uint64_t)device->max_allocation,
                 info->flushes_f32_subnormals ? "may flush" : "kept");
        append_pci_bus_id(id, strings[extensions], info->details, sizeof info->details);
        info->memory_bytes = global_memory;
        const char *plans = getenv("KCS_OPENCL_PLAN_AS");
        if (plans && plans[0]) {
            status = plan_as(device, plans, err);
            size_t used = strlen(info->details);
            snprintf(info->details + used, sizeof info->details - used, "; plans_as=%s", plans);
        }
    }
    for (int s = 0; s < string_count; s++)
        free(strings[s]);
    return status;
}

/* ---- opening and closing --------------------------------------------------- */

static void close_device(kcs_device *device)
{
    if (!device)
        return;
    while (device->staging) {
        kcs_opencl_staging *entry = device->staging;
        device->staging = entry->next;
        if (entry->memory) {
            clEnqueueUnmapMemObject(device->queue, entry->memory, entry->host, 0, NULL, NULL);
            clFinish(device->queue);
            clReleaseMemObject(entry->memory);
        } else {
            free(entry->host);
        }
        free(entry);
    }
    for (int k = 0; k < device->kernel_count; k++)
        clReleaseKernel(device->kernels[k].kernel);
    for (int b = 0; b < device->build_count; b++) {
        if (device->builds[b].built)
            clReleaseProgram(device->builds[b].built);
        free(device->builds[b].failure);
    }
    for (int s = 0; s < KCS_OPENCL_SCRATCH_SLOTS; s++)
        if (device->scratch[s])
            clReleaseMemObject(device->scratch[s]);
    if (device->groups_done)
        clReleaseMemObject(device->groups_done);
    if (device->queue)
        clReleaseCommandQueue(device->queue);
    if (device->context)
        clReleaseContext(device->context);
    free(device);
}

static kcs_status create_context_and_queue(kcs_device *device, kcs_error *err)
{
    cl_int code;
    cl_context_properties properties[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)device->platform, 0};
    KCS_OPENCL_CHECK((device->context = clCreateContext(properties, 1, &device->id, NULL, NULL, &code),
                      code), err);
    KCS_OPENCL_CHECK((device->queue = clCreateCommandQueue(device->context, device->id,
                                                           CL_QUEUE_PROFILING_ENABLE, &code),
                      code), err);
    return KCS_OK;
}

static kcs_status open_device(int index, kcs_device **opened, kcs_device_info *info, kcs_error *err)
{
    *opened = NULL;
    memset(info, 0, sizeof *info);
    kcs_device *device = calloc(1, sizeof *device);
    if (!device)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    int total = 0;
    kcs_status status = locate_device(index, &total, &device->platform, &device->id, err);
    if (status == KCS_OK && (index < 0 || index >= total))
        status = kcs_fail(err, KCS_ERROR, "there are %d OpenCL devices, so no device %d", total, index);
    if (status == KCS_OK)
        status = describe(device, info, err);
    if (status == KCS_OK)
        status = create_context_and_queue(device, err);
    if (status != KCS_OK) {
        close_device(device);
        return status;
    }
    *opened = device;
    return KCS_OK;
}

/* ---- buffers ---------------------------------------------------------------- */

static kcs_status allocate(kcs_device *device, size_t bytes, kcs_buffer **buffer, kcs_error *err)
{
    *buffer = NULL;
    if (bytes > device->max_allocation)
        return kcs_fail(err, KCS_UNSUPPORTED, "needs %zu bytes in one buffer, device allows %" PRIu64,
                        bytes, (uint64_t)device->max_allocation);
    kcs_buffer *created = calloc(1, sizeof *created);
    if (!created)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    created->bytes = bytes;
    /* OpenCL has no empty buffers; an empty array still needs a handle to pass. */
    cl_int code;
    created->memory = clCreateBuffer(device->context, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &code);
    if (code != CL_SUCCESS) {
        free(created);
        return kcs_opencl_fail(err, code, "clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &code)",
                               __FILE__, __LINE__);
    }
    *buffer = created;
    return KCS_OK;
}

static void release(kcs_device *device, kcs_buffer *buffer)
{
    (void)device;
    if (!buffer)
        return;
    clReleaseMemObject(buffer->memory);
    free(buffer);
}

static kcs_status upload(kcs_device *device, kcs_buffer *buffer, const void *host, size_t bytes,
                         kcs_error *err)
{
    if (bytes > buffer->bytes)
        return kcs_fail(err, KCS_ERROR, "upload of %zu bytes into a buffer of %zu", bytes, buffer->bytes);
    if (bytes == 0)
        return KCS_OK;
    KCS_OPENCL_CHECK(clEnqueueWriteBuffer(device->queue, buffer->memory, CL_TRUE, 0, bytes, host, 0,
                                          NULL, NULL), err);
    return KCS_OK;
}

static kcs_status download(kcs_device *device, kcs_buffer *buffer, void *host, size_t bytes,
                           kcs_error *err)
{
    if (bytes > buffer->bytes)
        return kcs_fail(err, KCS_ERROR, "download of %zu bytes from a buffer of %zu", bytes,
                        buffer->bytes);
    if (bytes == 0)
        return KCS_OK;
    KCS_OPENCL_CHECK(clEnqueueReadBuffer(device->queue, buffer->memory, CL_TRUE, 0, bytes, host, 0,
                                         NULL, NULL), err);
    return KCS_OK;
}

/* Page-locked staging memory, the OpenCL way: a buffer the driver allocates in
 * host memory (CL_MEM_ALLOC_HOST_PTR), kept mapped while the harness holds it.
 * Where that fails, plain malloc keeps the run going at pageable speed. */
static void *host_allocate(kcs_device *device, size_t bytes)
{
    kcs_opencl_staging *entry = calloc(1, sizeof *entry);
    if (!entry)
        return NULL;
    cl_int code;
    entry->memory = clCreateBuffer(device->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                                   bytes ? bytes : 1, NULL, &code);
    if (code == CL_SUCCESS) {
        entry->host = clEnqueueMapBuffer(device->queue, entry->memory, CL_TRUE,
                                         CL_MAP_READ | CL_MAP_WRITE, 0, bytes ? bytes : 1, 0, NULL,
                                         NULL, &code);
        if (code != CL_SUCCESS) {
            clReleaseMemObject(entry->memory);
            entry->memory = NULL;
            entry->host = NULL;
        }
    } else {
        entry->memory = NULL;
    }
    if (!entry->host)
        entry->host = malloc(bytes ? bytes : 1);
    if (!entry->host) {
        free(entry);
        return NULL;
    }
    entry->next = device->staging;
    device->staging = entry;
    return entry->host;
}

static void host_release(kcs_device *device, void *host)
{
    for (kcs_opencl_staging **link = &device->staging; *link; link = &(*link)->next) {
        kcs_opencl_staging *entry = *link;
        if (entry->host != host)
            continue;
        *link = entry->next;
        if (entry->memory) {
            clEnqueueUnmapMemObject(device->queue, entry->memory, entry->host, 0, NULL, NULL);
            clFinish(device->queue);
            clReleaseMemObject(entry->memory);
        } else {
            free(entry->host);
        }
        free(entry);
        return;
    }
}

/* ---- programs, kernels, scratch and timing (for the launchers) -------------- */

KCS_OPENCL_EMBEDDED_SOURCE(half);

/* Builds a program for the device into build, keeping the outcome either way. */
static void build_program(kcs_device *device, const kcs_opencl_program *program, kcs_opencl_build *build)
{
    build->program = program;
    /* opencl/half.cl first, then a #line so that the build log's line numbers
     * are the kernel file's own. */
    const char *sources[3] = {kcs_opencl_half_source, "\n#line 1\n", program->source};
    size_t lengths[3] = {kcs_opencl_half_source_length, strlen(sources[1]), *program->length};
    kcs_error failure = {{0}};
    cl_int code;
    cl_program created = clCreateProgramWithSource(device->context, 3, sources, lengths, &code);
    if (code != CL_SUCCESS) {
        kcs_opencl_fail(&failure, code, "clCreateProgramWithSource(context, 3, sources, lengths, &code)",
                        __FILE__, __LINE__);
    } else {
        /* KCS_OPENCL_BUILD_OPTIONS adds options to every build: a driver
         * validator's way to try e.g. -cl-opt-disable, and the tests' way to
         * make a build fail on purpose (tests/bad_input_test.sh). */
        const char *extra = getenv("KCS_OPENCL_BUILD_OPTIONS");
        char options[4096];
        const char *nvidia = device->has_nv_compiler_options && program->nvidia_options ? program->nvidia_options
                                                                                         : "";
        snprintf(options, sizeof options, "%s %s %s %s", program->options ? program->options : "",
                 device->nvidia_option, nvidia, extra ? extra : "");
        code = clBuildProgram(created, 1, &device->id, options, NULL, NULL);
        size_t log_size = 0;
        char *log = NULL;
        if (clGetProgramBuildInfo(created, device->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size) ==
                CL_SUCCESS &&
            (log = calloc(log_size + 1, 1)) != NULL)
            clGetProgramBuildInfo(created, device->id, CL_PROGRAM_BUILD_LOG, log_size, log, NULL);
        if (code == CL_SUCCESS) {
            /* KCS_OPENCL_BUILD_LOG: the compiler's log of every build that
             * succeeds too (its warnings; with NVIDIA's -cl-nv-verbose, each
             * kernel's registers and spills), on standard error. */
            const char *show = getenv("KCS_OPENCL_BUILD_LOG");
            if (show && show[0] && strcmp(show, "0") != 0)
                fprintf(stderr, "build log of %s for %s (options: %s):\n%s\n", program->file, device->name,
                        options, log && log[0] ? log : "(empty)");
            free(log);
            build->built = created;
            return;
        }
        kcs_fail(&failure, KCS_ERROR, "building %s for %s failed with %s (%d); build log:\n%s",
                 program->file, device->name, kcs_opencl_error_name(code), (int)code,
                 log && log[0] ? log : "(empty)");
        free(log);
        clReleaseProgram(created);
    }
    build->failure = strdup(failure.message);
}

/* The device's build of program, building it on first use; NULL when the
 * device already holds KCS_OPENCL_MAX_PROGRAMS others. */
static const kcs_opencl_build *program_build(kcs_device *device, const kcs_opencl_program *program)
{
    for (int b = 0; b < device->build_count; b++)
        if (device->builds[b].program == program)
            return &device->builds[b];
    if (device->build_count == KCS_OPENCL_MAX_PROGRAMS)
        return NULL;
    kcs_opencl_build *build = &device->builds[device->build_count++];
    build_program(device, program, build);
    return build;
}

kcs_status kcs_opencl_kernel(kcs_device *device, const kcs_opencl_program *program, const char *name,
                             cl_kernel *kernel, kcs_error *err)
{
    *kernel = NULL;
    for (int k = 0; k < device->kernel_count; k++) {
        if (device->kernels[k].program == program && strcmp(device->kernels[k].name, name) == 0) {
            *kernel = device->kernels[k].kernel;
            return KCS_OK;
        }
    }
    const kcs_opencl_build *build = program_build(device, program);
    if (!build)
        return kcs_fail(err, KCS_ERROR, "more than %d OpenCL programs on one device (building %s); "
                        "raise KCS_OPENCL_MAX_PROGRAMS", KCS_OPENCL_MAX_PROGRAMS, program->file);
    if (!build->built)
        return kcs_fail(err, KCS_ERROR, "%s", build->failure ? build->failure : "out of memory");
    if (device->kernel_count == KCS_OPENCL_MAX_KERNELS)
        return kcs_fail(err, KCS_ERROR, "more than %d OpenCL kernels on one device; raise "
                        "KCS_OPENCL_MAX_KERNELS", KCS_OPENCL_MAX_KERNELS);
    cl_int code;
    KCS_OPENCL_CHECK((*kernel = clCreateKernel(build->built, name, &code), code), err);
    device->kernels[device->kernel_count++] = (kcs_opencl_kernel_entry){program, name, *kernel};
    return KCS_OK;
}

kcs_status kcs_opencl_kernel_group_limit(kcs_device *device, cl_kernel kernel, size_t *allowed, kcs_error *err)
{
    *allowed = 0;
    KCS_OPENCL_CHECK(clGetKernelWorkGroupInfo(kernel, device->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof *allowed,
                                              allowed, NULL), err);
    if (device->plan_group_limit && *allowed > device->plan_group_limit)
        *allowed = device->plan_group_limit;
    return KCS_OK;
}

kcs_status kcs_opencl_group_size(kcs_device *device, cl_kernel kernel, size_t limit, size_t *size,
                                 kcs_error *err)
{
    size_t allowed = 0;
    kcs_status status = kcs_opencl_kernel_group_limit(device, kernel, &allowed, err);
    if (status != KCS_OK)
        return status;
    if (allowed > limit)
        allowed = limit;
    *size = 1;
    while (*size * 2 <= allowed)
        *size *= 2;
    return KCS_OK;
}

kcs_status kcs_opencl_scratch(kcs_device *device, int slot, size_t bytes, cl_mem *memory,
                              kcs_error *err)
{
    if (bytes > device->scratch_bytes[slot]) {
        if (device->scratch[slot])
            clReleaseMemObject(device->scratch[slot]);
        device->scratch[slot] = NULL;
        device->scratch_bytes[slot] = 0;
        cl_int code;
        KCS_OPENCL_CHECK((device->scratch[slot] = clCreateBuffer(device->context, CL_MEM_READ_WRITE,
                                                                 bytes, NULL, &code),
                          code), err);
        device->scratch_bytes[slot] = bytes;
    }
    *memory = device->scratch[slot];
    return KCS_OK;
}

kcs_status kcs_opencl_groups_done(kcs_device *device, size_t bytes, cl_mem *buffer, kcs_error *err)
{
    const size_t needed = sizeof(cl_uint) + bytes;
    if (needed > device->groups_done_bytes) {
        if (device->groups_done)
            clReleaseMemObject(device->groups_done);
        device->groups_done = NULL;
        device->groups_done_bytes = 0;
        /* Made from zeroed host memory rather than filled by a command: Oclgrind
         * then counts every word as written, which the kernels' atomics need
         * (tests/oclgrind_run.sh's uninitialised-value check). */
        void *zeros = calloc(1, needed);
        if (!zeros)
            return kcs_fail(err, KCS_ERROR, "out of memory for a %zu-byte groups-done buffer", needed);
        cl_int code;
        device->groups_done = clCreateBuffer(device->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, needed,
                                             zeros, &code);
        free(zeros);
        if (code != CL_SUCCESS)
            return kcs_opencl_fail(err, code, "clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, groups-done buffer)",
                                   __FILE__, __LINE__);
        device->groups_done_bytes = needed;
    }
    *buffer = device->groups_done;
    return KCS_OK;
}

kcs_status kcs_opencl_launch(kcs_device *device, cl_kernel kernel, size_t global, size_t local,
                             kcs_opencl_events *events, kcs_error *err)
{
    cl_event event;
    KCS_OPENCL_CHECK(clEnqueueNDRangeKernel(device->queue, kernel, 1, NULL, &global, &local, 0, NULL,
                                            &event), err);
    if (!events->first)
        events->first = event;
    else if (events->last != events->first)
        clReleaseEvent(events->last);
    events->last = event;
    return KCS_OK;
}

void kcs_opencl_events_release(kcs_opencl_events *events)
{
    if (events->last && events->last != events->first)
        clReleaseEvent(events->last);
    if (events->first)
        clReleaseEvent(events->first);
    events->first = events->last = NULL;
}

/* ---- Back to back -------------------------------------------------------------
 *
 * Timed one at a time, a run's profiling events give its device time, but
 * the device idles while the host waits for them and enqueues the next run,
 * and a GPU held at its power limit keeps higher clocks the more it idles
 * (docs/runner.md, "Back to back"; cuda/backend.cu does the same for CUDA).
 * time_back_to_back enqueues the repeats in chunks of back_to_back_chunk
 * (in the order of kcs_back_to_back_walk, harness/backend.h) without
 * waiting: each repeat's first and last events are kept in its chunk
 * (kcs_opencl_timed hands them over while device->queueing is set), the
 * chunk is flushed, and only once the next chunk is enqueued is it waited
 * for and read. Profiling times are the device's own, so no hold is needed:
 * a repeat's time runs from its first command's start to its last's end,
 * and where the host enqueues slower than the device runs, the idle time
 * falls between repeats, not inside one. A run that launches nothing (an
 * empty input) is 0 s, as one at a time.
 */
enum { back_to_back_chunk = 16 };

struct kcs_opencl_chunk {
    kcs_opencl_events repeats[back_to_back_chunk];
    int first;    /* the repeat repeats[0] is */
    int count;    /* repeats enqueued */
    int recorded; /* repeats whose events were handed over */
};

static kcs_status keep_in_chunk(struct kcs_opencl_chunk *chunk, kcs_opencl_events *events, kcs_error *err)
{
    if (chunk->recorded >= chunk->count) {
        kcs_opencl_events_release(events);
        return kcs_fail(err, KCS_ERROR, "a repeat timed more than one run");
    }
    chunk->repeats[chunk->recorded++] = *events;
    events->first = events->last = NULL;
    return KCS_OK;
}

static void release_chunk(struct kcs_opencl_chunk *chunk)
{
    for (int r = 0; r < chunk->recorded; r++)
        kcs_opencl_events_release(&chunk->repeats[r]);
    chunk->recorded = 0;
}

static kcs_status event_span(const kcs_opencl_events *events, double *seconds, kcs_error *err);

/* Waits for a chunk's repeats and writes their times. */
static kcs_status read_chunk(struct kcs_opencl_chunk *chunk, double *seconds, kcs_error *err)
{
    kcs_status status = KCS_OK;
    for (int r = 0; r < chunk->recorded && status == KCS_OK; r++) {
        seconds[chunk->first + r] = 0.0;
        if (chunk->repeats[r].first)
            status = event_span(&chunk->repeats[r], &seconds[chunk->first + r], err);
    }
    release_chunk(chunk);
    return status;
}

/* The slot callbacks of kcs_back_to_back_walk (harness/backend.h): a slot is
 * one of two chunks of a time_back_to_back. */
struct kcs_opencl_walk {
    kcs_device *device;
    struct kcs_opencl_chunk chunks[2];
};

static kcs_status open_chunk(void *backend, int slot, int first, int count, kcs_error *err)
{
    (void)err;
    struct kcs_opencl_walk *walk = backend;
    struct kcs_opencl_chunk *chunk = &walk->chunks[slot];
    chunk->first = first;
    chunk->count = count;
    chunk->recorded = 0;
    walk->device->queueing = chunk;
    return KCS_OK;
}

static int chunk_recorded(void *backend, int slot)
{
    return ((struct kcs_opencl_walk *)backend)->chunks[slot].recorded;
}

/* Flushes the chunk's repeats, so that the device starts them while the host reads the chunk before. */
static kcs_status close_chunk(void *backend, int slot, kcs_status status, kcs_error *err)
{
    (void)slot;
    struct kcs_opencl_walk *walk = backend;
    walk->device->queueing = NULL;
    if (status == KCS_OK && clFlush(walk->device->queue) != CL_SUCCESS)
        status = kcs_fail(err, KCS_ERROR, "clFlush failed after a chunk of repeats");
    return status;
}

static kcs_status read_slot(void *backend, int slot, double *seconds, kcs_error *err)
{
    return read_chunk(&((struct kcs_opencl_walk *)backend)->chunks[slot], seconds, err);
}

static kcs_status time_back_to_back(kcs_device *device, int count,
                                    kcs_status (*run)(void *context, int repeat, kcs_error *err), void *context,
                                    double *seconds, kcs_error *err)
{
    struct kcs_opencl_walk slots = {device, {{{{0}}}}};
    const kcs_back_to_back walk = {back_to_back_chunk, 2, &slots, open_chunk, chunk_recorded, close_chunk, read_slot};
    const kcs_status status = kcs_back_to_back_walk(&walk, count, run, context, seconds, err);
    if (status != KCS_OK) {
        clFinish(device->queue);
        release_chunk(&slots.chunks[0]);
        release_chunk(&slots.chunks[1]);
    }
    return status;
}

kcs_status kcs_opencl_timed(kcs_opencl_enqueue *enqueue, kcs_device *device, const kcs_op_args *args,
                            kcs_buffer *const inputs[], kcs_buffer *const outputs[], double *kernel_seconds,
                            kcs_error *err)
{
    kcs_opencl_events events = {NULL, NULL};
    if (kernel_seconds)
        *kernel_seconds = 0.0;
    kcs_status status = kcs_check_buffers(kcs_find_op(args->op), args, inputs, outputs, err);
    if (status != KCS_OK)
        return status;
    status = enqueue(device, args, inputs, outputs, &events, err);
    if (status != KCS_OK) {
        clFinish(device->queue);
        kcs_opencl_events_release(&events);
        return status;
    }
    if (!kernel_seconds) {
        /* Asynchronous (the library's kcs_call): the queue keeps the commands
         * alive without their events; a flush starts them without waiting. */
        kcs_opencl_events_release(&events);
        KCS_OPENCL_CHECK(clFlush(device->queue), err);
        return KCS_OK;
    }
    if (device->queueing) /* back to back: the chunk keeps the events and reads them later */
        return keep_in_chunk(device->queueing, &events, err);
    if (!events.first)
        return KCS_OK; /* nothing to compute (an empty input), so nothing launched */
    return kcs_opencl_elapsed(&events, kernel_seconds, err);
}

/* The device time between the two events; a helper so that the events are
 * released on every path by the caller. */
static kcs_status event_span(const kcs_opencl_events *events, double *seconds, kcs_error *err)
{
    cl_ulong start = 0, end = 0;
    KCS_OPENCL_CHECK(clWaitForEvents(1, &events->last), err);
    KCS_OPENCL_CHECK(clGetEventProfilingInfo(events->first, CL_PROFILING_COMMAND_START, sizeof start,
                                             &start, NULL), err);
    KCS_OPENCL_CHECK(clGetEventProfilingInfo(events->last, CL_PROFILING_COMMAND_END, sizeof end, &end,
                                             NULL), err);
    *seconds = end > start ? 1e-9 * (double)(end - start) : 0.0;
    return KCS_OK;
}

kcs_status kcs_opencl_elapsed(kcs_opencl_events *events, double *seconds, kcs_error *err)
{
    if (!events->first)
        return kcs_fail(err, KCS_ERROR, "no kernel was launched to time");
    kcs_status status = event_span(events, seconds, err);
    kcs_opencl_events_release(events);
    return status;
}

/* ---- the backend ------------------------------------------------------------ */

static kcs_status synchronize(kcs_device *device, kcs_error *err)
{
    KCS_OPENCL_CHECK(clFinish(device->queue), err);
    return KCS_OK;
}

static void *native_queue(kcs_device *device)
{
    return device->queue;
}

/* Every op file's kcs_opencl_<op>_kernels, NULL-terminated (generated by configure.py). */
extern const kcs_kernel_table *const kcs_opencl_kernel_tables[];

const kcs_backend kcs_opencl_backend = {
    .interface_version = KCS_BACKEND_INTERFACE_VERSION,
    .name = "opencl",
    .device_count = device_count,
    .open = open_device,
    .close = close_device,
    .allocate = allocate,
    .release = release,
    .upload = upload,
    .download = download,
    .host_allocate = host_allocate,
    .host_release = host_release,
    .measure_ceilings = kcs_opencl_measure_ceilings,
    .kernel_tables = kcs_opencl_kernel_tables,
    .synchronize = synchronize,
    .native_queue = native_queue,
    .time_back_to_back = time_back_to_back,
};
