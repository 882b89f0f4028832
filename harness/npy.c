/* npy.c: NumPy .npy reader and writer (see npy.h).
 *
 * The header is a Python dict literal. Rather than a general Python parser,
 * this reads exactly the three keys numpy writes, with the variations a hand
 * edit or another writer might produce (key order, either quote, spaces,
 * trailing commas, 3L from Python 2), and rejects anything else by name.
 * Every read goes through a cursor that checks the end first, so a damaged
 * file cannot make the reader look past the bytes it was given.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* numpy aligns the start of the data to this so it can be memory-mapped. */
enum { NPY_ALIGNMENT = 64 };

/* The descr strings kcs reads and writes; numpy writes '<' for these on a
 * little-endian machine, so no other spelling is accepted. numpy has no
 * bfloat16, so bf16 arrays are their bit patterns as '<u2' (kcs has no
 * 16-bit integers to confuse them with): in numpy,
 * (a.astype('<u4') << 16).view('<f4') widens them to float32 exactly.
 * The OCP FP8 types (e4m3, e5m2) are their bytes as '|u1' likewise (numpy
 * has neither; ml_dtypes' float8_e4m3fn and float8_e5m2 view them); one
 * spelling for both, so a '|u1' file reads as e4m3 and the array's use
 * (its case's dtype) says which it is: a reader that expects e5m2 takes
 * the bytes as e5m2 (kcs_npy_dtype_matches). docs/npy.md is the users' page
 * of these conventions, with PyTorch and NumPy code for both ways. */
static const struct {
    const char *descr;
    kcs_dtype dtype;
} npy_descrs[] = {
    {"<f2", KCS_F16}, {"<u2", KCS_BF16}, {"<f4", KCS_F32}, {"<f8", KCS_F64}, {"<i4", KCS_I32}, {"<i8", KCS_I64},
    {"|u1", KCS_FP8_E4M3}, {"|u1", KCS_FP8_E5M2},
};

int kcs_npy_dtype_matches(kcs_dtype stored, kcs_dtype wanted)
{
    const char *a = NULL, *b = NULL;
    for (size_t i = 0; i < sizeof npy_descrs / sizeof npy_descrs[0]; i++) {
        if (npy_descrs[i].dtype == stored)
            a = npy_descrs[i].descr;
        if (npy_descrs[i].dtype == wanted)
            b = npy_descrs[i].descr;
    }
    return stored == wanted || (a && b && strcmp(a, b) == 0);
}

static int host_is_little_endian(void)
{
    const uint16_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    return first == 1;
}

/* .npy data is little-endian; a big-endian host swaps each element. */
static void swap_elements(unsigned char *data, size_t count, size_t element_size)
{
    for (size_t i = 0; i < count; i++) {
        unsigned char *element = data + i * element_size;
        for (size_t low = 0, high = element_size - 1; low < high; low++, high--) {
            unsigned char byte = element[low];
            element[low] = element[high];
            element[high] = byte;
        }
    }
}

/* Copies text into out as printable ASCII with other bytes escaped, and cut
 * short, so a hostile header cannot put control characters or pages of junk
 * into a message that ends up in a terminal or a report. */
static void quote_text(const unsigned char *text, size_t length, char *out, size_t out_size)
{
    const size_t shown_limit = 48;
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < length && i < shown_limit; i++) {
        char piece[8];
        if (text[i] >= 0x20 && text[i] < 0x7f && text[i] != '\\')
            snprintf(piece, sizeof piece, "%c", text[i]);
        else
            snprintf(piece, sizeof piece, "\\x%02x", text[i]);
        size_t piece_length = strlen(piece);
        if (used + piece_length + 4 >= out_size)
            break;
        memcpy(out + used, piece, piece_length + 1);
        used += piece_length;
    }
    if (length > shown_limit && used + 4 < out_size)
        memcpy(out + used, "...", 4);
}

/* Position in the header being parsed; every access checks against end. */
typedef struct {
    const unsigned char *start;
    const unsigned char *position;
    const unsigned char *end;
    const char *name;
    kcs_error *err;
} header_cursor;

static int at_end(const header_cursor *cursor)
{
    return cursor->position >= cursor->end;
}

static int peek(const header_cursor *cursor)
{
    return at_end(cursor) ? -1 : *cursor->position;
}

static void skip_space(header_cursor *cursor)
{
    while (!at_end(cursor)) {
        unsigned char c = *cursor->position;
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v')
            break;
        cursor->position++;
    }
}

static int is_identifier_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Fails with "name: header: expected X at offset N, found Y". */
static kcs_status unexpected(header_cursor *cursor, const char *expected)
{
    size_t offset = (size_t)(cursor->position - cursor->start);
    if (at_end(cursor))
        return kcs_fail(cursor->err, KCS_ERROR, "%s: header: expected %s at offset %zu, found the end of the header",
                        cursor->name, expected, offset);
    char found[256];
    quote_text(cursor->position, (size_t)(cursor->end - cursor->position), found, sizeof found);
    return kcs_fail(cursor->err, KCS_ERROR, "%s: header: expected %s at offset %zu, found '%s'", cursor->name,
                    expected, offset, found);
}

/* Reads a quoted string (no escapes: numpy never writes them in these keys). */
static kcs_status parse_string(header_cursor *cursor, const char *what, const unsigned char **text, size_t *length)
{
    int quote = peek(cursor);
    if (quote != '\'' && quote != '"')
        return unexpected(cursor, what);
    const unsigned char *opening = cursor->position;
    cursor->position++;
    const unsigned char *begin = cursor->position;
    while (!at_end(cursor) && *cursor->position != quote) {
        if (*cursor->position == '\\')
            return kcs_fail(cursor->err, KCS_ERROR,
                            "%s: header: escape sequences in strings are not supported (offset %zu)", cursor->name,
                            (size_t)(cursor->position - cursor->start));
        if (*cursor->position == '\n')
            break;
        cursor->position++;
    }
    if (at_end(cursor) || *cursor->position != quote)
        return kcs_fail(cursor->err, KCS_ERROR, "%s: header: unterminated string starting at offset %zu",
                        cursor->name, (size_t)(opening - cursor->start));
    *text = begin;
    *length = (size_t)(cursor->position - begin);
    cursor->position++;
    return KCS_OK;
}

static int text_equals(const unsigned char *text, size_t length, const char *word)
{
    return strlen(word) == length && memcmp(text, word, length) == 0;
}

/* What a numpy type character means, to make "unsupported descr" concrete. */
static const char *descr_kind(const unsigned char *descr, size_t length)
{
    size_t i = 0;
    if (length > 0 && (descr[0] == '<' || descr[0] == '>' || descr[0] == '|' || descr[0] == '='))
        i = 1;
    if (i >= length)
        return "no type";
    switch (descr[i]) {
    case 'b': return "booleans or signed bytes";
    case '?': return "booleans";
    case 'i': return "signed integers of a size kcs does not use";
    case 'u': return "unsigned integers";
    case 'f': return "floating point of a size kcs does not use";
    case 'c': return "complex numbers";
    case 'O': return "Python objects";
    case 'S': case 'a': return "byte strings";
    case 'U': return "Unicode strings";
    case 'V': return "raw void data";
    case 'M': return "datetimes";
    case 'm': return "timedeltas";
    default: return "an unknown type";
    }
}

static kcs_status parse_descr(header_cursor *cursor, kcs_dtype *dtype)
{
    if (peek(cursor) == '[')
        return kcs_fail(cursor->err, KCS_ERROR,
                        "%s: descr is a list: structured (record) dtypes are not supported", cursor->name);
    const unsigned char *text;
    size_t length;
    kcs_status status = parse_string(cursor, "a quoted descr string such as '<f4'", &text, &length);
    if (status != KCS_OK)
        return status;
    for (size_t i = 0; i < sizeof npy_descrs / sizeof npy_descrs[0]; i++) {
        if (text_equals(text, length, npy_descrs[i].descr)) {
            *dtype = npy_descrs[i].dtype;
            return KCS_OK;
        }
    }
    char shown[256];
    quote_text(text, length, shown, sizeof shown);
    if (length > 0 && text[0] == '>')
        return kcs_fail(cursor->err, KCS_ERROR,
                        "%s: descr '%s' is big-endian: byte order is not supported; save a little-endian copy "
                        "with arr.astype(arr.dtype.newbyteorder('<'))",
                        cursor->name, shown);
    return kcs_fail(cursor->err, KCS_ERROR,
                    "%s: unsupported descr '%s' (%s): kcs reads only '<f2' (f16), '<f4' (f32), '<f8' (f64), "
                    "'<i4' (i32), '<i8' (i64), and, with --dtype asking for them, '<u2' (the bits of bf16 values) "
                    "and '|u1' (the bytes of fp8_e4m3 or fp8_e5m2 values)",
                    cursor->name, shown, descr_kind(text, length));
}

static kcs_status parse_fortran_order(header_cursor *cursor)
{
    const unsigned char *begin = cursor->position;
    while (!at_end(cursor) && is_identifier_char(*cursor->position))
        cursor->position++;
    size_t length = (size_t)(cursor->position - begin);
    if (text_equals(begin, length, "False"))
        return KCS_OK;
    if (text_equals(begin, length, "True"))
        return kcs_fail(cursor->err, KCS_ERROR,
                        "%s: Fortran-ordered arrays are not supported: save with np.ascontiguousarray",
                        cursor->name);
    cursor->position = begin;
    return unexpected(cursor, "True or False for fortran_order");
}

/* Reads "(d0, d1, ...)" into array->shape and array->ndim, checking every
 * limit before anything is multiplied or allocated. */
static kcs_status parse_shape(header_cursor *cursor, kcs_npy_array *array)
{
    const unsigned char *opening = cursor->position;
    if (peek(cursor) != '(')
        return unexpected(cursor, "a tuple such as (2, 3) for shape");
    cursor->position++;
    size_t extents[KCS_NPY_MAX_DIMS] = {0};
    size_t count = 0;
    int saw_comma = 0;
    skip_space(cursor);
    while (peek(cursor) != ')') {
        if (at_end(cursor))
            return unexpected(cursor, "a shape entry or ')'");
        if (peek(cursor) == '-')
            return kcs_fail(cursor->err, KCS_ERROR, "%s: shape has a negative entry at offset %zu", cursor->name,
                            (size_t)(cursor->position - cursor->start));
        if (peek(cursor) == '+')
            cursor->position++; /* Python's literal_eval, which numpy uses, allows a unary plus */
        const unsigned char *digits = cursor->position;
        size_t value = 0;
        int overflowed = 0;
        while (!at_end(cursor) && *cursor->position >= '0' && *cursor->position <= '9') {
            size_t digit = (size_t)(*cursor->position - '0');
            if (value > (SIZE_MAX - digit) / 10)
                overflowed = 1;
            else
                value = value * 10 + digit;
            cursor->position++;
        }
        size_t digit_count = (size_t)(cursor->position - digits);
        if (digit_count > 0 && (peek(cursor) == 'L' || peek(cursor) == 'l'))
            cursor->position++; /* Python 2 numpy wrote longs as 3L */
        if (digit_count == 0 || is_identifier_char(peek(cursor)) || peek(cursor) == '.') {
            const unsigned char *entry_end = digits;
            while (entry_end < cursor->end && *entry_end != ',' && *entry_end != ')')
                entry_end++;
            char shown[256];
            quote_text(digits, (size_t)(entry_end - digits), shown, sizeof shown);
            return kcs_fail(cursor->err, KCS_ERROR, "%s: shape entry '%s' is not a non-negative integer",
                            cursor->name, shown);
        }
        if (overflowed) {
            char shown[256];
            quote_text(digits, digit_count, shown, sizeof shown);
            return kcs_fail(cursor->err, KCS_ERROR, "%s: shape entry %s overflows size_t", cursor->name, shown);
        }
        if (count < KCS_NPY_MAX_DIMS)
            extents[count] = value;
        count++; /* keep counting past the limit so the message can say how many */
        skip_space(cursor);
        saw_comma = 0;
        if (peek(cursor) == ',') {
            saw_comma = 1;
            cursor->position++;
            skip_space(cursor);
        } else if (peek(cursor) != ')') {
            return unexpected(cursor, "',' or ')' in shape");
        }
    }
    cursor->position++;
    if (count == 1 && !saw_comma) {
        char shown[256];
        quote_text(opening, (size_t)(cursor->position - opening), shown, sizeof shown);
        return kcs_fail(cursor->err, KCS_ERROR,
                        "%s: shape %s is not a tuple but a parenthesized integer (a one-tuple is written (3,))",
                        cursor->name, shown);
    }
    if (count > KCS_NPY_MAX_DIMS)
        return kcs_fail(cursor->err, KCS_ERROR, "%s: shape has %zu dimensions; kcs supports at most %d",
                        cursor->name, count, KCS_NPY_MAX_DIMS);
    array->ndim = (int)count;
    memcpy(array->shape, extents, sizeof extents);
    return KCS_OK;
}

/* The three keys, in any order, each exactly once. */
static kcs_status parse_header(header_cursor *cursor, kcs_npy_array *array)
{
    int have_descr = 0, have_fortran_order = 0, have_shape = 0;
    skip_space(cursor);
    if (peek(cursor) != '{') {
        if (at_end(cursor))
            return kcs_fail(cursor->err, KCS_ERROR, "%s: header is empty, not a Python dict literal", cursor->name);
        char shown[256];
        quote_text(cursor->position, (size_t)(cursor->end - cursor->position), shown, sizeof shown);
        return kcs_fail(cursor->err, KCS_ERROR, "%s: header is not a Python dict literal (it starts with '%s')",
                        cursor->name, shown);
    }
    cursor->position++;
    for (;;) {
        skip_space(cursor);
        if (peek(cursor) == '}') {
            cursor->position++;
            break;
        }
        const unsigned char *key_start = cursor->position;
        const unsigned char *key;
        size_t key_length;
        kcs_status status = parse_string(cursor, "a quoted dict key or '}'", &key, &key_length);
        if (status != KCS_OK)
            return status;
        skip_space(cursor);
        if (peek(cursor) != ':')
            return unexpected(cursor, "':' after a dict key");
        cursor->position++;
        skip_space(cursor);
        int *seen;
        if (text_equals(key, key_length, "descr")) {
            seen = &have_descr;
        } else if (text_equals(key, key_length, "fortran_order")) {
            seen = &have_fortran_order;
        } else if (text_equals(key, key_length, "shape")) {
            seen = &have_shape;
        } else {
            char shown[256];
            quote_text(key, key_length, shown, sizeof shown);
            return kcs_fail(cursor->err, KCS_ERROR,
                            "%s: header has unknown key '%s' (expected only 'descr', 'fortran_order', 'shape')",
                            cursor->name, shown);
        }
        if (*seen) {
            char shown[256];
            quote_text(key, key_length, shown, sizeof shown);
            return kcs_fail(cursor->err, KCS_ERROR, "%s: header has duplicate key '%s' (again at offset %zu)",
                            cursor->name, shown, (size_t)(key_start - cursor->start));
        }
        *seen = 1;
        if (seen == &have_descr)
            status = parse_descr(cursor, &array->dtype);
        else if (seen == &have_fortran_order)
            status = parse_fortran_order(cursor);
        else
            status = parse_shape(cursor, array);
        if (status != KCS_OK)
            return status;
        skip_space(cursor);
        if (peek(cursor) == ',') {
            cursor->position++;
        } else if (peek(cursor) != '}') {
            return unexpected(cursor, "',' or '}' after a dict value");
        }
    }
    skip_space(cursor);
    if (!at_end(cursor))
        return unexpected(cursor, "only padding after the header dict");
    if (!have_descr || !have_fortran_order || !have_shape)
        return kcs_fail(cursor->err, KCS_ERROR, "%s: header is missing key%s%s%s%s", cursor->name,
                        (!have_descr + !have_fortran_order + !have_shape) > 1 ? "s" : "",
                        have_descr ? "" : " 'descr'", have_fortran_order ? "" : " 'fortran_order'",
                        have_shape ? "" : " 'shape'");
    return KCS_OK;
}

size_t kcs_npy_element_count(const kcs_npy_array *array)
{
    if (array->ndim < 0 || array->ndim > KCS_NPY_MAX_DIMS)
        return 0;
    size_t count = 1;
    for (int i = 0; i < array->ndim; i++)
        count *= array->shape[i];
    return count;
}

/* Element count and byte size of a shape, or 0 if either overflows size_t. */
static int checked_size(int ndim, const size_t *shape, size_t element_size, size_t *count, size_t *bytes)
{
    size_t product = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0)
            product = 0;
    for (int i = 0; i < ndim && product != 0; i++) {
        if (product > SIZE_MAX / shape[i])
            return 0;
        product *= shape[i];
    }
    *count = product;
    if (element_size != 0 && product > SIZE_MAX / element_size)
        return 0;
    *bytes = product * element_size;
    return 1;
}

/* Parses the preamble and header of a .npy file whose first length bytes
 * are bytes: fills parsed (no data yet), where its data starts, and how many
 * bytes of data its shape needs. */
static kcs_status parse_preamble(const unsigned char *bytes, size_t length, const char *name, kcs_npy_array *parsed_out,
                                 size_t *data_offset, size_t *needed_out, size_t *count_out, kcs_error *err)
{
    if (bytes == NULL && length > 0)
        return kcs_fail(err, KCS_ERROR, "%s: no bytes given", name);
    if (length < sizeof npy_magic || memcmp(bytes, npy_magic, sizeof npy_magic) != 0)
        return kcs_fail(err, KCS_ERROR, "%s: bad magic: not a .npy file (it should start with \\x93NUMPY)%s", name,
                        length == 0 ? "; the file is empty" : "");
    if (length < sizeof npy_magic + 2)
        return kcs_fail(err, KCS_ERROR, "%s: truncated: the file ends inside the format version", name);
    unsigned major = bytes[6], minor = bytes[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        return kcs_fail(err, KCS_ERROR, "%s: unsupported .npy format version %u.%u (kcs reads 1.0, 2.0 and 3.0)",
                        name, major, minor);
    /* Version 1.0 has a 16-bit header length, 2.0 and 3.0 a 32-bit one;
     * 3.0 only allows UTF-8 in the header, which matters to no key kcs reads. */
    size_t length_field_size = major == 1 ? 2 : 4;
    size_t preamble = sizeof npy_magic + 2 + length_field_size;
    if (length < preamble)
        return kcs_fail(err, KCS_ERROR, "%s: truncated: the file ends inside the header length", name);
    size_t header_length = 0;
    for (size_t i = 0; i < length_field_size; i++)
        header_length |= (size_t)bytes[8 + i] << (8 * i);
    if (header_length > length - preamble)
        return kcs_fail(err, KCS_ERROR,
                        "%s: header length %zu runs past the end of the file (%zu bytes follow the preamble)", name,
                        header_length, length - preamble);

    kcs_npy_array parsed;
    memset(&parsed, 0, sizeof parsed);
    header_cursor cursor = {bytes + preamble, bytes + preamble, bytes + preamble + header_length, name, err};
    kcs_status status = parse_header(&cursor, &parsed);
    if (status != KCS_OK)
        return status;

    size_t element_size = kcs_dtype_size(parsed.dtype);
    if (!checked_size(parsed.ndim, parsed.shape, element_size, count_out, needed_out))
        return kcs_fail(err, KCS_ERROR, "%s: shape is too large: its element count or byte size overflows size_t",
                        name);
    *data_offset = preamble + header_length;
    *parsed_out = parsed;
    return KCS_OK;
}

kcs_status kcs_npy_parse(const unsigned char *bytes, size_t length, const char *name, kcs_npy_array *array,
                         kcs_error *err)
{
    memset(array, 0, sizeof *array);
    kcs_npy_array parsed;
    size_t data_offset, needed, count;
    kcs_status status = parse_preamble(bytes, length, name, &parsed, &data_offset, &needed, &count, err);
    if (status != KCS_OK)
        return status;
    size_t element_size = kcs_dtype_size(parsed.dtype);
    size_t available = length - data_offset;
    if (available < needed)
        return kcs_fail(err, KCS_ERROR, "%s: truncated: expected %zu bytes of data, found %zu", name, needed,
                        available);
    if (available > needed)
        return kcs_fail(err, KCS_ERROR, "%s: %zu trailing bytes after the %zu bytes of data the shape needs", name,
                        available - needed, needed);

    /* malloc(0) may return NULL; a successful read always has data. */
    parsed.data = malloc(needed > 0 ? needed : 1);
    if (parsed.data == NULL)
        return kcs_fail(err, KCS_ERROR, "%s: out of memory allocating %zu bytes of data", name, needed);
    if (needed > 0)
        memcpy(parsed.data, bytes + data_offset, needed);
    if (!host_is_little_endian())
        swap_elements(parsed.data, count, element_size);
    *array = parsed;
    return KCS_OK;
}

/* Reads bytes [0, count) of an open file into buffer. */
static kcs_status read_exactly(int fd, const char *path, unsigned char *buffer, size_t count, kcs_error *err)
{
    size_t used = 0;
    while (used < count) {
        ssize_t got = read(fd, buffer + used, count - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return kcs_fail(err, KCS_ERROR, "%s: read error: %s", path, strerror(errno));
        if (got == 0)
            return kcs_fail(err, KCS_ERROR, "%s: the file shrank while it was read", path);
        used += (size_t)got;
    }
    return KCS_OK;
}

/* The most header bytes read before the header is parsed: numpy's headers
 * are a few hundred bytes; version 2.0 allows up to 4 GiB, which no array
 * kcs reads needs. */
enum { npy_header_limit = 1 << 20 };

/* Reads a regular file whose size matches what its header promises: the
 * header first, then, only if the file is exactly as long as the shape
 * says, the rest. FIFOs, devices (/dev/zero) and directories are refused
 * before anything is read, so nothing can hang or grow without bound. */
kcs_status kcs_npy_read(const char *path, kcs_npy_array *array, kcs_error *err)
{
    memset(array, 0, sizeof *array);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return kcs_fail(err, KCS_ERROR, "%s: cannot open: %s", path, strerror(errno));
    struct stat info;
    kcs_status status = KCS_OK;
    unsigned char *contents = NULL;
    if (fstat(fd, &info) != 0)
        status = kcs_fail(err, KCS_ERROR, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(info.st_mode))
        status = kcs_fail(err, KCS_ERROR, "%s: not a regular file (a .npy input must be one)", path);
    size_t size = status == KCS_OK ? (size_t)info.st_size : 0;
    size_t prefix = size < npy_header_limit ? size : npy_header_limit;
    if (status == KCS_OK && !(contents = malloc(prefix ? prefix : 1)))
        status = kcs_fail(err, KCS_ERROR, "%s: out of memory reading the header", path);
    if (status == KCS_OK)
        status = read_exactly(fd, path, contents, prefix, err);
    kcs_npy_array header;
    size_t data_offset = 0, needed = 0, count = 0;
    if (status == KCS_OK)
        status = parse_preamble(contents, prefix, path, &header, &data_offset, &needed, &count, err);
    size_t available = status == KCS_OK && data_offset <= size ? size - data_offset : 0;
    if (status == KCS_OK && available < needed)
        status = kcs_fail(err, KCS_ERROR, "%s: truncated: expected %zu bytes of data, found %zu", path, needed,
                          available);
    else if (status == KCS_OK && available > needed)
        status = kcs_fail(err, KCS_ERROR, "%s: %zu trailing bytes after the %zu bytes of data the shape needs", path,
                          available - needed, needed);
    if (status == KCS_OK && size > prefix) {
        unsigned char *whole = realloc(contents, size);
        if (!whole)
            status = kcs_fail(err, KCS_ERROR, "%s: out of memory allocating %zu bytes", path, size);
        else
            contents = whole;
        if (status == KCS_OK)
            status = read_exactly(fd, path, contents + prefix, size - prefix, err);
    }
    close(fd);
    if (status == KCS_OK)
        status = kcs_npy_parse(contents, size, path, array, err);
    free(contents);
    return status;
}

static const char *descr_of(kcs_dtype dtype)
{
    for (size_t i = 0; i < sizeof npy_descrs / sizeof npy_descrs[0]; i++)
        if (npy_descrs[i].dtype == dtype)
            return npy_descrs[i].descr;
    return NULL;
}

/* Writes data in little-endian order, through a bounded scratch buffer on a
 * big-endian host so the caller's array is never modified. */
static int write_data(FILE *file, const void *data, size_t count, size_t element_size)
{
    if (count == 0)
        return 1;
    if (host_is_little_endian())
        return fwrite(data, element_size, count, file) == count;
    unsigned char scratch[4096];
    size_t per_chunk = sizeof scratch / element_size;
    const unsigned char *source = data;
    for (size_t done = 0; done < count;) {
        size_t chunk = count - done < per_chunk ? count - done : per_chunk;
        memcpy(scratch, source + done * element_size, chunk * element_size);
        swap_elements(scratch, chunk, element_size);
        if (fwrite(scratch, element_size, chunk, file) != chunk)
            return 0;
        done += chunk;
    }
    return 1;
}

kcs_status kcs_npy_write(const char *path, kcs_dtype dtype, int ndim, const size_t *shape, const void *data,
                         kcs_error *err)
{
    const char *descr = descr_of(dtype);
    if (descr == NULL)
        return kcs_fail(err, KCS_ERROR, "%s: cannot write dtype %s to .npy", path, kcs_dtype_name(dtype));
    if (ndim < 0 || ndim > KCS_NPY_MAX_DIMS)
        return kcs_fail(err, KCS_ERROR, "%s: cannot write %d dimensions; kcs supports 0 to %d", path, ndim,
                        KCS_NPY_MAX_DIMS);
    if (ndim > 0 && shape == NULL)
        return kcs_fail(err, KCS_ERROR, "%s: no shape given for %d dimensions", path, ndim);
    size_t element_size = kcs_dtype_size(dtype);
    size_t count, bytes;
    if (!checked_size(ndim, shape, element_size, &count, &bytes))
        return kcs_fail(err, KCS_ERROR, "%s: shape is too large: its byte size overflows size_t", path);
    if (data == NULL && bytes > 0)
        return kcs_fail(err, KCS_ERROR, "%s: no data given for %zu bytes", path, bytes);

    /* The dict exactly as numpy writes it, so the files diff cleanly against
     * ones saved by np.save. At most 4 extents of 20 digits fit easily. */
    char dict[256];
    int used = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++)
        used += snprintf(dict + used, sizeof dict - (size_t)used, "%s%zu", i > 0 ? ", " : "", shape[i]);
    used += snprintf(dict + used, sizeof dict - (size_t)used, "%s), }", ndim == 1 ? "," : "");
    size_t dict_length = (size_t)used;

    /* Pad with spaces and end with '\n' so the data starts on a multiple of
     * NPY_ALIGNMENT; version 2.0 only when the header outgrows 16 bits. */
    unsigned major = 1;
    size_t preamble = sizeof npy_magic + 2 + 2;
    size_t total = (preamble + dict_length + 1 + NPY_ALIGNMENT - 1) / NPY_ALIGNMENT * NPY_ALIGNMENT;
    if (total - preamble > 0xffff) {
        major = 2;
        preamble = sizeof npy_magic + 2 + 4;
        total = (preamble + dict_length + 1 + NPY_ALIGNMENT - 1) / NPY_ALIGNMENT * NPY_ALIGNMENT;
    }
    size_t header_length = total - preamble;

    unsigned char head[sizeof npy_magic + 2 + 4];
    memcpy(head, npy_magic, sizeof npy_magic);
    head[6] = (unsigned char)major;
    head[7] = 0;
    for (size_t i = 0; i < preamble - 8; i++)
        head[8 + i] = (unsigned char)(header_length >> (8 * i));

    FILE *file = fopen(path, "wb");
    if (file == NULL)
        return kcs_fail(err, KCS_ERROR, "%s: cannot create: %s", path, strerror(errno));
    int ok = fwrite(head, 1, preamble, file) == preamble && fwrite(dict, 1, dict_length, file) == dict_length;
    for (size_t i = dict_length; ok && i + 1 < header_length; i++)
        ok = fputc(' ', file) != EOF;
    ok = ok && fputc('\n', file) != EOF;
    ok = ok && write_data(file, data, count, element_size);
    int saved_errno = errno;
    if (fclose(file) != 0 && ok) {
        ok = 0;
        saved_errno = errno;
    }
    if (!ok) {
        remove(path); /* a half-written file would only fail later, further from the cause */
        return kcs_fail(err, KCS_ERROR, "%s: write error: %s", path, strerror(saved_errno));
    }
    return KCS_OK;
}

void kcs_npy_free(kcs_npy_array *array)
{
    if (array == NULL)
        return;
    free(array->data);
    memset(array, 0, sizeof *array);
}
