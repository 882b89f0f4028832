/* expectations.c: reading and matching expected failures (see expectations.h). */
#include "expectations.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kcs_status kcs_expectations_read(const char *path, kcs_expectations *expectations, kcs_error *err)
{
    FILE *file = fopen(path, "r");
    if (!file)
        return kcs_fail(err, KCS_ERROR, "%s: cannot read the expectations: %s", path, strerror(errno));
    char line[2048];
    int number = 0;
    kcs_status status = KCS_OK;
    while (status == KCS_OK && fgets(line, sizeof line, file)) {
        number++;
        line[strcspn(line, "\n")] = '\0';
        char *start = line + strspn(line, " \t");
        if (*start == '\0' || *start == '#')
            continue;
        kcs_expectation e;
        memset(&e, 0, sizeof e);
        int reason_at = 0;
        int fields = sscanf(start, "%63s %127s %127s %159s %63s %7s %n", e.backend, e.device, e.driver,
                            e.case_pattern, e.kernel, e.outcome, &reason_at);
        if (fields < 6 || reason_at == 0 || start[reason_at] == '\0') {
            status = kcs_fail(err, KCS_ERROR,
                              "%s:%d: expected 'backend device driver case kernel outcome reason...'", path,
                              number);
            break;
        }
        if (strcmp(e.outcome, "fail") != 0 && strcmp(e.outcome, "error") != 0 && strcmp(e.outcome, "skip") != 0) {
            status = kcs_fail(err, KCS_ERROR, "%s:%d: outcome '%s' is not fail, error or skip", path, number,
                              e.outcome);
            break;
        }
        snprintf(e.reason, sizeof e.reason, "%s", start + reason_at);
        snprintf(e.file, sizeof e.file, "%s", path);
        e.line = number;
        kcs_expectation *grown = realloc(expectations->items, (expectations->count + 1) * sizeof *grown);
        if (!grown) {
            status = kcs_fail(err, KCS_ERROR, "out of memory");
            break;
        }
        expectations->items = grown;
        expectations->items[expectations->count++] = e;
    }
    fclose(file);
    return status;
}

const kcs_expectation *kcs_expectations_match(const kcs_expectations *expectations, const char *backend,
                                              const char *device, const char *driver, const char *case_name,
                                              const char *kernel)
{
    if (!expectations)
        return NULL;
    for (size_t i = 0; i < expectations->count; i++) {
        const kcs_expectation *e = &expectations->items[i];
        if (fnmatch(e->backend, backend ? backend : "", 0) == 0 &&
            fnmatch(e->device, device ? device : "", 0) == 0 &&
            fnmatch(e->driver, driver ? driver : "", 0) == 0 &&
            fnmatch(e->case_pattern, case_name ? case_name : "", 0) == 0 &&
            fnmatch(e->kernel, kernel ? kernel : "", 0) == 0)
            return e;
    }
    return NULL;
}

void kcs_expectations_free(kcs_expectations *expectations)
{
    free(expectations->items);
    expectations->items = NULL;
    expectations->count = 0;
}
