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
        char outcome[sizeof e.outcome + sizeof e.explained_by] = ""; /* "fail" or "fail=NAME" */
        /* The six fields, each checked against its room (a longer one is an
         * error, never cut short: a cut glob would match something else),
         * then the reason: the rest of the line. */
        struct {
            const char *name;
            char *into;
            size_t size;
        } fields[] = {{"backend", e.backend, sizeof e.backend},     {"device", e.device, sizeof e.device},
                      {"driver", e.driver, sizeof e.driver},        {"case", e.case_pattern, sizeof e.case_pattern},
                      {"kernel", e.kernel, sizeof e.kernel},        {"outcome", outcome, sizeof outcome}};
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
        /* "fail=NAME": a failure that the model NAME (or "unexplained": no model) explains */
        char *equals = strchr(outcome, '=');
        if (equals) {
            *equals = '\0';
            snprintf(e.explained_by, sizeof e.explained_by, "%s", equals + 1);
        }
        snprintf(e.outcome, sizeof e.outcome, "%s", outcome);
        if (strcmp(outcome, "fail") != 0 && strcmp(outcome, "error") != 0 && strcmp(outcome, "skip") != 0) {
            status = kcs_fail(err, KCS_ERROR, "%s:%d: outcome '%s' is not fail, error or skip", path, number,
                              outcome);
            break;
        }
        if (equals && (strcmp(outcome, "fail") != 0 || !e.explained_by[0])) {
            status = kcs_fail(err, KCS_ERROR,
                              "%s:%d: only a failure names what explains it: 'fail=MODEL' or 'fail=unexplained', "
                              "not '%s=%s'", path, number, outcome, e.explained_by);
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

/* Whether a failure's explanation is the one a line's "fail=NAME" asks for:
 * NAME among the models that fit, alone or with models the case cannot tell
 * from it; "unexplained": models were tried and none fits. */
static int explained_as_listed(const char *name, const kcs_explanation *x)
{
    if (!x || !x->text[0] || strncmp(x->text, "not explained", 13) == 0)
        return 0;
    if (strcmp(name, "unexplained") == 0)
        return x->fitting == 0;
    for (int f = 0; f < x->fitting; f++)
        if (strcmp(x->fits[f].model->name, name) == 0)
            return x->fitting == 1 || x->indistinguishable;
    return 0;
}

kcs_verdict kcs_expectations_verdict(const kcs_expectations *expectations, const kcs_expectation_subject *subject,
                                     const char *outcome)
{
    kcs_verdict verdict = {.kind = KCS_VERDICT_NONE, .line = first_match(expectations, subject)};
    if (!verdict.line)
        return verdict;
    const char *listed = verdict.line->outcome;
    if (verdict.line->explained_by[0] && strcmp(outcome, "fail") == 0)
        verdict.kind = explained_as_listed(verdict.line->explained_by, subject->explanation) ? KCS_VERDICT_MET
                                                                                            : KCS_VERDICT_DIFFERENT;
    else if (verdict.line->explained_by[0] && strcmp(outcome, "pass") != 0)
        verdict.kind = KCS_VERDICT_DIFFERENT; /* an error has no explanation to meet the line's */
    else if (strcmp(outcome, listed) == 0 || (strcmp(listed, "fail") == 0 && strcmp(outcome, "error") == 0))
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
