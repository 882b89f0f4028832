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
 *   M <id>                 the worker begins measuring device <id>'s ceilings
 *                          (progress for the hang timer; nothing else)
 *   P                      (the first worker only) every device is open, its
 *                          ceilings measured and its D line sent: the runner
 *                          plans the lanes (kcs_plan_lanes) from the D lines
 *                          and starts the other lanes' workers
 *   E                      the worker finished every case; it then exits
 *
 * Lanes. The runner follows one worker per lane at once (at most --jobs),
 * each pipe with its own hang timer, and restarts a lane's worker after a
 * hang or crash as below, with that lane's devices only. The first worker
 * opens every device, measures the ceilings the run needs (devices.c,
 * kcs_ceilings_wanted) one device at a time while no case runs anywhere,
 * then closes the devices of the other lanes and runs lane 0's; later
 * workers open their lane's devices only (no context on another lane's GPU)
 * and take the ceilings from the plan (the D lines' ceilings, with the
 * rates not measured in this run).
 *
 * Order: M before each device's ceilings (when measured), D for every device first (again from each new worker; the first
 * worker's D lines, then P, before its first B), then per
 * case its B 0, then as R the results that need no kernel run (a skipped or
 * unpreparable case, a backend without devices), then per kernel B and R.
 * A device with no kernel for the case's op and dtype gives an R (a skip)
 * without a B of its own.
 *
 * A hang: no line for the unit's time limit (--time-limit, else derived from
 * the case's size: time_limit.c), or for KCS_SETUP_TIME_LIMIT outside any
 * unit (opening devices, measuring ceilings). The runner kills the worker
 * (SIGKILL). A crash: the pipe closes without E (a signal, or an exit).
 * Either way the unit of the last B is recorded as an error with what
 * happened, an ERROR (or XERR) line is printed, and a new worker runs the
 * cases again, skipping every unit up to and including that one (all of
 * the case when it was unit 0: a case that cannot be prepared has no units
 * to run). A worker that fails before any B is an error result of its own
 * and the run ends. When no pipe or process can be made, the cases run in
 * the runner's process.
 *
 * A stop: SIGTERM (Slurm at a job's time limit, `timeout`) or SIGINT (^C)
 * to the runner ends the run at once, with what it has: each worker is
 * killed after the runner has read every line it sent, the unit each was
 * in is recorded as an error naming the signal (or, where none was, the
 * run itself is), and kcs_command_run writes the results file as always,
 * exiting 1. Units that had not begun have no result: the error says the
 * run stopped. Workers ignore SIGINT, so that a ^C to the terminal's
 * process group reaches the runner alone and the results say "stopped",
 * not "died of signal 2". (--in-process runs have no such handling: a
 * signal ends them as it would any program, writing nothing.)
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "runner.h"
#include "speed.h"

/* Lines read from a worker's pipe, with what is left of the last read. */
typedef struct {
    int fd;
    char *buffer;
    size_t used, capacity;
} line_reader;

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

/* Reads what the pipe holds into the buffer; returns 0 when the worker is gone. */
static int read_more(line_reader *r)
{
    if (r->capacity - r->used < 65536) {
        size_t capacity = r->capacity ? 2 * r->capacity : 1 << 20;
        char *grown = realloc(r->buffer, capacity);
        if (!grown)
            return 0;
        r->buffer = grown;
        r->capacity = capacity;
    }
    for (;;) {
        ssize_t got = read(r->fd, r->buffer + r->used, r->capacity - r->used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return 0;
        r->used += (size_t)got;
        return 1;
    }
}

/* The unit a worker last began, from its B line. */
typedef struct {
    int case_index, unit; /* -1 before the first B */
    char *identity;       /* the result to record if it never ends; NULL before the first B */
    double limit;         /* seconds it may go without progress (kcs_unit_time_limit); 0: none */
    int answered;         /* a kernel unit (unit > 0) whose one R came: it ended (a stop records nothing for it) */
} unit_in_progress;

/* How a worker's stream of lines ended. */
typedef struct {
    int finished; /* it sent E */
    int hung;     /* it then sent nothing for the time limit */
} worker_end;

/* The lanes' plan as the runner builds it from the first worker's D lines. */
typedef struct {
    kcs_lane_plan plan;
    int known; /* the first worker sent P */
} runner_plan;

/* A device's ceilings from its D line (the first worker measured them). */
static void take_planned_device(runner_plan *lanes, const char *text)
{
    json_t *device = json_loads(text, 0, NULL);
    const char *id = json_string_value(json_object_get(device, "id"));
    if (!id || lanes->known || lanes->plan.device_count >= KCS_MAX_LANE_DEVICES) {
        json_decref(device);
        return;
    }
    kcs_lane_device *planned = &lanes->plan.devices[lanes->plan.device_count++];
    memset(planned, 0, sizeof *planned);
    snprintf(planned->id, sizeof planned->id, "%s", id);
    planned->shares_host_cores = json_is_true(json_object_get(device, "shares_host_cores"));
    const char *details = json_string_value(json_object_get(device, "details"));
    kcs_pci_bus_id(details ? details : "", planned->pci_bus_id, sizeof planned->pci_bus_id);
    json_t *ceilings = json_object_get(device, "ceilings");
    if (json_is_object(ceilings)) {
        kcs_ceilings *c = &planned->ceilings;
        /* every rate (speed.c's table), and what the first worker asked for:
         * all but those it lists as not measured in this run, so that the
         * later lanes' results say the same of them */
        c->asked = KCS_CEILINGS_ALL;
        json_t *not_asked = json_object_get(ceilings, "not_measured_in_this_run");
        for (const kcs_ceiling_rate *rate = kcs_ceiling_rates; rate->key; rate++) {
            *kcs_ceiling_rate_slot(c, rate) = json_number_value(json_object_get(ceilings, rate->key));
            for (size_t i = 0; i < json_array_size(not_asked); i++)
                if (json_is_string(json_array_get(not_asked, i)) &&
                    strcmp(json_string_value(json_array_get(not_asked, i)), rate->key) == 0)
                    c->asked &= ~rate->bit;
        }
        const char *method = json_string_value(json_object_get(ceilings, "method"));
        snprintf(c->method, sizeof c->method, "%s", method ? method : "");
        planned->has_ceilings = 1;
    }
    json_decref(device);
}

/* The time limit of a unit begun (its B line's case, unit and identity), on
 * its device as the first worker's D lines described it. */
static double unit_limit(const kcs_runner_options *o, const kcs_case_list *cases, const runner_plan *lanes,
                         const unit_in_progress *unit)
{
    if (unit->case_index < 0 || (size_t)unit->case_index >= cases->count)
        return o->time_limit == KCS_TIME_LIMIT_DERIVED ? KCS_SETUP_TIME_LIMIT : o->time_limit;
    json_t *identity = json_loads(unit->identity, 0, NULL);
    const char *id = json_string_value(json_object_get(identity, "device"));
    const kcs_lane_device *device = NULL;
    for (int d = 0; id && d < lanes->plan.device_count; d++)
        if (strcmp(lanes->plan.devices[d].id, id) == 0)
            device = &lanes->plan.devices[d];
    double limit = kcs_unit_time_limit(o, &cases->cases[unit->case_index], unit->unit, device);
    json_decref(identity);
    return limit;
}

/* The time limit while no unit is in progress (the worker opens devices, measures ceilings). */
static double setup_limit(const kcs_runner_options *o)
{
    return o->time_limit == KCS_TIME_LIMIT_DERIVED ? KCS_SETUP_TIME_LIMIT : o->time_limit;
}

/* Acts on one line from a worker. */
static void take_line(const kcs_runner_options *o, const kcs_case_list *cases, const char *line,
                      kcs_results *results, runner_plan *lanes, unit_in_progress *unit, worker_end *end)
{
    kcs_error err = {{0}};
    kcs_status status = KCS_OK;
    if (line[0] == 'B') {
        int consumed = 0;
        if (sscanf(line, "B %d %d %n", &unit->case_index, &unit->unit, &consumed) == 2) {
            free(unit->identity);
            unit->identity = strdup(line + consumed);
            unit->limit = unit_limit(o, cases, lanes, unit);
            unit->answered = 0;
        }
    } else if (line[0] == 'R') {
        status = kcs_results_add_serialized(results, line + 2, &err);
        unit->answered = unit->unit > 0;
    } else if (line[0] == 'D') {
        status = kcs_results_add_serialized_device(results, line + 2, &err);
        take_planned_device(lanes, line + 2);
    } else if (line[0] == 'P') {
        kcs_plan_lanes(o, &lanes->plan);
        lanes->known = 1;
    } else if (line[0] == 'E') {
        end->finished = 1;
    }
    if (status != KCS_OK)
        fprintf(stderr, "kcs: %s\n", err.message);
}

/* The signal that asked the run to stop (0: none yet). */
static volatile sig_atomic_t stop_signal;

static void note_stop(int signal_number)
{
    stop_signal = signal_number;
}

int kcs_run_stopped_by(void)
{
    return stop_signal;
}

/* Forks a worker that runs the cases as resume says (its lane, the units
 * to skip), into a pipe whose read end goes to *fd; returns 0 (with the
 * reason printed) when no pipe or process can be made. The child closes
 * the other workers' pipes (open_fds, count of them). */
static int start_worker(const kcs_runner_options *o, const kcs_case_list *cases, const kcs_sink *resume,
                        const int *open_fds, int open_count, pid_t *worker, int *fd)
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
        signal(SIGTERM, SIG_DFL); /* the runner kills its workers when it stops */
        signal(SIGINT, SIG_IGN);  /* a ^C is the runner's to handle (above) */
        close(pipe_ends[0]);
        for (int i = 0; i < open_count; i++)
            close(open_fds[i]);
        /* one write per line, so that lines of workers running at once never interleave */
        setvbuf(stdout, NULL, _IOLBF, 0);
        kcs_sink remote = *resume;
        remote.fd = pipe_ends[1];
        remote.results = NULL;
        kcs_run_cases(o, cases, &remote);
        kcs_sink_finished(&remote);
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

/* Says what became of a worker that did not finish (hung: silent for limit seconds). */
static void describe_failure(const kcs_runner_options *o, int hung, double limit, int wait_status, char *message,
                             size_t size)
{
    if (hung)
        snprintf(message, size,
                 "no progress for %.0f s (%s): the worker was killed and the run goes on with the next unit",
                 limit, o->time_limit == KCS_TIME_LIMIT_DERIVED ? "the unit's time limit, from the case's size; "
                                                                  "--time-limit S sets one" : "--time-limit");
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

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One lane's worker as the runner follows it. */
typedef struct {
    enum { LANE_WAITING, LANE_RUNNING, LANE_DONE } state;
    pid_t pid;
    line_reader reader;
    unit_in_progress unit;
    worker_end end;
    double last_line;  /* when its last bytes came */
    double last_beat;  /* when the runner last said its unit is still running */
    kcs_sink resume;   /* its lane, and the units a new worker skips */
} lane_worker;

/* Acts on every whole line a lane's worker has sent. */
static void take_lines(const kcs_runner_options *o, const kcs_case_list *cases, kcs_results *results,
                       runner_plan *lanes, lane_worker *w)
{
    size_t start = 0;
    for (char *newline; (newline = memchr(w->reader.buffer + start, '\n', w->reader.used - start));) {
        *newline = '\0';
        take_line(o, cases, w->reader.buffer + start, results, lanes, &w->unit, &w->end);
        start = (size_t)(newline - w->reader.buffer) + 1;
    }
    memmove(w->reader.buffer, w->reader.buffer + start, w->reader.used - start);
    w->reader.used -= start;
}

/* Starts lane's worker; returns 0 when none could start. */
static int start_lane(const kcs_runner_options *o, const kcs_case_list *cases, lane_worker *workers, int count,
                      int lane)
{
    int open_fds[KCS_MAX_LANE_DEVICES], open_count = 0;
    for (int l = 0; l < count; l++)
        if (workers[l].state == LANE_RUNNING)
            open_fds[open_count++] = workers[l].reader.fd;
    lane_worker *w = &workers[lane];
    if (!start_worker(o, cases, &w->resume, open_fds, open_count, &w->pid, &w->reader.fd))
        return 0;
    w->state = LANE_RUNNING;
    w->end = (worker_end){0};
    w->reader.used = 0;
    w->last_line = w->last_beat = seconds_now();
    return 1;
}

/* A lane's worker ended (it finished, hung or died): buries it, and where
 * it did not finish records its unit as an error and sets its lane to start
 * again after that unit. */
static void end_lane(const kcs_runner_options *o, const kcs_case_list *cases, kcs_results *results,
                     lane_worker *w)
{
    close(w->reader.fd);
    int wait_status = bury_worker(w->pid, w->end.hung);
    w->state = LANE_DONE;
    if (w->end.finished && !w->end.hung)
        return;
    char message[512];
    describe_failure(o, w->end.hung, w->unit.identity ? w->unit.limit : setup_limit(o), wait_status, message,
                     sizeof message);
    if (!w->unit.identity) {
        record_failure_before_first_case(results, message);
        return;
    }
    record_unit_error(o, results, cases, &w->unit, message);
    /* After a failure in preparing a case (unit 0) none of its units can run. */
    w->resume.skip_case = w->unit.case_index;
    w->resume.skip_unit = w->unit.unit == 0 ? INT_MAX : w->unit.unit;
    w->resume.first = 0;
    free(w->unit.identity);
    w->unit = (unit_in_progress){.case_index = -1, .unit = -1};
    w->state = LANE_WAITING;
}

/* Kills a worker silent for its unit's time limit; says every heartbeat_seconds
 * which unit a quiet worker is still running. */
static void watch_quiet(const kcs_runner_options *o, lane_worker *w, double now)
{
    double quiet = now - w->last_line, limit = w->unit.identity ? w->unit.limit : setup_limit(o);
    if (limit > 0 && quiet >= limit) {
        w->end.hung = 1;
        kill(w->pid, SIGKILL);
        return;
    }
    double beat = limit > 0 && limit / 2 < heartbeat_seconds ? limit / 2 : heartbeat_seconds;
    if (now - w->last_beat < beat)
        return;
    w->last_beat = now;
    char unit[400];
    describe_unit(w->unit.identity, unit, sizeof unit);
    if (!unit[0])
        return;
    printf("      ... still running %s: %.0f s", unit, quiet);
    if (limit > 0)
        printf(" (the time limit is %.0f s)", limit);
    printf("\n");
    fflush(stdout);
}

/* Ends every running worker of a stopped run: the lines it sent are taken,
 * then it is killed and buried, and the unit it was in is an error naming
 * the signal. Returns how many units were in progress. */
static int stop_workers(const kcs_runner_options *o, const kcs_case_list *cases, kcs_results *results,
                        runner_plan *lanes, lane_worker *workers, int count, const char *message)
{
    int in_progress = 0;
    for (int l = 0; l < count; l++) {
        lane_worker *w = &workers[l];
        if (w->state != LANE_RUNNING)
            continue;
        kill(w->pid, SIGKILL);
        while (read_more(&w->reader)) /* what it sent before it died: to the end of the pipe */
            ;
        take_lines(o, cases, results, lanes, w);
        close(w->reader.fd);
        bury_worker(w->pid, 0);
        w->state = LANE_DONE;
        if (w->end.finished || !w->unit.identity || w->unit.answered)
            continue;
        record_unit_error(o, results, cases, &w->unit, message);
        in_progress++;
    }
    return in_progress;
}

void kcs_run_in_workers(const kcs_runner_options *o, const kcs_case_list *cases, kcs_results *results)
{
    static runner_plan lanes; /* large; one run per process */
    memset(&lanes, 0, sizeof lanes);
    kcs_shared_progress *progress = mmap(NULL, sizeof *progress, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                                         -1, 0);
    if (progress == MAP_FAILED)
        progress = NULL;
    else
        memset(progress, 0, sizeof *progress);
    lane_worker workers[KCS_MAX_LANE_DEVICES];
    memset(workers, 0, sizeof workers);
    for (int l = 0; l < KCS_MAX_LANE_DEVICES; l++) {
        workers[l].unit = (unit_in_progress){.case_index = -1, .unit = -1};
        workers[l].resume = (kcs_sink){.results = results, .fd = -1, .skip_case = -1, .skip_unit = -1,
                                       .plan = &lanes.plan, .lane = l, .progress = progress};
    }
    /* The first worker opens every device and measures their ceilings one at
     * a time, before any case runs anywhere; its "P" starts the other lanes. */
    workers[0].resume.first = 1;
    workers[0].resume.plan = NULL;
    struct sigaction stop = {.sa_handler = note_stop}, old_term, old_interrupt; /* no SA_RESTART: poll returns */
    sigemptyset(&stop.sa_mask);
    sigaction(SIGTERM, &stop, &old_term);
    sigaction(SIGINT, &stop, &old_interrupt);
    if (!start_lane(o, cases, workers, 1, 0)) {
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGINT, &old_interrupt, NULL);
        kcs_sink direct = {.results = results, .fd = -1, .skip_case = -1, .skip_unit = -1};
        kcs_run_cases(o, cases, &direct);
        return;
    }
    for (;;) {
        int count = lanes.known ? lanes.plan.lane_count : 1;
        if (stop_signal) {
            char message[256];
            snprintf(message, sizeof message,
                     "the run was stopped by signal %d (%s) before this unit finished: no later unit ran",
                     (int)stop_signal, strsignal(stop_signal));
            if (stop_workers(o, cases, results, &lanes, workers, count, message) == 0) {
                snprintf(message, sizeof message,
                         "the run was stopped by signal %d (%s) between units: no later unit ran", (int)stop_signal,
                         strsignal(stop_signal));
                kcs_run_result run = {.outcome = KCS_OUTCOME_ERROR};
                snprintf(run.message, sizeof run.message, "%s", message);
                kcs_result_entry entry = {.case_name = "", .file = "", .run = &run};
                kcs_results_add(results, &entry);
            }
            fprintf(stderr, "kcs: stopped by signal %d (%s): the results so far are written, the units not begun "
                            "have none\n",
                    (int)stop_signal, strsignal(stop_signal));
            break;
        }
        int running = 0, limit = o->jobs ? o->jobs : count, host_running = 0;
        for (int l = 0; l < count; l++) {
            running += workers[l].state == LANE_RUNNING;
            host_running |= workers[l].state == LANE_RUNNING && lanes.known &&
                            kcs_lane_shares_host_cores(&lanes.plan, l);
        }
        for (int l = 0; l < count && running < limit; l++) {
            if (workers[l].state != LANE_WAITING)
                continue;
            /* Timing with the default lanes: the lane of the devices that
             * share the host's cores runs alone, before or after the GPU
             * lanes (docs/runner.md, "All devices at once"). */
            if (o->run.benchmark && !o->jobs &&
                (host_running || (running > 0 && kcs_lane_shares_host_cores(&lanes.plan, l))))
                continue;
            workers[l].resume.plan = &lanes.plan;
            if (!start_lane(o, cases, workers, count, l)) {
                workers[l].state = LANE_DONE;
                record_failure_before_first_case(results, "no worker process could be started for this lane");
                continue;
            }
            running++;
            host_running |= kcs_lane_shares_host_cores(&lanes.plan, l);
        }
        if (running == 0)
            break;
        struct pollfd watch[KCS_MAX_LANE_DEVICES];
        int which[KCS_MAX_LANE_DEVICES], watched = 0;
        for (int l = 0; l < count; l++)
            if (workers[l].state == LANE_RUNNING) {
                watch[watched] = (struct pollfd){.fd = workers[l].reader.fd, .events = POLLIN};
                which[watched++] = l;
            }
        int ready = poll(watch, (nfds_t)watched, 250);
        if (ready < 0 && errno != EINTR)
            break;
        double now = seconds_now();
        for (int i = 0; i < watched && ready > 0; i++) {
            lane_worker *w = &workers[which[i]];
            if (!(watch[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (read_more(&w->reader)) {
                w->last_line = w->last_beat = now;
                take_lines(o, cases, results, &lanes, w);
            } else {
                take_lines(o, cases, results, &lanes, w);
                end_lane(o, cases, results, w);
            }
        }
        for (int i = 0; i < watched; i++) {
            lane_worker *w = &workers[which[i]];
            if (w->state == LANE_RUNNING && !w->end.hung)
                watch_quiet(o, w, now);
        }
        /* a first worker that ended before planning leaves one lane: its own */
        if (!lanes.known && workers[0].state != LANE_RUNNING && workers[0].state != LANE_WAITING)
            break;
    }
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGINT, &old_interrupt, NULL);
    for (int l = 0; l < KCS_MAX_LANE_DEVICES; l++) {
        free(workers[l].reader.buffer);
        free(workers[l].unit.identity);
    }
    if (progress)
        munmap(progress, sizeof *progress);
}

