/* devices.c: opening the devices the options want (--backend, --device,
 * --platform), measuring their ceilings, and `kcs devices`. A built backend
 * with no usable device is kept with the reason, so that its cases are
 * reported as skipped rather than silently absent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

static int backend_wanted(const kcs_runner_options *o, const char *name)
{
    if (!o->backends[0])
        return 1;
    char list[512];
    snprintf(list, sizeof list, "%s", o->backends);
    for (char *save = NULL, *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save))
        if (strcmp(item, name) == 0)
            return 1;
    return 0;
}

static int contains_ignoring_case(const char *text, const char *needle)
{
    size_t length = strlen(needle);
    for (; *text; text++)
        if (strncasecmp(text, needle, length) == 0)
            return 1;
    return length == 0;
}

static int device_wanted(const kcs_runner_options *o, int index, const kcs_device_info *info)
{
    int index_ok = o->device_count == 0;
    for (int i = 0; i < o->device_count; i++)
        index_ok |= o->devices[i] == index;
    return index_ok && (!o->platform || contains_ignoring_case(info->platform, o->platform) ||
                        contains_ignoring_case(info->name, o->platform));
}

static void add_device(kcs_device_set *set, const kcs_open_device *device)
{
    set->devices = realloc(set->devices, (size_t)(set->device_count + 1) * sizeof *set->devices);
    set->devices[set->device_count++] = *device;
}

static void add_absent(kcs_device_set *set, const kcs_backend *backend, const char *reason)
{
    set->absent = realloc(set->absent, (size_t)(set->absent_count + 1) * sizeof *set->absent);
    kcs_absent_backend *absent = &set->absent[set->absent_count++];
    absent->backend = backend;
    snprintf(absent->reason, sizeof absent->reason, "no %s device: %s", backend->name, reason);
}

/* Which devices of the plan a lane opens: NULL plan, every one. */
typedef struct {
    const kcs_lane_plan *plan;
    int lane;
} lane_filter;

/* The plan's entry of a device id, or NULL. */
static const kcs_lane_device *planned(const kcs_lane_plan *plan, const char *id)
{
    for (int d = 0; d < plan->device_count; d++)
        if (strcmp(plan->devices[d].id, id) == 0)
            return &plan->devices[d];
    return NULL;
}

/* Whether a lane runs device index of backend: checked before opening it,
 * so that no worker makes a context on another lane's GPU. */
static int in_lane(const lane_filter *filter, const kcs_backend *backend, int index)
{
    if (!filter->plan)
        return 1;
    char id[64];
    snprintf(id, sizeof id, "%s:%d", backend->name, index);
    const kcs_lane_device *device = planned(filter->plan, id);
    return device && device->lane == filter->lane;
}

/* Opens the wanted devices among a backend's count; returns how many it
 * added, with the last reason one could not be opened in reason. */
static int open_backend_devices(const kcs_runner_options *o, const lane_filter *filter,
                                const kcs_backend *backend, int count, kcs_device_set *set, char *reason,
                                size_t reason_size)
{
    int opened = 0;
    for (int index = 0; index < count; index++) {
        if (!in_lane(filter, backend, index))
            continue;
        kcs_error err = {{0}};
        kcs_open_device d = {.backend = backend, .index = index};
        if (backend->open(index, &d.device, &d.info, &err) != KCS_OK) {
            snprintf(reason, reason_size, "device %d: %s", index, err.message);
            fprintf(stderr, "kcs: %s device %d cannot be opened: %s\n", backend->name, index, err.message);
            continue;
        }
        if (!device_wanted(o, index, &d.info)) {
            backend->close(d.device);
            continue;
        }
        snprintf(d.id, sizeof d.id, "%s:%d", backend->name, index);
        const kcs_lane_device *known = filter->plan ? planned(filter->plan, d.id) : NULL;
        if (known && known->has_ceilings) { /* measured by the first worker, alone */
            d.ceilings = known->ceilings;
            d.has_ceilings = 1;
        }
        add_device(set, &d);
        opened++;
    }
    return opened;
}

/* Whether the plan has a device of backend in lane (any lane: -1). */
static int lane_has_backend(const lane_filter *filter, int lane, const kcs_backend *backend)
{
    size_t length = strlen(backend->name);
    for (int d = 0; d < filter->plan->device_count; d++) {
        const kcs_lane_device *device = &filter->plan->devices[d];
        if ((lane < 0 || device->lane == lane) && strncmp(device->id, backend->name, length) == 0 &&
            device->id[length] == ':')
            return 1;
    }
    return 0;
}

/* Opens a backend's wanted devices, or records it as absent with the reason
 * (in a lane: only lane 0 records backends without a device, and any lane a
 * device of its own that did not open). */
static void open_backend(const kcs_runner_options *o, const lane_filter *filter, const kcs_backend *backend,
                         kcs_device_set *set)
{
    if (filter->plan && !lane_has_backend(filter, filter->lane, backend) &&
        (filter->lane != 0 || lane_has_backend(filter, -1, backend)))
        return; /* another lane's backend, or one without devices that lane 0 reports */
    kcs_error err = {{0}};
    int count = 0, opened = 0;
    char reason[1024] = "";
    if (backend->device_count(&count, &err) != KCS_OK) {
        snprintf(reason, sizeof reason, "%s", err.message);
    } else {
        opened = open_backend_devices(o, filter, backend, count, set, reason, sizeof reason);
        if (!opened && !reason[0])
            snprintf(reason, sizeof reason, "%s",
                     count == 0 ? "no device found" : "no device matches --device/--platform");
    }
    if (!opened && (!filter->plan || filter->lane == 0 || reason[0]))
        add_absent(set, backend, reason);
}

static void open_devices(const kcs_runner_options *o, const lane_filter *filter, kcs_device_set *set)
{
    memset(set, 0, sizeof *set);
    for (size_t b = 0; b < kcs_builtin_backend_count; b++)
        if (backend_wanted(o, kcs_builtin_backends[b]->name))
            open_backend(o, filter, kcs_builtin_backends[b], set);
}

void kcs_open_devices(const kcs_runner_options *o, kcs_device_set *set)
{
    lane_filter every = {NULL, 0};
    open_devices(o, &every, set);
}

void kcs_open_lane_devices(const kcs_runner_options *o, const kcs_lane_plan *plan, int lane, kcs_device_set *set)
{
    lane_filter filter = {plan, lane};
    open_devices(o, &filter, set);
}

void kcs_keep_lane_devices(const kcs_lane_plan *plan, int lane, kcs_device_set *set)
{
    lane_filter filter = {plan, lane};
    int kept = 0;
    for (int d = 0; d < set->device_count; d++) {
        kcs_open_device *device = &set->devices[d];
        if (in_lane(&filter, device->backend, device->index))
            set->devices[kept++] = *device;
        else
            device->backend->close(device->device);
    }
    set->device_count = kept;
}

void kcs_pci_bus_id(const char *details, char *pci, size_t size)
{
    pci[0] = '\0';
    for (const char *at = strstr(details, "pci_bus_id="); at; at = strstr(at + 1, "pci_bus_id=")) {
        if (at != details && at[-1] != ' ' && at[-1] != ';')
            continue;
        at += strlen("pci_bus_id=");
        snprintf(pci, size, "%.*s", (int)strcspn(at, "; "), at);
        return;
    }
}

void kcs_plan_lanes(const kcs_runner_options *o, kcs_lane_plan *plan)
{
    /* Default: the devices that share the host's cores in one lane (two
     * CPU-heavy workers at once would only take turns on the cores and
     * disturb each other's timing), every other device a lane of its own.
     * --jobs: every device its own lane (the user chose how many at once).
     * Either way a device at the PCI address of one planned before it (the
     * CUDA and the NVIDIA OpenCL device of one card) joins that one's lane:
     * two lanes on one card would time each other's kernels. */
    int host_lane = -1;
    plan->lane_count = 0;
    for (int d = 0; d < plan->device_count; d++) {
        kcs_lane_device *device = &plan->devices[d];
        int same_card = -1;
        for (int e = 0; e < d && device->pci_bus_id[0] && same_card < 0; e++)
            if (strcmp(plan->devices[e].pci_bus_id, device->pci_bus_id) == 0)
                same_card = e;
        if (same_card >= 0) {
            device->lane = plan->devices[same_card].lane;
        } else if (!o->jobs && device->shares_host_cores) {
            if (host_lane < 0)
                host_lane = plan->lane_count++;
            device->lane = host_lane;
        } else {
            device->lane = plan->lane_count++;
        }
    }
    if (plan->lane_count == 0)
        plan->lane_count = 1; /* no device: one lane records the backends' skips */
    /* lane 0 is the first worker's: it holds the first device opened, and
     * the lanes keep the order in which their first devices were opened */
}

void kcs_lane_label(const kcs_lane_plan *plan, int lane, char *label, size_t size)
{
    int found = 0, one_card = 1;
    const char *card = "";
    snprintf(label, size, "lane %d", lane);
    for (int d = 0; d < plan->device_count; d++) {
        if (plan->devices[d].lane != lane)
            continue;
        if (found++ == 0) {
            snprintf(label, size, "%s", plan->devices[d].id);
            card = plan->devices[d].pci_bus_id;
        }
        one_card &= card[0] && strcmp(card, plan->devices[d].pci_bus_id) == 0;
    }
    if (found > 1 && one_card)
        snprintf(label, size, "card %s", card);
    else if (found > 1)
        snprintf(label, size, "host");
}

int kcs_lane_shares_host_cores(const kcs_lane_plan *plan, int lane)
{
    for (int d = 0; d < plan->device_count; d++)
        if (plan->devices[d].lane == lane && plan->devices[d].shares_host_cores)
            return 1;
    return 0;
}

void kcs_close_devices(kcs_device_set *set)
{
    for (int d = 0; d < set->device_count; d++)
        set->devices[d].backend->close(set->devices[d].device);
    free(set->devices);
    free(set->absent);
    memset(set, 0, sizeof *set);
}

const kcs_ceilings *kcs_device_ceilings(const kcs_open_device *device)
{
    return device->has_ceilings ? &device->ceilings : NULL;
}

/* "ceilings cuda:0: copy 2.99 TB/s (only those the timed cases need;
 * --all-ceilings measures every one)": each rate measured and, where the run
 * did not ask for all, says so, so that a missing rate reads as a choice of
 * the run and not as a device that lacks it. */
static void print_ceilings(const kcs_open_device *device)
{
    const kcs_ceilings *c = &device->ceilings;
    printf("ceilings %s:", device->id);
    const char *separator = " ";
    for (const kcs_ceiling_rate *rate = kcs_ceiling_rates; rate->key; rate++) {
        double value = kcs_ceiling_rate_value(c, rate);
        if (!(value > 0))
            continue;
        char text[64];
        kcs_format_rate(value, strstr(rate->key, "_flops_") ? "FLOP/s" : "B/s", text, sizeof text);
        printf("%s%s %s", separator, rate->label, text);
        separator = ", ";
    }
    if (*separator == ' ')
        printf(" none could be measured");
    if ((c->asked & KCS_CEILINGS_ALL) != KCS_CEILINGS_ALL)
        printf(" (only those the timed cases need; --all-ceilings measures every one)");
    printf("\n");
}

kcs_ceiling_mask kcs_ceilings_wanted(const kcs_runner_options *o, const kcs_case_list *cases,
                                     const kcs_backend *backend)
{
    if (o->all_ceilings)
        return KCS_CEILINGS_ALL;
    kcs_ceiling_mask wanted = 0;
    for (size_t i = 0; i < cases->count; i++) {
        const kcs_case *c = &cases->cases[i];
        /* what run.c and suite.c time: a selected case that the run times and
         * that backend does not leave out */
        if (!kcs_run_times(&o->run, c) || !kcs_case_selected(o, c) || kcs_case_left_out(o, c, backend))
            continue;
        int runs_here = 0;
        for (size_t k = 0; k < kcs_backend_kernel_count(backend) && !runs_here; k++)
            runs_here = kcs_kernel_selected(o, kcs_backend_kernel(backend, k), c);
        const kcs_op *op = NULL;
        kcs_op_args args;
        kcs_layout layout;
        kcs_error err = {{0}};
        if (!runs_here || kcs_op_prepare(c, &op, &args, &layout, &err) != KCS_OK)
            continue; /* a case that cannot be prepared is an error of its own, never timed */
        wanted |= kcs_ceilings_judging(op, &args);
    }
    return wanted;
}

void kcs_measure_device_ceilings(kcs_open_device *device, kcs_ceiling_mask wanted)
{
    if (!device->backend->measure_ceilings)
        return;
    if (!wanted) {
        printf("ceilings %s: none measured: no case this run times runs on it\n", device->id);
        fflush(stdout);
        return;
    }
    kcs_error err = {{0}};
    if (device->backend->measure_ceilings(device->device, wanted, &device->ceilings, &err) != KCS_OK) {
        printf("ceilings %s: not measured: %s\n", device->id, err.message);
    } else {
        device->ceilings.asked = wanted;
        device->has_ceilings = 1;
        print_ceilings(device);
    }
    fflush(stdout);
}

void kcs_measure_ceilings(kcs_device_set *set)
{
    for (int d = 0; d < set->device_count; d++)
        kcs_measure_device_ceilings(&set->devices[d], KCS_CEILINGS_ALL);
}

/* Prints a device and the kernels its backend has. */
static void print_device(const kcs_open_device *device)
{
    const kcs_device_info *info = &device->info;
    printf("%-12s %s [%s] driver %s, %s, %.1f GiB", device->id, info->name, info->platform,
           info->driver_version, info->runtime_version, (double)info->memory_bytes / (1 << 30));
    if (info->details[0])
        printf("; %s", info->details);
    putchar('\n');
    for (size_t k = 0; k < kcs_backend_kernel_count(device->backend); k++) {
        const kcs_kernel *kernel = kcs_backend_kernel(device->backend, k);
        printf("             kernel %s %s %s: %s\n", kernel->op, kcs_dtype_name(kernel->dtype), kernel->variant,
               kernel->description);
    }
}

int kcs_command_devices(const kcs_runner_options *o)
{
    kcs_device_set set;
    kcs_open_devices(o, &set);
    if (o->ceilings)
        kcs_measure_ceilings(&set);
    for (int d = 0; d < set.device_count; d++)
        print_device(&set.devices[d]);
    for (int a = 0; a < set.absent_count; a++)
        printf("%-12s %s\n", set.absent[a].backend->name, set.absent[a].reason);
    kcs_close_devices(&set);
    return KCS_EXIT_PASSED;
}
