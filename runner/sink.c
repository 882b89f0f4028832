/* sink.c: where a run's results go (kcs_sink): added to the results in
 * this process, or, in a worker, written to the pipe as the lines of the
 * protocol that worker.c describes and reads (D, B, R, M, P, E).
 *
 * Its own file so that run.c, which runs the cases, and worker.c, which runs
 * run.c in worker processes and reads their lines, both use it and neither
 * calls the other back.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

void kcs_sink_measuring(kcs_sink *out, const kcs_open_device *device)
{
    if (out->fd >= 0)
        send_line(out->fd, "M", device->id);
}

void kcs_sink_plan_ready(kcs_sink *out)
{
    if (out->fd >= 0)
        send_line(out->fd, "P", "");
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

void kcs_sink_finished(kcs_sink *out)
{
    if (out->fd >= 0)
        send_line(out->fd, "E", "");
}
