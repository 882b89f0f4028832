/* expectations.c: reading expected failures and judging results against them (see expectations.h). */
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
        /* The six fields, each checked against its room (a longer one is an
         * error, never cut short: a cut glob would match something else),
         * then the reason: the rest of the line. */
        struct {
            const char *name;
            char *into;
            size_t size;
        } fields[] = {{"backend", e.backend, sizeof e.backend},     {"device", e.device, sizeof e.device},
                      {"driver", e.driver, sizeof e.driver},        {"case", e.case_pattern, sizeof e.case_pattern},
                      {"kernel", e.kernel, sizeof e.kernel},        {"outcome", e.outcome, sizeof e.outcome}};
        const char *at = start;
        for (size_t f = 0; f < sizeof fields / sizeof fields[0] && status == KCS_OK; f++) {
            at += strspn(at, " \t");
            size_t length = strcspn(at, " \t");
            if (length == 0)
                status = kcs_fail(err, KCS_ERROR,
                                  "%s:%d: expected 'backend device driver case kernel outcome reason...'", path,
                                  number);
            else if (length >= fields[f].size)
                status = kcs_fail(err, KCS_ERROR, "%s:%d: the %s field is %zu characters, more than %zu", path,
                                  number, fields[f].name, length, fields[f].size - 1);
            else
                memcpy(fields[f].into, at, length);
            at += length;
        }
        at += strspn(at, " \t");
        if (status == KCS_OK && *at == '\0')
            status = kcs_fail(err, KCS_ERROR,
                              "%s:%d: expected 'backend device driver case kernel outcome reason...' (no reason)",
                              path, number);
        if (status == KCS_OK && strlen(at) >= sizeof e.reason)
            status = kcs_fail(err, KCS_ERROR, "%s:%d: the reason is %zu characters, more than %zu", path, number,
                              strlen(at), sizeof e.reason - 1);
        if (status != KCS_OK)
            break;
        if (strcmp(e.outcome, "fail") != 0 && strcmp(e.outcome, "error") != 0 && strcmp(e.outcome, "skip") != 0) {
            status = kcs_fail(err, KCS_ERROR, "%s:%d: outcome '%s' is not fail, error or skip", path, number,
                              e.outcome);
            break;
        }
        snprintf(e.reason, sizeof e.reason, "%s", at);
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

/* Whether a glob matches text (NULL matching as ""). The globs are GNU
 * extended ones, so that one line can name alternatives: @(a|b) is a or b
 * (docs/expectations.md). */
static int matches(const char *pattern, const char *text)
{
    return fnmatch(pattern, text ? text : "", FNM_EXTMATCH) == 0;
}

/* The first line listing the subject, or NULL. */
static const kcs_expectation *first_match(const kcs_expectations *expectations, const kcs_expectation_subject *s)
{
    for (size_t i = 0; expectations && s->backend && i < expectations->count; i++) {
        const kcs_expectation *e = &expectations->items[i];
        int device = matches(e->device, s->device) || (s->device_id && matches(e->device, s->device_id)) ||
                     (s->platform && matches(e->device, s->platform));
        if (matches(e->backend, s->backend) && device && matches(e->driver, s->driver) &&
            matches(e->case_pattern, s->case_name) && matches(e->kernel, s->kernel))
            return e;
    }
    return NULL;
}

kcs_verdict kcs_expectations_verdict(const kcs_expectations *expectations, const kcs_expectation_subject *subject,
                                     const char *outcome)
{
    kcs_verdict verdict = {.kind = KCS_VERDICT_NONE, .line = first_match(expectations, subject)};
    if (!verdict.line)
        return verdict;
    const char *listed = verdict.line->outcome;
    if (strcmp(outcome, listed) == 0 || (strcmp(listed, "fail") == 0 && strcmp(outcome, "error") == 0))
        verdict.kind = KCS_VERDICT_MET;
    else if (strcmp(outcome, "pass") == 0)
        verdict.kind = KCS_VERDICT_UNEXPECTED_PASS;
    else
        verdict.kind = KCS_VERDICT_DIFFERENT;
    return verdict;
}

static const char *const verdict_names[] = {"none", "met", "unexpected pass", "different"};

const char *kcs_verdict_name(kcs_verdict_kind kind)
{
    return verdict_names[kind];
}

kcs_verdict_kind kcs_verdict_from_name(const char *name)
{
    for (int kind = KCS_VERDICT_NONE; kind <= KCS_VERDICT_DIFFERENT; kind++)
        if (name && strcmp(name, verdict_names[kind]) == 0)
            return (kcs_verdict_kind)kind;
    return KCS_VERDICT_NONE;
}

void kcs_expectations_free(kcs_expectations *expectations)
{
    free(expectations->items);
    expectations->items = NULL;
    expectations->count = 0;
}
