/* case_file.c: the parser of literate case files (see case_file.h and
 * docs/case-format.md). It reads line by line, keeps every problem with its
 * file and line, and never stops at the first one. */
#include "case_file.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char fence_open[] = "```kcs-case";

static kcs_status add_problem(kcs_case_list *list, const char *file, int line, const char *case_name,
                              const char *format, ...) __attribute__((format(printf, 5, 6)));

static kcs_status add_problem(kcs_case_list *list, const char *file, int line, const char *case_name,
                              const char *format, ...)
{
    if (list->problem_count == list->problem_capacity) {
        size_t capacity = list->problem_capacity ? 2 * list->problem_capacity : 16;
        kcs_case_problem *grown = realloc(list->problems, capacity * sizeof *grown);
        if (!grown)
            return KCS_ERROR;
        list->problems = grown;
        list->problem_capacity = capacity;
    }
    kcs_case_problem *problem = &list->problems[list->problem_count++];
    snprintf(problem->file, sizeof problem->file, "%s", file);
    problem->line = line;
    snprintf(problem->case_name, sizeof problem->case_name, "%s", case_name ? case_name : "");
    va_list args;
    va_start(args, format);
    vsnprintf(problem->message, sizeof problem->message, format, args);
    va_end(args);
    return KCS_OK;
}

static kcs_status add_case(kcs_case_list *list, const kcs_case *c)
{
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? 2 * list->capacity : 16;
        kcs_case *grown = realloc(list->cases, capacity * sizeof *grown);
        if (!grown)
            return KCS_ERROR;
        list->cases = grown;
        list->capacity = capacity;
    }
    list->cases[list->count++] = *c;
    return KCS_OK;
}

/* Removes leading and trailing white space in place. */
static char *trim(char *text)
{
    while (isspace((unsigned char)*text))
        text++;
    size_t length = strlen(text);
    while (length > 0 && isspace((unsigned char)text[length - 1]))
        text[--length] = '\0';
    return text;
}

static int is_name(const char *text)
{
    if (!*text)
        return 0;
    for (const char *p = text; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return 0;
    return 1;
}

/* Parses a number: decimal, scientific, inf, nan, or 10^k. */
static int parse_number(const char *text, double *value);

int kcs_parse_size(const char *name, const char *text, double *size, char *why, size_t why_size)
{
    if (!parse_number(text, size) || isnan(*size))
        snprintf(why, why_size, "size %s=%s is not a number (a whole number >= 0: digits, 1e6 or 10^6)", name, text);
    else if (*size < 0)
        snprintf(why, why_size, "size %s=%s is negative: a size is a whole number >= 0", name, text);
    else if (*size > 0x1.0p53)
        snprintf(why, why_size, "size %s=%s is %.6g, too large: a size is at most 2^53 = 9007199254740992", name,
                 text, *size);
    else if (*size != floor(*size))
        snprintf(why, why_size, "size %s=%s is not a whole number", name, text);
    else
        return 1;
    return 0;
}

static int parse_number(const char *text, double *value)
{
    if (strncmp(text, "10^", 3) == 0) {
        char *end;
        long exponent = strtol(text + 3, &end, 10);
        if (*end || end == text + 3 || exponent < 0 || exponent > 300)
            return 0;
        *value = pow(10.0, (double)exponent);
        return 1;
    }
    char *end;
    errno = 0;
    *value = strtod(text, &end);
    return end != text && *end == '\0' && errno != ERANGE;
}

/* Splits "a=1 b=2" into name/text pairs; returns the count or -1 with why. */
static int split_pairs(char *text, char names[][32], char values[][64], int max, char *why,
                       size_t why_size)
{
    int count = 0;
    for (char *save = NULL, *word = strtok_r(text, " \t", &save); word;
         word = strtok_r(NULL, " \t", &save)) {
        char *equals = strchr(word, '=');
        if (!equals || equals == word || !equals[1]) {
            snprintf(why, why_size, "'%s' is not name=value", word);
            return -1;
        }
        *equals = '\0';
        if (count == max) {
            snprintf(why, why_size, "more than %d name=value pairs", max);
            return -1;
        }
        if (strlen(word) >= 32 || strlen(equals + 1) >= 64) {
            snprintf(why, why_size, "'%s' is too long", word);
            return -1;
        }
        for (int i = 0; i < count; i++)
            if (strcmp(names[i], word) == 0) {
                snprintf(why, why_size, "'%s' given twice", word);
                return -1;
            }
        strcpy(names[count], word);
        strcpy(values[count], equals + 1);
        count++;
    }
    return count;
}

/* State of the block being parsed. */
typedef struct {
    kcs_case c;
    unsigned seen;           /* bits of keys already given */
    unsigned explicit_seeds; /* bit i: input i was given seed= */
    int failed;     /* a problem was reported for this block */
    char short_name[96];
} block;

enum { KEY_CASE = 1, KEY_OP = 2, KEY_DTYPE = 4, KEY_SIZES = 8, KEY_PARAMS = 16, KEY_EXPECT = 32,
       KEY_TAGS = 64, KEY_BOUND_TIGHT = 128 };

static const struct {
    const char *name;
    unsigned bit;
} keys[] = {{"case", KEY_CASE},     {"op", KEY_OP},         {"dtype", KEY_DTYPE},
            {"sizes", KEY_SIZES},   {"params", KEY_PARAMS}, {"expect", KEY_EXPECT},
            {"tags", KEY_TAGS},     {"bound-tight", KEY_BOUND_TIGHT}};

const char *const kcs_tag_names[] = {"perf", "large", "no-reference", "sanitize", "sanitize-unoptimised"};
const int kcs_tag_count = sizeof kcs_tag_names / sizeof kcs_tag_names[0];

unsigned kcs_tag_bit(const char *name)
{
    for (int t = 0; t < kcs_tag_count; t++)
        if (strcmp(kcs_tag_names[t], name) == 0)
            return 1u << t;
    return 0;
}

/* Parses one "key: value" line into the block; returns 0 with why on error. */
static int parse_line(block *b, const char *stem, char *key, char *value, char *why, size_t why_size)
{
    kcs_case *c = &b->c;
    if (strncmp(key, "input ", 6) == 0 || strcmp(key, "input") == 0) {
        char *input_name = trim(key + 5);
        if (!is_name(input_name)) {
            snprintf(why, why_size, "'input' needs an input name: 'input x: uniform'");
            return 0;
        }
        if (kcs_case_input(c, input_name)) {
            snprintf(why, why_size, "input '%s' given twice", input_name);
            return 0;
        }
        if (c->input_count == KCS_MAX_INPUTS) {
            snprintf(why, why_size, "more than %d inputs", KCS_MAX_INPUTS);
            return 0;
        }
        kcs_input_spec *input = &c->inputs[c->input_count];
        memset(input, 0, sizeof *input);
        snprintf(input->name, sizeof input->name, "%s", input_name);
        char *save = NULL;
        char *distribution = strtok_r(value, " \t", &save);
        if (!distribution) {
            snprintf(why, why_size, "input '%s' needs a distribution", input_name);
            return 0;
        }
        snprintf(input->distribution.name, sizeof input->distribution.name, "%s", distribution);
        char names[KCS_MAX_DISTRIBUTION_PARAMS + 1][32], values[KCS_MAX_DISTRIBUTION_PARAMS + 1][64];
        char *rest = save ? save : (char *)"";
        int count = split_pairs(rest, names, values, KCS_MAX_DISTRIBUTION_PARAMS + 1, why, why_size);
        if (count < 0)
            return 0;
        int has_seed = 0;
        for (int i = 0; i < count; i++) {
            if (strcmp(names[i], "seed") == 0) {
                char *end;
                errno = 0;
                unsigned long long seed = strtoull(values[i], &end, 0);
                if (*end || errno || values[i][0] == '-') {
                    snprintf(why, why_size, "seed '%s' is not an unsigned 64-bit integer", values[i]);
                    return 0;
                }
                input->distribution.seed = seed;
                has_seed = 1;
                continue;
            }
            kcs_named_value *param = &input->distribution.params[input->distribution.param_count];
            if (input->distribution.param_count == KCS_MAX_DISTRIBUTION_PARAMS) {
                snprintf(why, why_size, "too many distribution parameters");
                return 0;
            }
            snprintf(param->name, sizeof param->name, "%s", names[i]);
            if (!parse_number(values[i], &param->value)) {
                snprintf(why, why_size, "parameter %s=%s is not a number", names[i], values[i]);
                return 0;
            }
            input->distribution.param_count++;
        }
        kcs_error error;
        if (kcs_distribution_check(&input->distribution, &error) != KCS_OK) {
            snprintf(why, why_size, "input '%s': %s", input_name, error.message);
            return 0;
        }
        /* Without seed=, the seed is derived from the case name in finish_block. */
        if (has_seed)
            b->explicit_seeds |= 1u << c->input_count;
        c->input_count++;
        return 1;
    }
    unsigned bit = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (strcmp(keys[k].name, key) == 0)
            bit = keys[k].bit;
    if (!bit) {
        snprintf(why, why_size,
                 "unknown key '%s' (known: case, op, dtype, sizes, params, input NAME, expect, tags, "
                 "bound-tight)",
                 key);
        return 0;
    }
    if (b->seen & bit) {
        snprintf(why, why_size, "key '%s' given twice", key);
        return 0;
    }
    b->seen |= bit;
    switch (bit) {
    case KEY_CASE:
        if (!is_name(value) || value[0] == '.' || strlen(value) >= sizeof b->short_name) {
            snprintf(why, why_size, "case name '%s' must be letters, digits, '-', '_' or '.', not begin with '.'",
                     value);
            return 0;
        }
        snprintf(b->short_name, sizeof b->short_name, "%s", value);
        snprintf(c->name, sizeof c->name, "%s/%s", stem, value);
        return 1;
    case KEY_OP:
        if (!is_name(value) || strlen(value) >= sizeof c->op) {
            snprintf(why, why_size, "op '%s' is not a name", value);
            return 0;
        }
        snprintf(c->op, sizeof c->op, "%s", value);
        return 1;
    case KEY_DTYPE:
        c->dtype = kcs_dtype_from_name(value);
        if (c->dtype == KCS_DTYPE_NONE) {
            snprintf(why, why_size, "unknown dtype '%s' (known: %s)", value, kcs_dtype_names());
            return 0;
        }
        return 1;
    case KEY_SIZES: {
        char names[KCS_MAX_SIZES][32], values[KCS_MAX_SIZES][64];
        int count = split_pairs(value, names, values, KCS_MAX_SIZES, why, why_size);
        if (count < 0)
            return 0;
        for (int i = 0; i < count; i++) {
            double size;
            if (!kcs_parse_size(names[i], values[i], &size, why, why_size)) {
                return 0;
            }
            snprintf(c->sizes[i].name, sizeof c->sizes[i].name, "%s", names[i]);
            c->sizes[i].value = size;
        }
        c->size_count = count;
        return 1;
    }
    case KEY_PARAMS: {
        char names[KCS_MAX_PARAMS][32], values[KCS_MAX_PARAMS][64];
        int count = split_pairs(value, names, values, KCS_MAX_PARAMS, why, why_size);
        if (count < 0)
            return 0;
        for (int i = 0; i < count; i++) {
            snprintf(c->params[i].name, sizeof c->params[i].name, "%s", names[i]);
            snprintf(c->params[i].text, sizeof c->params[i].text, "%s", values[i]);
        }
        c->param_count = count;
        return 1;
    }
    case KEY_EXPECT: {
        char *save = NULL;
        char *source = strtok_r(value, " \t", &save);
        char *option = strtok_r(NULL, " \t", &save);
        if (source && strcmp(source, "golden") == 0 && !option) {
            c->expect = KCS_EXPECT_GOLDEN;
        } else if (source && strcmp(source, "closed-form") == 0 && !option) {
            c->expect = KCS_EXPECT_CLOSED_FORM;
        } else if (source && strcmp(source, "oracle") == 0) {
            c->expect = KCS_EXPECT_ORACLE;
            if (option) {
                char *end;
                if (strncmp(option, "sample=", 7) != 0 || strtok_r(NULL, " \t", &save)) {
                    snprintf(why, why_size, "expect oracle takes only 'sample=N'");
                    return 0;
                }
                errno = 0;
                c->sample = strtoull(option + 7, &end, 10);
                if (*end || errno || c->sample == 0 || option[7] == '-') {
                    snprintf(why, why_size, "sample must be a whole number > 0");
                    return 0;
                }
            }
        } else {
            snprintf(why, why_size,
                     "expect must be 'golden', 'oracle', 'oracle sample=N' or 'closed-form'");
            return 0;
        }
        return 1;
    }
    case KEY_TAGS: {
        char *save = NULL;
        for (char *tag = strtok_r(value, " \t,", &save); tag; tag = strtok_r(NULL, " \t,", &save)) {
            unsigned bit = kcs_tag_bit(tag);
            if (!bit) {
                char known[160] = "";
                for (int t = 0; t < kcs_tag_count; t++)
                    snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", t ? ", " : "",
                             kcs_tag_names[t]);
                snprintf(why, why_size, "unknown tag '%s' (known: %s)", tag, known);
                return 0;
            }
            c->tags |= bit;
        }
        return 1;
    }
    case KEY_BOUND_TIGHT:
        if (!value[0]) {
            snprintf(why, why_size, "bound-tight needs the reason the case uses its bound by construction");
            return 0;
        }
        if (strlen(value) >= sizeof c->bound_tight) {
            snprintf(why, why_size, "bound-tight reason longer than %zu characters", sizeof c->bound_tight - 1);
            return 0;
        }
        snprintf(c->bound_tight, sizeof c->bound_tight, "%s", value);
        return 1;
    }
    return 0;
}

/* The file name without directories and without ".md". */
static void file_stem(const char *file, char *stem, size_t size)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    snprintf(stem, size, "%s", base);
    char *dot = strrchr(stem, '.');
    if (dot && strcmp(dot, ".md") == 0)
        *dot = '\0';
}

static kcs_status finish_block(kcs_case_list *list, block *b, size_t first_case_of_file)
{
    kcs_case *c = &b->c;
    static const struct {
        unsigned bit;
        const char *name;
    } required[] = {{KEY_CASE, "case"}, {KEY_OP, "op"}, {KEY_DTYPE, "dtype"}, {KEY_EXPECT, "expect"}};
    if (b->failed)
        return KCS_OK;
    for (size_t r = 0; r < sizeof required / sizeof required[0]; r++)
        if (!(b->seen & required[r].bit))
            return add_problem(list, c->file, c->line, c->name, "case block lacks the key '%s'",
                               required[r].name);
    for (size_t i = first_case_of_file; i < list->count; i++)
        if (strcmp(list->cases[i].name, c->name) == 0)
            return add_problem(list, c->file, c->line, c->name,
                               "case '%s' is defined twice (first at line %d)", b->short_name,
                               list->cases[i].line);
    for (int i = 0; i < c->input_count; i++)
        if (!(b->explicit_seeds & (1u << i))) {
            char seed_text[256];
            snprintf(seed_text, sizeof seed_text, "%s:%s", c->name, c->inputs[i].name);
            c->inputs[i].distribution.seed = kcs_string_hash(seed_text);
        }
    return add_case(list, c);
}

kcs_status kcs_parse_case_text(const char *text, const char *file, kcs_case_list *list,
                               kcs_error *err)
{
    char stem[128];
    file_stem(file, stem, sizeof stem);
    if (!is_name(stem) || stem[0] == '.') {
        /* the stem names the cases and the folders of their golden and saved
         * files: "..", or a name with a '/', would write outside them */
        if (add_problem(list, file, 0, NULL, "a case file's name (less .md) must be letters, digits, '-', '_' "
                        "or '.' and not begin with '.': it names the cases and their folders") != KCS_OK)
            return kcs_fail(err, KCS_ERROR, "out of memory");
        return KCS_OK;
    }
    size_t first_case_of_file = list->count;
    block b;
    int in_block = 0, line_number = 0;
    const char *cursor = text;
    if (strncmp(cursor, "\xef\xbb\xbf", 3) == 0)
        cursor += 3; /* a UTF-8 byte order mark, as some editors write: not part of the first line */
    while (*cursor) {
        const char *end = strchr(cursor, '\n');
        size_t length = end ? (size_t)(end - cursor) : strlen(cursor);
        line_number++;
        char line_buffer[1024];
        int too_long = length >= sizeof line_buffer;
        size_t copied = too_long ? sizeof line_buffer - 1 : length;
        memcpy(line_buffer, cursor, copied);
        line_buffer[copied] = '\0';
        cursor = end ? end + 1 : cursor + length;
        char *line = trim(line_buffer);
        kcs_status status = KCS_OK;
        if (!in_block) {
            if (strncmp(line, fence_open, sizeof fence_open - 1) == 0) {
                in_block = 1;
                memset(&b, 0, sizeof b);
                snprintf(b.c.file, sizeof b.c.file, "%s", file);
                b.c.line = line_number;
                if (strcmp(trim(line + sizeof fence_open - 1), "") != 0) {
                    status = add_problem(list, file, line_number, NULL,
                                         "text after '%s' on the fence line", fence_open);
                    b.failed = 1;
                }
            }
        } else if (strcmp(line, "```") == 0) {
            status = finish_block(list, &b, first_case_of_file);
            in_block = 0;
        } else if (line[0] == '\0' || line[0] == '#' || b.failed) {
            /* blank lines and comments; the rest of a failed block is skipped */
        } else if (too_long) {
            status = add_problem(list, file, line_number, b.c.name, "line longer than %zu characters",
                                 sizeof line_buffer - 1);
            b.failed = 1;
        } else {
            char *colon = strchr(line, ':');
            char why[512];
            if (!colon) {
                status = add_problem(list, file, line_number, b.c.name,
                                     "expected 'key: value', found '%s'", line);
                b.failed = 1;
            } else {
                *colon = '\0';
                char *key = trim(line), *value = trim(colon + 1);
                if (!parse_line(&b, stem, key, value, why, sizeof why)) {
                    status = add_problem(list, file, line_number, b.c.name, "%s", why);
                    b.failed = 1;
                }
            }
        }
        if (status != KCS_OK)
            return kcs_fail(err, KCS_ERROR, "%s: out of memory", file);
    }
    if (in_block && add_problem(list, file, b.c.line, b.c.name,
                                "case block opened here is never closed with ```") != KCS_OK)
        return kcs_fail(err, KCS_ERROR, "%s: out of memory", file);
    return KCS_OK;
}

/* The largest case file read: the biggest today is under 40 KiB. */
enum { case_file_limit = 16 << 20 };

kcs_status kcs_parse_case_file(const char *path, kcs_case_list *list, kcs_error *err)
{
    struct stat info;
    if (stat(path, &info) == 0 && (!S_ISREG(info.st_mode) || info.st_size > case_file_limit)) {
        if (add_problem(list, path, 0, NULL, S_ISREG(info.st_mode) ? "larger than 16 MiB: not a case file"
                                                                     : "not a regular file") != KCS_OK)
            return kcs_fail(err, KCS_ERROR, "out of memory");
        return KCS_OK;
    }
    FILE *stream = fopen(path, "rb");
    if (!stream) {
        if (add_problem(list, path, 0, NULL, "cannot read: %s", strerror(errno)) != KCS_OK)
            return kcs_fail(err, KCS_ERROR, "out of memory");
        return KCS_OK;
    }
    char *text = NULL;
    size_t length = 0, capacity = 0;
    for (;;) {
        if (capacity - length < 65536) {
            capacity = capacity ? 2 * capacity : 65536;
            char *grown = realloc(text, capacity + 1);
            if (!grown) {
                free(text);
                fclose(stream);
                return kcs_fail(err, KCS_ERROR, "%s: out of memory", path);
            }
            text = grown;
        }
        size_t got = fread(text + length, 1, capacity - length, stream);
        length += got;
        if (got == 0)
            break;
    }
    int read_failed = ferror(stream);
    fclose(stream);
    text[length] = '\0';
    kcs_status status = KCS_OK;
    if (read_failed || memchr(text, '\0', length)) {
        if (add_problem(list, path, 0, NULL, read_failed ? "read error" : "file contains NUL bytes") !=
            KCS_OK)
            status = kcs_fail(err, KCS_ERROR, "out of memory");
    } else {
        status = kcs_parse_case_text(text, path, list, err);
    }
    free(text);
    return status;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

kcs_status kcs_parse_case_directory(const char *directory, kcs_case_list *list, kcs_error *err)
{
    DIR *dir = opendir(directory);
    if (!dir)
        return kcs_fail(err, KCS_ERROR, "%s: cannot open case directory: %s", directory,
                        strerror(errno));
    char **names = NULL;
    size_t count = 0;
    kcs_status status = KCS_OK;
    for (struct dirent *entry; (entry = readdir(dir));) {
        size_t length = strlen(entry->d_name);
        if (length < 4 || strcmp(entry->d_name + length - 3, ".md") != 0)
            continue;
        char **grown = realloc(names, (count + 1) * sizeof *names);
        if (!grown || !(grown[count] = strdup(entry->d_name))) {
            names = grown ? grown : names;
            status = kcs_fail(err, KCS_ERROR, "out of memory");
            break;
        }
        names = grown;
        count++;
    }
    closedir(dir);
    if (status == KCS_OK)
        qsort(names, count, sizeof *names, compare_names);
    for (size_t i = 0; i < count; i++) {
        if (status == KCS_OK) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", directory, names[i]);
            status = kcs_parse_case_file(path, list, err);
        }
        free(names[i]);
    }
    free(names);
    return status;
}

void kcs_case_list_free(kcs_case_list *list)
{
    free(list->cases);
    free(list->problems);
    memset(list, 0, sizeof *list);
}

double kcs_case_size(const kcs_case *c, const char *name, double fallback)
{
    for (int i = 0; i < c->size_count; i++)
        if (strcmp(c->sizes[i].name, name) == 0)
            return c->sizes[i].value;
    return fallback;
}

const char *kcs_case_param(const kcs_case *c, const char *name)
{
    for (int i = 0; i < c->param_count; i++)
        if (strcmp(c->params[i].name, name) == 0)
            return c->params[i].text;
    return NULL;
}

const kcs_input_spec *kcs_case_input(const kcs_case *c, const char *name)
{
    for (int i = 0; i < c->input_count; i++)
        if (strcmp(c->inputs[i].name, name) == 0)
            return &c->inputs[i];
    return NULL;
}

int kcs_case_matches(const kcs_case *c, const char *pattern)
{
    /* A pattern without wildcards is a prefix: "sumsq" selects sumsq/... */
    if (!strpbrk(pattern, "*?["))
        return strncmp(c->name, pattern, strlen(pattern)) == 0;
    return fnmatch(pattern, c->name, 0) == 0;
}
