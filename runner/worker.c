/* worker.c: running the cases in a worker process, so that a kernel that
 * hangs or crashes costs one result rather than the run (docs/runner.md,
 * "Isolation").
 *
 * The protocol. The runner forks a worker, which runs the cases (run.c)
 * with a sink whose fd is the write end of a pipe; every message is one
 * line, a letter, a space and text with no newline (JSON is written with
 * JSON_COMPACT, so it has none):
 *
 *   D <device>             a device the worker opened (kcs_device_serialize);
 *                          the runner adds it unless it has one of that id
 *   B <case> <unit> <json> the worker begins unit <unit> of case <case> (an
 *                          index into the case list): unit 0 prepares the case,
 *                          each later unit is one kernel on one device. json is
 *                          the result to record if the unit never ends: the
 *                          unit's identity with status "error" and the
 *                          expectations' verdict on an error
 *   R <result>             a result (kcs_result_entry_serialize): added to the
 *                          results and counted by its "verdict", which is
 *                          taken off
 *   E                      the worker finished every case; it then exits
 *
 * Order: D for every device first (again from each new worker), then per
 * case its B 0, then as R the results that need no kernel run (a skipped or
 * unpreparable case, a backend without devices), then per kernel B and R.
 * A device with no kernel for the case's op and dtype gives an R (a skip)
 * without a B of its own.
 *
 * A hang: no line for --time-limit seconds. The runner kills the worker
 * (SIGKILL). A crash: the pipe closes without E (a signal, or an exit).
 * Either way the unit of the last B is recorded as an error with what
 * happened, an ERROR (or XERR) line is printed, and a new worker runs the
 * cases again, skipping every unit up to and including that one (all of
 * the case when it was unit 0: a case that cannot be prepared has no units
 * to run). A worker that fails before any B is an error result of its own
 * and the run ends. When no pipe or process can be made, the cases run in
 * the runner's process.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "runner.h"

/* Writes all of a line ("<kind> <text>\n") to a pipe. */
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

void kcs_sink_result(kcs_sink *out, const kcs_result_entry *entry)
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

void kcs_sink_device(kcs_sink *out, const kcs_open_device *device)
{
    const kcs_ceilings *ceilings = kcs_device_ceilings(device);
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

int kcs_sink_resumes_after(const kcs_sink *out, int case_index)
{
    return case_index > out->skip_case;
}

int kcs_sink_begin(kcs_sink *out, int case_index, int unit, const kcs_result_entry *identity)
{
    /* A case is prepared again (unit 0) by a restarted worker unless the
     * earlier one failed in its preparation (skip_unit INT_MAX). */
    if (case_index < out->skip_case ||
        (case_index == out->skip_case && (unit == 0 ? out->skip_unit == INT_MAX : unit <= out->skip_unit)))
        return 0;
    if (out->fd < 0)
        return 1;
    char *text = kcs_result_entry_serialize(identity);
    char header[64];
    snprintf(header, sizeof header, "B %d %d", case_index, unit);
    if (text)
        send_line(out->fd, header, text);
    free(text);
    return 1;
}

/* Lines read from a worker's pipe, with what is left of the last read. */
typedef struct {
    int fd;
    char *buffer;
    size_t used, capacity;
    size_t line_length; /* of the line last returned, newline included */
} line_reader;

/* Drops the line last returned from the buffer. */
static void drop_line(line_reader *r)
{
    if (!r->line_length)
        return; /* none yet: the buffer may not even exist */
    memmove(r->buffer, r->buffer + r->line_length, r->used - r->line_length);
    r->used -= r->line_length;
    r->line_length = 0;
}

/* "case on device kernel" from a unit's identity (its B line), or "" before the first. */
static void describe_unit(const char *identity, char *text, size_t size)
{
    text[0] = '\0';
    json_t *unit = identity ? json_loads(identity, 0, NULL) : NULL;
    const char *name = json_string_value(json_object_get(unit, "case"));
    const char *device = json_string_value(json_object_get(unit, "device"));
    const char *kernel = json_string_value(json_object_get(unit, "kernel"));
    if (name)
        snprintf(text, size, "%s on %s %s", name, device ? device : "-", kernel ? kernel : "");
    json_decref(unit);
}

/* Seconds between the lines that say a long unit is still running. */
enum { heartbeat_seconds = 10 };

/* The next line from the pipe, its newline replaced by NUL (valid until the
 * next call); NULL when the worker is gone, or sends nothing for
 * time_limit seconds (then *hung is set). While it waits, a line every
 * heartbeat_seconds says which unit (current, its identity) is still running. */
static char *next_line(line_reader *r, double time_limit, const char *current, int *hung)
{
    drop_line(r);
    struct pollfd watch = {.fd = r->fd, .events = POLLIN};
    double waited = 0.0;
    for (;;) {
        char *newline = r->used ? memchr(r->buffer, '\n', r->used) : NULL;
        if (newline) {
            *newline = '\0';
            r->line_length = (size_t)(newline - r->buffer) + 1;
            return r->buffer;
        }
        /* a heartbeat every heartbeat_seconds, and at least one before a short time limit runs out */
        double beat = time_limit > 0 && time_limit / 2 < heartbeat_seconds ? time_limit / 2 : heartbeat_seconds;
        double slice = time_limit > 0 && time_limit - waited < beat ? time_limit - waited : beat;
        int ready = poll(&watch, 1, (int)(slice * 1000));
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0) {
            waited += slice;
            if (time_limit > 0 && waited >= time_limit) {
                *hung = 1;
                return NULL;
            }
            char unit[400];
            describe_unit(current, unit, sizeof unit);
            if (unit[0]) {
                printf("      ... still running %s: %.0f s", unit, waited);
                if (time_limit > 0)
                    printf(" (the time limit is %.0f s)", time_limit);
                printf("\n");
                fflush(stdout);
            }
            continue;
        }
        if (r->capacity - r->used < 65536) {
            size_t capacity = r->capacity ? 2 * r->capacity : 1 << 20;
            char *grown = realloc(r->buffer, capacity);
            if (!grown)
                return NULL;
            r->buffer = grown;
            r->capacity = capacity;
        }
        ssize_t got = read(r->fd, r->buffer + r->used, r->capacity - r->used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return NULL; /* the worker is gone */
        r->used += (size_t)got;
    }
}

/* The unit a worker last began, from its B line. */
typedef struct {
    int case_index, unit; /* -1 before the first B */
    char *identity;       /* the result to record if it never ends; NULL before the first B */
} unit_in_progress;

/* How a worker's stream of lines ended. */
typedef struct {
    int finished; /* it sent E */
    int hung;     /* it then sent nothing for the time limit */
} worker_end;

/* Acts on one line from a worker. */
static void take_line(const char *line, kcs_results *results, unit_in_progress *unit, worker_end *end)
{
    kcs_error err = {{0}};
    kcs_status status = KCS_OK;
    if (line[0] == 'B') {
        int consumed = 0;
        if (sscanf(line, "B %d %d %n", &unit->case_index, &unit->unit, &consumed) == 2) {
            free(unit->identity);
            unit->identity = strdup(line + consumed);
        }
    } else if (line[0] == 'R') {
        status = kcs_results_add_serialized(results, line + 2, &err);
    } else if (line[0] == 'D') {
        status = kcs_results_add_serialized_device(results, line + 2, &err);
    } else if (line[0] == 'E') {
        end->finished = 1;
    }
    if (status != KCS_OK)
        fprintf(stderr, "kcs: %s\n", err.message);
}

/* Reads a worker's lines until it is gone or hangs. */
static worker_end follow_worker(const kcs_runner_options *o, int fd, kcs_results *results,
                                unit_in_progress *unit)
{
    line_reader reader = {.fd = fd};
    worker_end end = {0};
    for (const char *line; (line = next_line(&reader, o->time_limit, unit->identity, &end.hung));)
        take_line(line, results, unit, &end);
    free(reader.buffer);
    return end;
}

/* Forks a worker that runs the cases, skipping as resume says, into a pipe
 * whose read end goes to *fd; returns 0 (with the reason printed) when no
 * pipe or process can be made. */
static int start_worker(const kcs_runner_options *o, const kcs_case_list *cases, const kcs_sink *resume,
                        pid_t *worker, int *fd)
{
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) {
        fprintf(stderr, "kcs: cannot make a pipe (%s); running in this process\n", strerror(errno));
        return 0;
    }
    fflush(stdout);
    fflush(stderr);
    *worker = fork();
    if (*worker == 0) {
        close(pipe_ends[0]);
        kcs_sink remote = {.fd = pipe_ends[1], .skip_case = resume->skip_case,
                           .skip_unit = resume->skip_unit};
        kcs_run_cases(o, cases, &remote);
        send_line(pipe_ends[1], "E", "");
        fflush(stdout);
        _exit(0);
    }
    close(pipe_ends[1]);
    if (*worker < 0) {
        close(pipe_ends[0]);
        fprintf(stderr, "kcs: cannot start a worker (%s); running in this process\n", strerror(errno));
        return 0;
    }
    *fd = pipe_ends[0];
    return 1;
}

/* Kills a worker that hung and waits for it; returns its wait status. */
static int bury_worker(pid_t worker, int hung)
{
    if (hung)
        kill(worker, SIGKILL);
    int wait_status = 0;
    while (waitpid(worker, &wait_status, 0) < 0 && errno == EINTR)
        ;
    return wait_status;
}

/* Says what became of a worker that did not finish. */
static void describe_failure(const kcs_runner_options *o, int hung, int wait_status, char *message, size_t size)
{
    if (hung)
        snprintf(message, size,
                 "no progress for %.0f s (the time limit, --time-limit): the worker was killed and the "
                 "run goes on with the next unit", o->time_limit);
    else if (WIFSIGNALED(wait_status))
        snprintf(message, size, "the worker died of signal %d (%s) here: the run goes on with the next unit",
                 WTERMSIG(wait_status), strsignal(WTERMSIG(wait_status)));
    else
        snprintf(message, size, "the worker exited with status %d here: the run goes on with the next unit",
                 WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1);
}

/* Records an error for a worker that failed before it began any unit. */
static void record_failure_before_first_case(kcs_results *results, const char *message)
{
    fprintf(stderr, "kcs: the worker failed before its first case: %s\n", message);
    kcs_run_result run = {.outcome = KCS_OUTCOME_ERROR};
    snprintf(run.message, sizeof run.message, "%s", message);
    kcs_result_entry entry = {.case_name = "", .file = "", .run = &run};
    kcs_results_add(results, &entry);
}

/* Records the unit a worker hung or died in as an error and prints its
 * line; with --save-failures, saves the case with the command that replays
 * the unit (never for unit 0: the case itself could not be prepared). */
static void record_unit_error(const kcs_runner_options *o, kcs_results *results, const kcs_case_list *cases,
                              const unit_in_progress *unit, const char *message)
{
    json_t *identity = json_loads(unit->identity, 0, NULL);
    const char *backend = json_string_value(json_object_get(identity, "backend"));
    const char *device = json_string_value(json_object_get(identity, "device"));
    const char *kernel = json_string_value(json_object_get(identity, "kernel"));
    const char *index = device ? strrchr(device, ':') : NULL;
    const kcs_case *c = &cases->cases[unit->case_index];
    kcs_take_away saved = {.case_folder = ""};
    int was_saved = o->save_dir && unit->unit > 0 && backend && index && kernel &&
                    kcs_save_unfinished_unit(o, c, backend, atoi(index + 1), kernel, &saved);
    kcs_error err = {{0}};
    kcs_verdict_kind verdict = KCS_VERDICT_NONE;
    if (kcs_results_add_serialized_error(results, unit->identity, message, was_saved ? &saved.paths : NULL,
                                         &verdict, &err) != KCS_OK)
        fprintf(stderr, "kcs: %s\n", err.message);
    /* The unit's identity names its device and kernel: the line says where it hung or died. */
    char where[200] = "-";
    if (device)
        snprintf(where, sizeof where, "%s %s", device, kernel ? kernel : "");
    kcs_print_unit_error(c->name, where, message, verdict == KCS_VERDICT_MET);
    if (was_saved)
        kcs_print_take_away(&saved);
    json_decref(identity);
}

void kcs_run_in_workers(const kcs_runner_options *o, const kcs_case_list *cases, kcs_results *results)
{
    /* Which units a new worker skips; also where results go if none can start. */
    kcs_sink resume = {.results = results, .fd = -1, .skip_case = -1, .skip_unit = -1};
    for (;;) {
        pid_t worker;
        int fd;
        if (!start_worker(o, cases, &resume, &worker, &fd)) {
            kcs_run_cases(o, cases, &resume);
            return;
        }
        unit_in_progress unit = {.case_index = -1, .unit = -1};
        worker_end end = follow_worker(o, fd, results, &unit);
        close(fd);
        int wait_status = bury_worker(worker, end.hung);
        if (end.finished && !end.hung) {
            free(unit.identity);
            return;
        }
        char message[512];
        describe_failure(o, end.hung, wait_status, message, sizeof message);
        if (!unit.identity) {
            record_failure_before_first_case(results, message);
            return;
        }
        record_unit_error(o, results, cases, &unit, message);
        free(unit.identity);
        /* After a failure in preparing a case (unit 0) none of its units can run. */
        resume.skip_case = unit.case_index;
        resume.skip_unit = unit.unit == 0 ? INT_MAX : unit.unit;
    }
}
