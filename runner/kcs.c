/* kcs.c: the runner. One binary that lists cases, runs them on every chosen
 * backend and device, writes the results file and the JUnit file, and
 * rewrites golden data when asked to. docs/runner.md documents it; `kcs
 * --help` prints the same.
 *
 * Exit status: 0 when every case that ran passed (skips are not failures),
 * 1 when any case failed or had an error, 2 for a usage or configuration
 * error (unknown option or backend, unreadable case directory, results file
 * that cannot be written).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "case_file.h"
#include "expectations.h"
#include "op.h"
#include "results.h"
#include "speed.h"
#include "runner.h"
#include "suite.h"
#include "take_away.h"

#ifndef KCS_SOURCE_DIR
#define KCS_SOURCE_DIR "."
#endif

enum { exit_passed = 0, exit_failed = 1, exit_usage = 2 };

static const char usage_text[] =
    "usage: kcs [run] [options] [PATTERN...]   run cases (the default command)\n"
    "       kcs list [options] [PATTERN...]    list cases\n"
    "       kcs devices [options]              list backends and their devices\n"
    "       kcs golden [options] [PATTERN...]  rewrite golden outputs and golden/MANIFEST\n"
    "       kcs apply OP --input NAME=FILE.npy ...  run one op on .npy inputs (kcs apply --help)\n"
    "\n"
    "A PATTERN is a shell glob on case names (\"sumsq/f64-*\"), or a prefix\n"
    "when it has no wildcard (\"sumsq\"). Without patterns every case is taken.\n"
    "\n"
    "options:\n"
    "  --cases DIR        directory of case files (default: " KCS_SOURCE_DIR "/cases)\n"
    "  --golden DIR       directory of golden files (default: " KCS_SOURCE_DIR "/golden)\n"
    "  --backend LIST     comma-separated backends to use (default: all built)\n"
    "  --device N         only device N of each backend (repeatable; default: all)\n"
    "  --platform TEXT    only devices whose platform or name contains TEXT\n"
    "  --results FILE     write the JSON results here (default: kcs-results.json)\n"
    "  --junit FILE       also write JUnit XML here\n"
    "  --benchmark        time perf-tagged cases (kernel and end to end) and measure\n"
    "                     each device's ceilings (copy, upload, FMA, GEMM rates)\n"
    "  --ceilings         measure ceilings without benchmarking (kcs devices --ceilings)\n"
    "  --min-repeats N    timed runs per case at least (default 10)\n"
    "  --min-time S       seconds of timed runs per case at least (default 0.5)\n"
    "  --skip-large       leave out cases tagged large (reported as skipped)\n"
    "  --save-failures DIR  write failing cases' inputs, expected and actual outputs as\n"
    "                     .npy under DIR, with a replay command (default: kcs-failures)\n"
    "  --save-all         write every case that way, not only failures\n"
    "  --no-save          write no .npy files\n"
    "  --time-limit S     a case making no progress for S seconds is an error and the\n"
    "                     run goes on (default 600; 0: no limit)\n"
    "  --in-process       run cases in this process, not in a worker process (for a\n"
    "                     debugger; a hang or crash then ends the run)\n"
    "  --expectations FILE  expected failures and skips, each with a reason (repeatable;\n"
    "                     docs/expectations.md): they do not fail the run, and a listed\n"
    "                     case that passes does\n"
    "  --determinism      run each kernel twice; outputs that differ in any bit fail\n"
    "  --quiet            print only failures, errors and the summary\n"
    "  --help             this text\n"
    "\n"
    "exit status: 0 all passed, 1 a case failed or had an error, 2 usage or configuration error\n";

typedef struct {
    const char *command;
    char cases_dir[2048];
    char golden_dir[2048];
    char backends[512];
    int devices[64];
    int device_count;
    const char *platform;
    const char *results_path;
    const char *junit_path;
    int skip_large;
    int quiet;
    int ceilings; /* measure ceilings (always with --benchmark) */
    int in_process;    /* no worker process: faster to debug, but a hang or crash ends the run */
    double time_limit; /* seconds without progress before a worker is killed; 0: none */
    kcs_expectations expectations; /* expected failures and skips (--expectations) */
    const char *save_dir; /* NULL: save nothing */
    int save_all;
    const char *program;
    kcs_run_options run;
    char **patterns;
    int pattern_count;
} options;

/* An open device of a backend. */
typedef struct {
    const kcs_backend *backend;
    int index;
    kcs_device *device;
    kcs_device_info info;
    char id[64];
    kcs_ceilings ceilings;
    int has_ceilings; /* measured in this run */
} open_device;

/* A backend that has no usable device, and why. */
typedef struct {
    const kcs_backend *backend;
    char reason[1024];
} absent_backend;

static int parse_options(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->command = "run";
    snprintf(o->cases_dir, sizeof o->cases_dir, "%s/cases", KCS_SOURCE_DIR);
    snprintf(o->golden_dir, sizeof o->golden_dir, "%s/golden", KCS_SOURCE_DIR);
    o->results_path = "kcs-results.json";
    o->save_dir = "kcs-failures";
    o->time_limit = 600;
    o->program = argv[0];
    o->run.min_repeats = 10;
    o->run.min_seconds = 0.5;
    o->run.max_repeats = 1000;
    int first = 1;
    if (argc > 1 && (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "list") == 0 ||
                     strcmp(argv[1], "devices") == 0 || strcmp(argv[1], "golden") == 0)) {
        o->command = argv[1];
        first = 2;
    }
    static const struct option long_options[] = {
        {"cases", required_argument, 0, 'c'},      {"golden", required_argument, 0, 'g'},
        {"backend", required_argument, 0, 'b'},    {"device", required_argument, 0, 'd'},
        {"platform", required_argument, 0, 'p'},   {"results", required_argument, 0, 'r'},
        {"junit", required_argument, 0, 'j'},      {"benchmark", no_argument, 0, 'B'},
        {"min-repeats", required_argument, 0, 'n'}, {"min-time", required_argument, 0, 't'},
        {"skip-large", no_argument, 0, 'L'},       {"quiet", no_argument, 0, 'q'},
        {"save-failures", required_argument, 0, 'S'}, {"save-all", no_argument, 0, 'A'},
        {"no-save", no_argument, 0, 'N'},          {"ceilings", no_argument, 0, 'C'},
        {"in-process", no_argument, 0, 'I'},       {"time-limit", required_argument, 0, 'T'},
        {"expectations", required_argument, 0, 'X'}, {"determinism", no_argument, 0, 'D'},          {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    optind = first;
    for (int option; (option = getopt_long(argc, argv, "", long_options, NULL)) != -1;) {
        char *end;
        switch (option) {
        case 'c': snprintf(o->cases_dir, sizeof o->cases_dir, "%s", optarg); break;
        case 'g': snprintf(o->golden_dir, sizeof o->golden_dir, "%s", optarg); break;
        case 'b': snprintf(o->backends, sizeof o->backends, "%s", optarg); break;
        case 'd': {
            long index = strtol(optarg, &end, 10);
            if (*end || index < 0 || o->device_count == 64) {
                fprintf(stderr, "kcs: --device needs a device index >= 0, not '%s'\n", optarg);
                return 0;
            }
            o->devices[o->device_count++] = (int)index;
            break;
        }
        case 'p': o->platform = optarg; break;
        case 'r': o->results_path = optarg; break;
        case 'j': o->junit_path = optarg; break;
        case 'B': o->run.benchmark = 1; o->ceilings = 1; break;
        case 'C': o->ceilings = 1; break;
        case 'I': o->in_process = 1; break;
        case 'D': o->run.determinism = 1; break;
        case 'X': {
            kcs_error err = {{0}};
            if (kcs_expectations_read(optarg, &o->expectations, &err) != KCS_OK) {
                fprintf(stderr, "kcs: %s\n", err.message);
                return 0;
            }
            break;
        }
        case 'T':
            o->time_limit = strtod(optarg, &end);
            if (*end || !(o->time_limit >= 0)) {
                fprintf(stderr, "kcs: --time-limit needs seconds >= 0 (0: no limit)\n");
                return 0;
            }
            break;
        case 'n':
            o->run.min_repeats = (int)strtol(optarg, &end, 10);
            if (*end || o->run.min_repeats < 1 || o->run.min_repeats > 100000) {
                fprintf(stderr, "kcs: --min-repeats needs a count from 1 to 100000\n");
                return 0;
            }
            if (o->run.max_repeats < o->run.min_repeats)
                o->run.max_repeats = o->run.min_repeats;
            break;
        case 't':
            o->run.min_seconds = strtod(optarg, &end);
            if (*end || !(o->run.min_seconds >= 0 && o->run.min_seconds <= 3600)) {
                fprintf(stderr, "kcs: --min-time needs seconds from 0 to 3600\n");
                return 0;
            }
            break;
        case 'L': o->skip_large = 1; break;
        case 'q': o->quiet = 1; break;
        case 'S': o->save_dir = optarg; break;
        case 'A': o->save_all = 1; break;
        case 'N': o->save_dir = NULL; break;
        case 'h': fputs(usage_text, stdout); exit(exit_passed);
        default: fputs(usage_text, stderr); return 0;
        }
    }
    o->patterns = argv + optind;
    o->pattern_count = argc - optind;
    return 1;
}

static int selected(const options *o, const kcs_case *c)
{
    if (o->pattern_count == 0)
        return 1;
    for (int i = 0; i < o->pattern_count; i++)
        if (kcs_case_matches(c, o->patterns[i]))
            return 1;
    return 0;
}

static int backend_wanted(const options *o, const char *name)
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

static int device_wanted(const options *o, int index, const kcs_device_info *info)
{
    int index_ok = o->device_count == 0;
    for (int i = 0; i < o->device_count; i++)
        index_ok |= o->devices[i] == index;
    return index_ok && (!o->platform || contains_ignoring_case(info->platform, o->platform) ||
                        contains_ignoring_case(info->name, o->platform));
}

/* Checks the backend names given with --backend against those built. */
static int check_backend_names(const options *o)
{
    if (!o->backends[0])
        return 1;
    char list[512];
    snprintf(list, sizeof list, "%s", o->backends);
    for (char *save = NULL, *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (size_t b = 0; b < kcs_builtin_backend_count; b++)
            found |= strcmp(kcs_builtin_backends[b]->name, item) == 0;
        if (!found) {
            fprintf(stderr, "kcs: no backend '%s' in this build (built:", item);
            for (size_t b = 0; b < kcs_builtin_backend_count; b++)
                fprintf(stderr, " %s", kcs_builtin_backends[b]->name);
            fprintf(stderr, "); configure.py says what it left out and why\n");
            return 0;
        }
    }
    return 1;
}

/* Opens every wanted device; backends without one are kept with the reason. */
static void open_devices(const options *o, open_device **devices, int *device_count,
                         absent_backend **absent, int *absent_count)
{
    *devices = NULL;
    *absent = NULL;
    *device_count = *absent_count = 0;
    for (size_t b = 0; b < kcs_builtin_backend_count; b++) {
        const kcs_backend *backend = kcs_builtin_backends[b];
        if (!backend_wanted(o, backend->name))
            continue;
        kcs_error err = {{0}};
        int count = 0, opened = 0;
        kcs_status status = backend->device_count(&count, &err);
        char reason[1024] = "";
        if (status != KCS_OK) {
            snprintf(reason, sizeof reason, "%s", err.message);
        } else {
            for (int index = 0; index < count; index++) {
                open_device d = {.backend = backend, .index = index};
                if (backend->open(index, &d.device, &d.info, &err) != KCS_OK) {
                    snprintf(reason, sizeof reason, "device %d: %s", index, err.message);
                    fprintf(stderr, "kcs: %s device %d cannot be opened: %s\n", backend->name, index,
                            err.message);
                    continue;
                }
                if (!device_wanted(o, index, &d.info)) {
                    backend->close(d.device);
                    continue;
                }
                snprintf(d.id, sizeof d.id, "%s:%d", backend->name, index);
                *devices = realloc(*devices, (size_t)(*device_count + 1) * sizeof **devices);
                (*devices)[(*device_count)++] = d;
                opened++;
            }
            if (!opened && !reason[0])
                snprintf(reason, sizeof reason, "%s", count == 0 ? "no device found"
                                                                 : "no device matches --device/--platform");
        }
        if (!opened) {
            *absent = realloc(*absent, (size_t)(*absent_count + 1) * sizeof **absent);
            (*absent)[*absent_count].backend = backend;
            snprintf((*absent)[*absent_count].reason, sizeof (*absent)[*absent_count].reason,
                     "no %s device: %s", backend->name, reason);
            (*absent_count)++;
        }
    }
}

static void print_line_expected(const options *o, const char *case_name, const char *where,
                                const kcs_run_result *run, const kcs_speed *speed,
                                const kcs_expectation *expected);

/* Measures each device's ceilings where its backend can, and says what it found. */
static void measure_ceilings(open_device *devices, int device_count)
{
    for (int d = 0; d < device_count; d++) {
        const kcs_backend *backend = devices[d].backend;
        if (!backend->measure_ceilings)
            continue;
        kcs_error err = {{0}};
        if (backend->measure_ceilings(devices[d].device, &devices[d].ceilings, &err) != KCS_OK) {
            printf("ceilings %s: not measured: %s\n", devices[d].id, err.message);
            continue;
        }
        devices[d].has_ceilings = 1;
        const kcs_ceilings *c = &devices[d].ceilings;
        printf("ceilings %s: copy %.1f GB/s", devices[d].id, 1e-9 * c->copy_bytes_per_s);
        if (c->host_to_device_bytes_per_s > 0)
            printf(", host to device %.1f GB/s", 1e-9 * c->host_to_device_bytes_per_s);
        if (c->fma_flops_per_s > 0)
            printf(", FMA %.1f TFLOP/s", 1e-12 * c->fma_flops_per_s);
        if (c->gemm_flops_per_s > 0)
            printf(", SGEMM %.1f TFLOP/s", 1e-12 * c->gemm_flops_per_s);
        printf("\n");
    }
    fflush(stdout);
}

static void print_line(const options *o, const char *case_name, const char *where,
                       const kcs_run_result *run)
{
    print_line_expected(o, case_name, where, run, NULL, NULL);
}

/* Prints one result; with an expectation, XFAIL (or XSKIP, XERROR) when it
 * was met and XPASS when a listed case passed. */
static void print_line_expected(const options *o, const char *case_name, const char *where,
                                const kcs_run_result *run, const kcs_speed *speed,
                                const kcs_expectation *expected)
{
    if (o->quiet && (run->outcome == KCS_OUTCOME_PASS || run->outcome == KCS_OUTCOME_SKIP) && !expected)
        return;
    static const char *labels[] = {"PASS ", "FAIL ", "SKIP ", "ERROR"};
    static const char *expected_labels[] = {"XPASS", "XFAIL", "XSKIP", "XERR "};
    if (expected && run->outcome != KCS_OUTCOME_PASS) {
        const char *outcome = kcs_outcome_name(run->outcome);
        int met = strcmp(outcome, expected->outcome) == 0 ||
                  (strcmp(expected->outcome, "fail") == 0 && run->outcome == KCS_OUTCOME_ERROR);
        if (!met)
            expected = NULL; /* a different failure than the one listed: shown as it is */
    }
    printf("%s %-40s %-34s", expected ? expected_labels[run->outcome] : labels[run->outcome], case_name, where);
    if (expected && run->outcome == KCS_OUTCOME_PASS) {
        printf(" unexpected pass: %s:%d expects %s (%s)\n", expected->file, expected->line, expected->outcome,
               expected->reason);
        fflush(stdout);
        return;
    }
    if (run->outcome == KCS_OUTCOME_PASS) {
        printf(" %8.2e of bound", run->check.fraction);
        if (run->timed) {
            printf("  kernel %.4g ms (median of %d)", 1e3 * run->kernel.median, run->kernel.repeats);
            if (speed) {
                char text[160];
                kcs_speed_format(speed, text, sizeof text);
                printf(", %s", text);
            }
        }
    } else {
        printf(" %s", run->message);
    }
    putchar('\n');
    fflush(stdout);
}

static void read_revision(char *revision, size_t size)
{
    snprintf(revision, size, "unknown");
    FILE *git = popen("git -C '" KCS_SOURCE_DIR "' describe --always --dirty --abbrev=12 2>/dev/null", "r");
    if (!git)
        return;
    if (fgets(revision, (int)size, git))
        revision[strcspn(revision, "\n")] = '\0';
    if (pclose(git) != 0 || !revision[0])
        snprintf(revision, size, "unknown");
}

/* Where results go. In one process they are added to the results directly;
 * in a worker they are sent, one line each, to the supervising runner,
 * which notices a worker that hangs or dies and starts another after the
 * unit that failed (docs/runner.md, "Isolation"). */
typedef struct {
    kcs_results *results; /* in one process: add here */
    int fd;               /* in a worker: send here, else -1 */
    int skip_case;        /* a restarted worker skips units up to and including */
    int skip_unit;        /*   (skip_case, skip_unit); -1 when nothing is skipped */
} sink;

/* Writes all of a line to a pipe. */
static void send_line(int fd, const char *kind, const char *text)
{
    size_t length = strlen(kind) + strlen(text) + 2;
    char *line = malloc(length + 1);
    if (!line)
        return;
    snprintf(line, length + 1, "%s %s\n", kind, text);
    for (size_t sent = 0; sent < length;) {
        ssize_t wrote = write(fd, line + sent, length - sent);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote <= 0)
            break;
        sent += (size_t)wrote;
    }
    free(line);
}

static void sink_result(sink *out, const kcs_result_entry *entry)
{
    if (out->fd < 0) {
        kcs_results_add(out->results, entry);
        return;
    }
    char *text = kcs_result_entry_serialize(entry);
    if (text)
        send_line(out->fd, "R", text);
    free(text);
}

static void sink_device(sink *out, const open_device *device)
{
    const kcs_ceilings *ceilings = device->has_ceilings ? &device->ceilings : NULL;
    if (out->fd < 0) {
        kcs_results_add_device(out->results, device->id, device->backend->name, device->index, &device->info,
                               ceilings);
        return;
    }
    char *text = kcs_device_serialize(device->id, device->backend->name, device->index, &device->info,
                                      ceilings);
    if (text)
        send_line(out->fd, "D", text);
    free(text);
}

/* Announces unit (case_index, unit) to the supervisor; returns 0 when this
 * worker must skip it (an earlier worker did it, or hung or died there). */
static int sink_begin(sink *out, int case_index, int unit, const kcs_result_entry *identity)
{
    /* A case is prepared again (unit 0) by a restarted worker unless the
     * earlier one failed in its preparation (skip_unit INT_MAX). */
    if (case_index < out->skip_case ||
        (case_index == out->skip_case && (unit == 0 ? out->skip_unit == INT_MAX : unit <= out->skip_unit)))
        return 0;
    if (out->fd < 0)
        return 1;
    kcs_run_result placeholder = {.outcome = KCS_OUTCOME_ERROR};
    kcs_result_entry entry = *identity;
    entry.run = &placeholder;
    char *text = kcs_result_entry_serialize(&entry);
    char header[64];
    snprintf(header, sizeof header, "B %d %d", case_index, unit);
    if (text)
        send_line(out->fd, header, text);
    free(text);
    return 1;
}

/* Runs the cases in worker processes, one after another: a worker that
 * makes no progress for the time limit is killed, one that dies is
 * buried, the unit it was in is recorded as an error, and a new worker
 * goes on after it. */
static void run_cases(const options *o, const kcs_case_list *cases, sink *out);

static void supervise(const options *o, const kcs_case_list *cases, kcs_results *results)
{
    int skip_case = -1, skip_unit = -1;
    for (;;) {
        int pipe_ends[2];
        if (pipe(pipe_ends) != 0) {
            fprintf(stderr, "kcs: cannot make a pipe (%s); running in this process\n", strerror(errno));
            sink direct = {.results = results, .fd = -1, .skip_case = skip_case, .skip_unit = skip_unit};
            run_cases(o, cases, &direct);
            return;
        }
        fflush(stdout);
        fflush(stderr);
        pid_t worker = fork();
        if (worker == 0) {
            close(pipe_ends[0]);
            sink remote = {.fd = pipe_ends[1], .skip_case = skip_case, .skip_unit = skip_unit};
            run_cases(o, cases, &remote);
            send_line(pipe_ends[1], "E", "");
            fflush(stdout);
            _exit(0);
        }
        close(pipe_ends[1]);
        if (worker < 0) {
            close(pipe_ends[0]);
            fprintf(stderr, "kcs: cannot start a worker (%s); running in this process\n", strerror(errno));
            sink direct = {.results = results, .fd = -1, .skip_case = skip_case, .skip_unit = skip_unit};
            run_cases(o, cases, &direct);
            return;
        }
        char *buffer = NULL, *current = NULL;
        size_t used = 0, capacity = 0;
        int current_case = -1, current_unit = -1, finished = 0, hung = 0;
        struct pollfd watch = {.fd = pipe_ends[0], .events = POLLIN};
        for (;;) {
            char *newline = used ? memchr(buffer, '\n', used) : NULL;
            if (!newline) {
                int ready = poll(&watch, 1, o->time_limit > 0 ? (int)(o->time_limit * 1000) : -1);
                if (ready < 0 && errno == EINTR)
                    continue;
                if (ready == 0) {
                    hung = 1;
                    break;
                }
                if (capacity - used < 65536) {
                    capacity = capacity ? 2 * capacity : 1 << 20;
                    char *grown = realloc(buffer, capacity);
                    if (!grown)
                        break;
                    buffer = grown;
                }
                ssize_t got = read(pipe_ends[0], buffer + used, capacity - used);
                if (got < 0 && errno == EINTR)
                    continue;
                if (got <= 0)
                    break; /* the worker is gone */
                used += (size_t)got;
                continue;
            }
            *newline = '\0';
            const char *line = buffer;
            kcs_error err = {{0}};
            kcs_status status = KCS_OK;
            if (line[0] == 'B') {
                int consumed = 0;
                if (sscanf(line, "B %d %d %n", &current_case, &current_unit, &consumed) == 2) {
                    free(current);
                    current = strdup(line + consumed);
                }
            } else if (line[0] == 'R') {
                status = kcs_results_add_serialized(results, line + 2, &err);
            } else if (line[0] == 'D') {
                status = kcs_results_add_serialized_device(results, line + 2, &err);
            } else if (line[0] == 'E') {
                finished = 1;
            }
            if (status != KCS_OK)
                fprintf(stderr, "kcs: %s\n", err.message);
            size_t consumed = (size_t)(newline - buffer) + 1;
            memmove(buffer, newline + 1, used - consumed);
            used -= consumed;
        }
        close(pipe_ends[0]);
        free(buffer);
        if (hung)
            kill(worker, SIGKILL);
        int wait_status = 0;
        while (waitpid(worker, &wait_status, 0) < 0 && errno == EINTR)
            ;
        if (finished && !hung) {
            free(current);
            return;
        }
        char message[512];
        if (hung)
            snprintf(message, sizeof message,
                     "no progress for %.0f s (the time limit, --time-limit): the worker was killed and the "
                     "run goes on with the next unit", o->time_limit);
        else if (WIFSIGNALED(wait_status))
            snprintf(message, sizeof message,
                     "the worker died of signal %d (%s) here: the run goes on with the next unit",
                     WTERMSIG(wait_status), strsignal(WTERMSIG(wait_status)));
        else
            snprintf(message, sizeof message,
                     "the worker exited with status %d here: the run goes on with the next unit",
                     WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1);
        if (!current) {
            fprintf(stderr, "kcs: the worker failed before its first case: %s\n", message);
            kcs_run_result run = {.outcome = KCS_OUTCOME_ERROR};
            snprintf(run.message, sizeof run.message, "%s", message);
            kcs_result_entry entry = {.case_name = "", .file = "", .run = &run};
            kcs_results_add(results, &entry);
            return;
        }
        kcs_error err = {{0}};
        int expected_before = kcs_results_counts(results).expected;
        if (kcs_results_add_serialized_error(results, current, message, &err) != KCS_OK)
            fprintf(stderr, "kcs: %s\n", err.message);
        printf("%s %-40s %s\n", kcs_results_counts(results).expected > expected_before ? "XERR " : "ERROR",
               cases->cases[current_case].name, message);
        free(current);
        /* After a failure in preparing a case (unit 0) none of its units can run. */
        skip_case = current_case;
        skip_unit = current_unit == 0 ? INT_MAX : current_unit;
    }
}

/* Records a result for a case that never reached a device. */
static void record_case_problem(sink *out, const options *o, const kcs_case *c,
                                const char *case_name, const char *file, int line, kcs_outcome outcome,
                                const char *message)
{
    kcs_run_result run = {.outcome = outcome};
    snprintf(run.message, sizeof run.message, "%s", message);
    kcs_result_entry entry = {.c = c, .case_name = case_name, .file = file, .line = line, .run = &run};
    sink_result(out, &entry);
    print_line(o, case_name, "-", &run);
}

/* Writes a case's inputs and expected values (once) and a kernel's outputs
 * as .npy, and prints where they are and the command that replays the run. */
static void take_away(const options *o, const kcs_prepared_case *p, char *case_dir, size_t case_dir_size,
                      const open_device *device, const kcs_kernel *kernel, const kcs_run_result *run)
{
    kcs_error err = {{0}};
    if (!case_dir[0] && kcs_save_case(o->save_dir, p, case_dir, case_dir_size, &err) != KCS_OK) {
        case_dir[0] = '\0';
        printf("      could not save the case: %s\n", err.message);
        return;
    }
    char label[256], run_dir[4400], replay_dir[4500], command[8192];
    snprintf(label, sizeof label, "%s-%d-%s", device->backend->name, device->index, kernel->variant);
    if (kcs_save_actual(case_dir, label, &p->layout, run->actual, run_dir, sizeof run_dir, &err) != KCS_OK) {
        printf("      could not save the outputs: %s\n", err.message);
        return;
    }
    snprintf(replay_dir, sizeof replay_dir, "%s/replay", run_dir);
    kcs_replay_command(o->program, p, case_dir, device->backend->name, device->index, kernel->variant,
                       replay_dir, command, sizeof command);
    printf("      saved: %s (inputs and expected in %s)\n      replay: %s\n", run_dir, case_dir, command);
}

static int command_list(const options *o, const kcs_case_list *cases)
{
    for (size_t i = 0; i < cases->count; i++) {
        const kcs_case *c = &cases->cases[i];
        if (!selected(o, c))
            continue;
        printf("%-40s %-8s %-4s", c->name, c->op, kcs_dtype_name(c->dtype));
        for (int s = 0; s < c->size_count; s++)
            printf(" %s=%.0f", c->sizes[s].name, c->sizes[s].value);
        printf("  expect %s", c->expect == KCS_EXPECT_GOLDEN ? "golden"
                              : c->expect == KCS_EXPECT_ORACLE ? "oracle" : "closed-form");
        if (c->tags & KCS_TAG_PERF) printf(" [perf]");
        if (c->tags & KCS_TAG_LARGE) printf(" [large]");
        if (c->tags & KCS_TAG_NO_REFERENCE) printf(" [no-reference]");
        putchar('\n');
    }
    for (size_t i = 0; i < cases->problem_count; i++)
        fprintf(stderr, "%s:%d: %s\n", cases->problems[i].file, cases->problems[i].line,
                cases->problems[i].message);
    return cases->problem_count ? exit_failed : exit_passed;
}

static int command_devices(const options *o)
{
    open_device *devices;
    absent_backend *absent;
    int device_count, absent_count;
    open_devices(o, &devices, &device_count, &absent, &absent_count);
    if (o->ceilings)
        measure_ceilings(devices, device_count);
    for (int d = 0; d < device_count; d++) {
        const kcs_device_info *info = &devices[d].info;
        printf("%-12s %s [%s] driver %s, %s, %.1f GiB", devices[d].id, info->name, info->platform,
               info->driver_version, info->runtime_version, (double)info->memory_bytes / (1 << 30));
        if (info->details[0])
            printf("; %s", info->details);
        putchar('\n');
        for (size_t k = 0; k < kcs_backend_kernel_count(devices[d].backend); k++) {
            const kcs_kernel *kernel = kcs_backend_kernel(devices[d].backend, k);
            printf("             kernel %s %s %s: %s\n", kernel->op, kcs_dtype_name(kernel->dtype),
                   kernel->variant, kernel->description);
        }
        devices[d].backend->close(devices[d].device);
    }
    for (int a = 0; a < absent_count; a++)
        printf("%-12s %s\n", absent[a].backend->name, absent[a].reason);
    free(devices);
    free(absent);
    return exit_passed;
}

/* Prepares a golden case from its oracle and writes each output's golden
 * file, counting them in written; a failure is printed with the case. */
static kcs_status write_golden_case(kcs_golden *golden, const kcs_case *c, int *written)
{
    kcs_prepared_case p;
    kcs_error err = {{0}};
    kcs_status status = kcs_prepare_case_from(c, KCS_EXPECT_ORACLE, NULL, &p, &err);
    for (int out = 0; out < p.layout.output_count && status == KCS_OK; out++) {
        char path[2600];
        status = kcs_golden_write(golden, c, &p.layout.outputs[out], p.expected[out].values, path, sizeof path,
                                  &err);
        if (status == KCS_OK) {
            printf("wrote %s\n", path);
            (*written)++;
        }
    }
    if (status != KCS_OK)
        fprintf(stderr, "%s:%d: case %s: %s\n", c->file, c->line, c->name, err.message);
    kcs_prepared_case_free(&p);
    return status;
}

/* Writes the oracle's outputs of every selected golden case and the manifest. */
static int command_golden(const options *o, const kcs_case_list *cases)
{
    kcs_golden *golden;
    kcs_error err = {{0}};
    if (kcs_golden_open_to_write(o->golden_dir, &golden, &err) != KCS_OK) {
        fprintf(stderr, "kcs: %s\n", err.message);
        return exit_usage;
    }
    int failures = 0, written = 0;
    for (size_t i = 0; i < cases->count; i++) {
        const kcs_case *c = &cases->cases[i];
        if (!selected(o, c) || c->expect != KCS_EXPECT_GOLDEN)
            continue;
        if (write_golden_case(golden, c, &written) != KCS_OK)
            failures++;
    }
    if (kcs_golden_write_manifest(golden, &err) != KCS_OK) {
        fprintf(stderr, "kcs: %s\n", err.message);
        failures++;
    }
    kcs_golden_close(golden);
    printf("%d golden files written, %d cases failed\n", written, failures);
    return failures ? exit_failed : exit_passed;
}

/* Runs the selected cases on every wanted device, sending what happens to out. */
static void run_cases(const options *o, const kcs_case_list *cases, sink *out)
{
    open_device *devices;
    absent_backend *absent;
    int device_count, absent_count;
    open_devices(o, &devices, &device_count, &absent, &absent_count);
    if (o->ceilings)
        measure_ceilings(devices, device_count);
    for (int d = 0; d < device_count; d++) {
        sink_device(out, &devices[d]);
        if (!o->quiet)
            printf("device %s: %s [%s], driver %s, %s\n", devices[d].id, devices[d].info.name,
                   devices[d].info.platform, devices[d].info.driver_version,
                   devices[d].info.runtime_version);
    }

    kcs_golden *golden = NULL;
    kcs_error golden_error = {{0}};
    int golden_open = kcs_golden_open(o->golden_dir, &golden, &golden_error) == KCS_OK;

    for (size_t i = 0; i < cases->count; i++) {
        const kcs_case *c = &cases->cases[i];
        if (!selected(o, c))
            continue;
        int unit = 0; /* units of this case: 0 prepares it, then one per result */
        kcs_result_entry identity = {.c = c, .case_name = c->name, .file = c->file, .line = c->line};
        if (!sink_begin(out, (int)i, unit++, &identity))
            continue; /* a worker before this one hung or died preparing this case */
        if (o->skip_large && (c->tags & KCS_TAG_LARGE)) {
            record_case_problem(out, o, c, c->name, c->file, c->line, KCS_OUTCOME_SKIP,
                                "tagged large and --skip-large was given");
            continue;
        }
        kcs_prepared_case p;
        kcs_error err = {{0}};
        kcs_status status;
        char case_dir[4096] = ""; /* set once the case's files are written */
        if (c->expect == KCS_EXPECT_GOLDEN && !golden_open) {
            err = golden_error;
            status = KCS_ERROR;
            memset(&p, 0, sizeof p);
        } else {
            status = kcs_prepare_case(c, golden, &p, &err);
        }
        if (status != KCS_OK) {
            char message[1200];
            snprintf(message, sizeof message, "%s:%d: case %s: %s", c->file, c->line, c->name, err.message);
            record_case_problem(out, o, c, c->name, c->file, c->line, KCS_OUTCOME_ERROR, message);
            kcs_prepared_case_free(&p);
            continue;
        }
        for (int a = 0; a < absent_count; a++) {
            kcs_run_result run = {.outcome = KCS_OUTCOME_SKIP};
            snprintf(run.message, sizeof run.message, "%s", absent[a].reason);
            kcs_result_entry entry = {.c = c, .case_name = c->name, .file = c->file, .line = c->line,
                                      .backend = absent[a].backend->name, .expected_from = p.expected_from,
                                      .op = p.op, .args = &p.args, .run = &run};
            sink_result(out, &entry);
            print_line(o, c->name, absent[a].backend->name, &run);
        }
        for (int d = 0; d < device_count; d++) {
            const kcs_backend *backend = devices[d].backend;
            int kernels_found = 0;
            for (size_t k = 0; k < kcs_backend_kernel_count(backend); k++) {
                const kcs_kernel *kernel = kcs_backend_kernel(backend, k);
                if (strcmp(kernel->op, c->op) != 0 || kernel->dtype != c->dtype)
                    continue;
                kernels_found++;
                kcs_result_entry identity = {.c = c, .case_name = c->name, .file = c->file, .line = c->line,
                                             .backend = backend->name, .device_id = devices[d].id,
                                             .kernel = kernel->variant, .expected_from = p.expected_from,
                                             .op = p.op, .args = &p.args};
                if (!sink_begin(out, (int)i, unit++, &identity))
                    continue; /* done by an earlier worker, or where it hung or died */
                kcs_run_result run;
                if ((c->tags & KCS_TAG_NO_REFERENCE) && strcmp(backend->name, "reference") == 0) {
                    memset(&run, 0, sizeof run);
                    run.outcome = KCS_OUTCOME_SKIP;
                    snprintf(run.message, sizeof run.message,
                             "tagged no-reference: too slow for the scalar reference");
                } else {
                    kcs_run_options run_options = o->run;
                    run_options.keep_outputs = o->save_dir != NULL;
                    kcs_run_on_device(&p, backend, devices[d].device, &devices[d].info, kernel, &run_options,
                                      &run);
                }
                kcs_result_entry entry = {.c = c, .case_name = c->name, .file = c->file, .line = c->line,
                                          .backend = backend->name, .device_id = devices[d].id,
                                          .kernel = kernel->variant, .expected_from = p.expected_from,
                                          .op = p.op, .args = &p.args, .run = &run,
                                          .ceilings = devices[d].has_ceilings ? &devices[d].ceilings : NULL};
                sink_result(out, &entry);
                char where[160];
                snprintf(where, sizeof where, "%s %s", devices[d].id, kernel->variant);
                const kcs_ceilings *ceilings = devices[d].has_ceilings ? &devices[d].ceilings : NULL;
                const kcs_expectation *expected =
                    kcs_expectations_match(&o->expectations, backend->name, devices[d].info.name,
                                           devices[d].info.driver_version, c->name, kernel->variant);
                kcs_speed speed = {0};
                if (run.timed && run.kernel.median > 0)
                    speed = kcs_kernel_speed(p.op, &p.args, ceilings, run.kernel.median);
                print_line_expected(o, c->name, where, &run, speed.name ? &speed : NULL, expected);
                if (o->save_dir && (run.outcome == KCS_OUTCOME_FAIL || (o->save_all && run.actual[0])))
                    take_away(o, &p, case_dir, sizeof case_dir, &devices[d], kernel, &run);
                kcs_run_result_free(&run);
            }
            if (!kernels_found) {
                kcs_run_result run = {.outcome = KCS_OUTCOME_SKIP};
                snprintf(run.message, sizeof run.message, "%s has no kernel for %s %s", backend->name,
                         c->op, kcs_dtype_name(c->dtype));
                kcs_result_entry entry = {.c = c, .case_name = c->name, .file = c->file, .line = c->line,
                                          .backend = backend->name, .device_id = devices[d].id,
                                          .expected_from = p.expected_from, .op = p.op, .args = &p.args,
                                          .run = &run};
                sink_result(out, &entry);
                print_line(o, c->name, devices[d].id, &run);
            }
        }
        kcs_prepared_case_free(&p);
    }
    kcs_golden_close(golden);
    for (int d = 0; d < device_count; d++)
        devices[d].backend->close(devices[d].device);
    free(devices);
    free(absent);

}

static int command_run(const options *o, const kcs_case_list *cases, int argc, char **argv)
{
    kcs_results *results = kcs_results_create();
    if (!results) {
        fprintf(stderr, "kcs: out of memory\n");
        return exit_usage;
    }
    char revision[128];
    read_revision(revision, sizeof revision);
    kcs_results_set_run(results, revision, argc, argv, &o->run);
    kcs_results_set_expectations(results, &o->expectations);

    /* Problems in case files: each one is an error result, and the run goes on. */
    for (size_t i = 0; i < cases->problem_count; i++) {
        const kcs_case_problem *problem = &cases->problems[i];
        char message[1024];
        snprintf(message, sizeof message, "%s:%d: %s", problem->file, problem->line, problem->message);
        sink direct = {.results = results, .fd = -1};
        record_case_problem(&direct, o, NULL, problem->case_name, problem->file, problem->line,
                            KCS_OUTCOME_ERROR, message);
    }
    fflush(stdout);
    if (o->in_process) {
        sink direct = {.results = results, .fd = -1};
        run_cases(o, cases, &direct);
    } else {
        supervise(o, cases, results);
    }

    int exit_status = exit_passed;
    kcs_error err = {{0}};
    if (kcs_results_write_json(results, o->results_path, &err) != KCS_OK ||
        (o->junit_path && kcs_results_write_junit(results, o->junit_path, &err) != KCS_OK)) {
        fprintf(stderr, "kcs: %s\n", err.message);
        exit_status = exit_usage;
    }
    kcs_result_counts counts = kcs_results_counts(results);
    kcs_results_free(results);
    printf("results: %s\n", o->results_path);
    if (counts.errors)
        printf("%d of the failed had errors (bad case, golden file or device fault): see above\n",
               counts.errors);
    if (counts.expected)
        printf("%d failures or skips were expected (--expectations) and count as passed or skipped\n",
               counts.expected);
    if (counts.unexpected_passes)
        printf("%d cases passed that were expected not to: counted as failed\n", counts.unexpected_passes);
    printf("%d passed, %d failed, %d skipped\n", counts.passed, counts.failed + counts.errors,
           counts.skipped);
    if (exit_status == exit_passed && (counts.failed || counts.errors))
        exit_status = exit_failed;
    return exit_status;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "apply") == 0)
        return kcs_command_apply(argc, argv);
    options o;
    if (!parse_options(argc, argv, &o) || !check_backend_names(&o))
        return exit_usage;
    if (strcmp(o.command, "devices") == 0)
        return command_devices(&o);
    kcs_case_list cases = {0};
    kcs_error err = {{0}};
    if (kcs_parse_case_directory(o.cases_dir, &cases, &err) != KCS_OK) {
        fprintf(stderr, "kcs: %s\n", err.message);
        kcs_case_list_free(&cases);
        return exit_usage;
    }
    int status;
    if (strcmp(o.command, "list") == 0)
        status = command_list(&o, &cases);
    else if (strcmp(o.command, "golden") == 0)
        status = command_golden(&o, &cases);
    else
        status = command_run(&o, &cases, argc, argv);
    kcs_case_list_free(&cases);
    return status;
}
