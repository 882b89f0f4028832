/* cli.c: the runner's command line: the usage text, parsing it into
 * kcs_runner_options, and which cases its patterns select. */
#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

#ifndef KCS_SOURCE_DIR
#define KCS_SOURCE_DIR "."
#endif

static const char usage_text[] =
    "usage: kcs [run] [options] [PATTERN...]   run cases (the default command)\n"
    "       kcs list [options] [PATTERN...]    list cases (--json: every field, as JSON)\n"
    "       kcs devices [options]              list backends and their devices\n"
    "       kcs rows [options]                 every kernel row, checked, with the cases that select it\n"
    "       kcs golden [options] [PATTERN...]  rewrite golden outputs and golden/MANIFEST\n"
    "       kcs apply OP --input NAME=FILE.npy ...  run one op on .npy inputs (kcs apply --help)\n"
    "       kcs check OP --input NAME=FILE.npy ... --actual NAME=FILE.npy ...\n"
    "                                          check outputs computed elsewhere (kcs check --help)\n"
    "       kcs probe [options]                the probe for silent data corruption (kcs probe --help)\n"
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
    "  --kernel GLOB      only kernel variants matching GLOB (\"softmax\" cases: 'warp-*')\n"
    "  --tag TAG          only cases tagged TAG (perf, large, no-reference, sanitize,\n"
    "                     sanitize-unoptimised)\n"
    "  --results FILE     write the JSON results here (default: kcs-results.json)\n"
    "  --junit FILE       also write JUnit XML here\n"
    "  --benchmark        time perf-tagged cases (kernel and end to end) and measure the\n"
    "                     ceilings they are judged against, only those: the copy\n"
    "                     bandwidth for a memory-bound op, its mode's rate for a GEMM\n"
    "  --all-ceilings     measure every ceiling of each device (copy, upload, FMA, every\n"
    "                     GEMM mode's rate), with or without --benchmark\n"
    "  --ceilings         the same as --all-ceilings (kcs devices --ceilings)\n"
    "  --min-repeats N    timed runs per case at least (default 10)\n"
    "  --min-time S       seconds of timed runs per case at least (default 0.5)\n"
    "  --warm-up S        untimed runs of each kernel before its timed ones: one, and more\n"
    "                     until S seconds (default 0: one); a GPU's clocks drop under\n"
    "                     sustained load, docs/runner.md \"Warm-up\"\n"
    "  --one-by-one       time each repeat on its own, the device idle while the host\n"
    "                     waits for it and queues the next, even where the backend can\n"
    "                     queue them back to back (CUDA, OpenCL; docs/runner.md\n"
    "                     \"Back to back\")\n"
    "  --skip-large       leave out cases tagged large (reported as skipped)\n"
    "  --save-failures DIR  write failing cases' inputs, expected and actual outputs as\n"
    "                     .npy under DIR, with a replay command (default: kcs-failures)\n"
    "  --save-all         write every case that way, not only failures (default\n"
    "                     folder then: kcs-saved)\n"
    "  --no-save          write no .npy files\n"
    "  --time-limit S     a unit of a case (preparing it, or one kernel) making no\n"
    "                     progress for S seconds is an error and the run goes on\n"
    "                     (default: each unit's own, from the case's size: 60 s and\n"
    "                     more, docs/runner.md; 0: no limit)\n"
    "  --jobs N           run N devices' workers at once, each device in a worker of its\n"
    "                     own (default: every GPU at once, beside one worker for all of\n"
    "                     the devices that share the host's cores: reference, POCL)\n"
    "  --in-process       run cases in this process, not in a worker process (for a\n"
    "                     debugger; a hang or crash then ends the run)\n"
    "  --expectations FILE  expected failures and skips, each with a reason (repeatable;\n"
    "                     docs/expectations.md): they do not fail the run, and a listed\n"
    "                     case that passes does\n"
    "  --determinism      run each kernel twice; outputs that differ in any bit fail\n"
    "  --strict-expectations  an expectation line that matched no result fails the run\n"
    "                     (such lines are reported either way)\n"
    "  --quiet            print only failures, errors and the summary\n"
    "  --json             kcs list only: every selected case with all its fields, and the\n"
    "                     problems found in the case files, as one JSON document\n"
    "  --help             this text\n"
    "\n"
    "exit status: 0 all passed, 1 a case failed or had an error, 2 usage or configuration error\n";

static void set_defaults(kcs_runner_options *o, char **argv)
{
    memset(o, 0, sizeof *o);
    o->command = "run";
    snprintf(o->cases_dir, sizeof o->cases_dir, "%s/cases", KCS_SOURCE_DIR);
    snprintf(o->golden_dir, sizeof o->golden_dir, "%s/golden", KCS_SOURCE_DIR);
    o->results_path = "kcs-results.json";
    o->save_dir = "kcs-failures";
    o->time_limit = KCS_TIME_LIMIT_DERIVED;
    o->program = argv[0];
    o->run.min_repeats = 10;
    o->run.min_seconds = 0.5;
    o->run.max_repeats = 1000;
}

/* Takes the command word if argv[1] is one; returns where the options start. */
static int take_command(int argc, char **argv, kcs_runner_options *o)
{
    static const char *const commands[] = {"run", "list", "devices", "golden", "rows"};
    for (size_t i = 0; argc > 1 && i < sizeof commands / sizeof *commands; i++)
        if (strcmp(argv[1], commands[i]) == 0) {
            o->command = argv[1];
            return 2;
        }
    return 1;
}

static int take_device(const char *text, kcs_runner_options *o)
{
    char *end;
    long index = strtol(text, &end, 10);
    if (*end || index < 0 || o->device_count == 64) {
        fprintf(stderr, "kcs: --device needs a device index >= 0, not '%s'\n", text);
        return 0;
    }
    o->devices[o->device_count++] = (int)index;
    return 1;
}

static int take_expectations(const char *path, kcs_runner_options *o)
{
    kcs_error err = {{0}};
    if (kcs_expectations_read(path, &o->expectations, &err) != KCS_OK) {
        fprintf(stderr, "kcs: %s\n", err.message);
        return 0;
    }
    return 1;
}

/* Reads the seconds of `option` into *seconds: a number from 0 to most (what the error calls `range`); else
 * says so and returns 0. */
static int take_seconds(const char *text, const char *option, double most, const char *range, double *seconds)
{
    char *end;
    *seconds = strtod(text, &end);
    if (*end || !(*seconds >= 0 && *seconds <= most)) {
        fprintf(stderr, "kcs: %s needs seconds %s\n", option, range);
        return 0;
    }
    return 1;
}

static int take_time_limit(const char *text, kcs_runner_options *o)
{
    return take_seconds(text, "--time-limit", HUGE_VAL, ">= 0 (0: no limit)", &o->time_limit);
}

static int take_jobs(const char *text, kcs_runner_options *o)
{
    char *end;
    o->jobs = (int)strtol(text, &end, 10);
    if (*end || o->jobs < 1 || o->jobs > 64) {
        fprintf(stderr, "kcs: --jobs needs a count of workers from 1 to 64\n");
        return 0;
    }
    return 1;
}

static int take_min_repeats(const char *text, kcs_runner_options *o)
{
    char *end;
    o->run.min_repeats = (int)strtol(text, &end, 10);
    if (*end || o->run.min_repeats < 1 || o->run.min_repeats > 100000) {
        fprintf(stderr, "kcs: --min-repeats needs a count from 1 to 100000\n");
        return 0;
    }
    if (o->run.max_repeats < o->run.min_repeats)
        o->run.max_repeats = o->run.min_repeats;
    return 1;
}

static int take_min_time(const char *text, kcs_runner_options *o)
{
    return take_seconds(text, "--min-time", 3600, "from 0 to 3600", &o->run.min_seconds);
}

static int take_warm_up(const char *text, kcs_runner_options *o)
{
    return take_seconds(text, "--warm-up", 60, "from 0 to 60", &o->run.warm_up_seconds);
}

static int take_tag(const char *name, kcs_runner_options *o)
{
    o->tag = kcs_tag_bit(name);
    if (!o->tag) {
        fprintf(stderr, "kcs: --tag needs a tag of the case files, not '%s' (known:", name);
        for (int t = 0; t < kcs_tag_count; t++)
            fprintf(stderr, " %s", kcs_tag_names[t]);
        fprintf(stderr, ")\n");
        return 0;
    }
    return 1;
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
    {"expectations", required_argument, 0, 'X'}, {"determinism", no_argument, 0, 'D'},
    {"strict-expectations", no_argument, 0, 'E'}, {"kernel", required_argument, 0, 'K'},
    {"jobs", required_argument, 0, 'J'},       {"all-ceilings", no_argument, 0, 'a'},
    {"tag", required_argument, 0, 'G'},          {"json", no_argument, 0, 'O'},
    {"warm-up", required_argument, 0, 'W'},    {"one-by-one", no_argument, 0, 'o'},
    {"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};

/* Applies one option (getopt_long's code and argument) to o. */
static kcs_options_outcome take_option(int option, char *value, kcs_runner_options *o)
{
    int ok = 1;
    switch (option) {
    case 'c': snprintf(o->cases_dir, sizeof o->cases_dir, "%s", value); break;
    case 'g': snprintf(o->golden_dir, sizeof o->golden_dir, "%s", value); break;
    case 'b': snprintf(o->backends, sizeof o->backends, "%s", value); break;
    case 'd': ok = take_device(value, o); break;
    case 'p': o->platform = value; break;
    case 'r': o->results_path = value; break;
    case 'j': o->junit_path = value; break;
    case 'B': o->run.benchmark = 1; o->ceilings = 1; break;
    case 'C': /* fall through: the older name of --all-ceilings */
    case 'a': o->ceilings = 1; o->all_ceilings = 1; break;
    case 'I': o->in_process = 1; break;
    case 'D': o->run.determinism = 1; break;
    case 'X': ok = take_expectations(value, o); break;
    case 'E': o->strict_expectations = 1; break;
    case 'K': o->kernel_pattern = value; break;
    case 'G': ok = take_tag(value, o); break;
    case 'T': ok = take_time_limit(value, o); break;
    case 'J': ok = take_jobs(value, o); break;
    case 'n': ok = take_min_repeats(value, o); break;
    case 't': ok = take_min_time(value, o); break;
    case 'W': ok = take_warm_up(value, o); break;
    case 'o': o->run.one_by_one = 1; break;
    case 'L': o->skip_large = 1; break;
    case 'q': o->quiet = 1; break;
    case 'O': o->list_json = 1; break;
    case 'S': o->save_dir = value; break;
    case 'A': o->save_all = 1; break;
    case 'N': o->save_dir = NULL; break;
    case 'h': fputs(usage_text, stdout); return KCS_OPTIONS_HELP;
    default: fputs(usage_text, stderr); return KCS_OPTIONS_BAD;
    }
    return ok ? KCS_OPTIONS_PARSED : KCS_OPTIONS_BAD;
}

kcs_options_outcome kcs_parse_options(int argc, char **argv, kcs_runner_options *o)
{
    set_defaults(o, argv);
    optind = take_command(argc, argv, o);
    unsigned char given[128] = {0};
    for (int option; (option = getopt_long(argc, argv, "", long_options, NULL)) != -1;) {
        /* Only --device and --expectations may be repeated: a second --results
         * or --time-limit would silently override the first. */
        if (option > 0 && option < 128 && given[option]++ && option != 'd' && option != 'X') {
            fprintf(stderr, "kcs: %s was given twice\n", argv[optind - 1 - (optarg && optarg == argv[optind - 1])]);
            return KCS_OPTIONS_BAD;
        }
        kcs_options_outcome outcome = take_option(option, optarg, o);
        if (outcome != KCS_OPTIONS_PARSED)
            return outcome;
    }
    if (given['O'] && strcmp(o->command, "list") != 0) {
        fprintf(stderr, "kcs: --json is an option of kcs list, not of kcs %s\n", o->command);
        return KCS_OPTIONS_BAD;
    }
    if (given['A'] && given['N']) {
        fprintf(stderr, "kcs: --save-all and --no-save contradict each other\n");
        return KCS_OPTIONS_BAD;
    }
    /* Every case's data is not a folder of failures: name it for what it holds. */
    if (given['A'] && !given['S'])
        o->save_dir = "kcs-saved";
    o->patterns = argv + optind;
    o->pattern_count = argc - optind;
    return KCS_OPTIONS_PARSED;
}

static int built(const char *name)
{
    for (size_t b = 0; b < kcs_builtin_backend_count; b++)
        if (strcmp(kcs_builtin_backends[b]->name, name) == 0)
            return 1;
    return 0;
}

int kcs_check_backend_names(const kcs_runner_options *o)
{
    char list[512];
    snprintf(list, sizeof list, "%s", o->backends);
    for (char *save = NULL, *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (built(item))
            continue;
        fprintf(stderr, "kcs: no backend '%s' in this build (built:", item);
        for (size_t b = 0; b < kcs_builtin_backend_count; b++)
            fprintf(stderr, " %s", kcs_builtin_backends[b]->name);
        fprintf(stderr, "); configure.py says what it left out and why\n");
        return 0;
    }
    return 1;
}

int kcs_case_selected(const kcs_runner_options *o, const kcs_case *c)
{
    if (o->tag && !(c->tags & o->tag))
        return 0;
    if (o->pattern_count == 0)
        return 1;
    for (int i = 0; i < o->pattern_count; i++)
        if (kcs_case_matches(c, o->patterns[i]))
            return 1;
    return 0;
}

int kcs_kernel_selected(const kcs_runner_options *o, const kcs_kernel *kernel, const kcs_case *c)
{
    return strcmp(kernel->op, c->op) == 0 && kernel->dtype == c->dtype &&
           (!o->kernel_pattern || fnmatch(o->kernel_pattern, kernel->variant, 0) == 0);
}

const char *kcs_case_left_out(const kcs_runner_options *o, const kcs_case *c, const kcs_backend *backend)
{
    if (o->skip_large && (c->tags & KCS_TAG_LARGE))
        return "tagged large and --skip-large was given";
    if (backend && (c->tags & KCS_TAG_NO_REFERENCE) && strcmp(backend->name, "reference") == 0)
        return "tagged no-reference: too slow for the scalar reference";
    return NULL;
}
