// A tiny JSON reader, enough for a tool's input object: strings (with every escape, \uXXXX
// and surrogate pairs included), numbers, and skipping any other value. Header-only.
// On a syntax error the functions set *err to a static message and return 0/NULL.
#ifndef TOOLHOST_JSON_H
#define TOOLHOST_JSON_H

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t len, pos;
} json_t;

#define JSON_MAX_DEPTH 128

static void json_ws(json_t *j) {
    while (j->pos < j->len && (j->s[j->pos] == ' ' || j->s[j->pos] == '\t' || j->s[j->pos] == '\n' || j->s[j->pos] == '\r'))
        j->pos++;
}

static int json_peek(json_t *j) {
    json_ws(j);
    return j->pos < j->len ? (unsigned char)j->s[j->pos] : -1;
}

static int json_hex4(json_t *j, unsigned *out) {
    if (j->pos + 4 > j->len) return 0;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = j->s[j->pos++];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static size_t json_utf8(unsigned cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

// A string value, decoded and NUL-terminated (malloc'd; the caller frees it).
static char *json_string(json_t *j, const char **err) {
    if (json_peek(j) != '"') { *err = "expected a JSON string"; return NULL; }
    j->pos++;
    // Decoded text is never longer than the escaped text.
    char *out = malloc(j->len - j->pos + 1);
    if (!out) { *err = "out of memory"; return NULL; }
    size_t n = 0;
    while (j->pos < j->len) {
        char c = j->s[j->pos++];
        if (c == '"') { out[n] = 0; return out; }
        if (c != '\\') { out[n++] = c; continue; }
        if (j->pos >= j->len) break;
        char e = j->s[j->pos++];
        unsigned cp;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u':
            if (!json_hex4(j, &cp)) goto bad;
            if (cp >= 0xD800 && cp < 0xDC00 && j->pos + 6 <= j->len && j->s[j->pos] == '\\' && j->s[j->pos + 1] == 'u') {
                unsigned lo;
                j->pos += 2;
                if (!json_hex4(j, &lo) || lo < 0xDC00 || lo > 0xDFFF) goto bad;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n += json_utf8(cp, out + n);
            break;
        default: goto bad;
        }
    }
bad:
    free(out);
    *err = "malformed JSON string";
    return NULL;
}

static int json_number(json_t *j, double *out, const char **err) {
    json_ws(j);
    const char *start = j->s + j->pos;
    char *end;
    // The input is a bounded buffer, not a C string: copy the number's characters first.
    size_t k = 0;
    char tmp[64];
    while (j->pos + k < j->len && k < sizeof tmp - 1 && strchr("+-0123456789.eE", start[k])) {
        tmp[k] = start[k];
        k++;
    }
    tmp[k] = 0;
    *out = strtod(tmp, &end);
    if (k == 0 || end != tmp + k) { *err = "expected a JSON number"; return 0; }
    j->pos += k;
    return 1;
}

static int json_skip_depth(json_t *j, const char **err, int depth) {
    int c = json_peek(j);
    if (depth > JSON_MAX_DEPTH) { *err = "JSON nested too deeply"; return 0; }
    if (c == '"') { char *s = json_string(j, err); free(s); return s != NULL; }
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->pos++;
        if (json_peek(j) == close) { j->pos++; return 1; }
        for (;;) {
            if (c == '{') {
                char *k = json_string(j, err);
                if (!k) return 0;
                free(k);
                if (json_peek(j) != ':') { *err = "expected ':' in a JSON object"; return 0; }
                j->pos++;
            }
            if (!json_skip_depth(j, err, depth + 1)) return 0;
            int d = json_peek(j);
            j->pos++;
            if (d == close) return 1;
            if (d != ',') { *err = "expected ',' in a JSON value"; return 0; }
        }
    }
    static const char *words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if (j->pos + n <= j->len && memcmp(j->s + j->pos, words[i], n) == 0) { j->pos += n; return 1; }
    }
    double d;
    return json_number(j, &d, err);
}

static int json_skip(json_t *j, const char **err) { return json_skip_depth(j, err, 0); }

static int json_object_begin(json_t *j) {
    if (json_peek(j) != '{') return 0;
    j->pos++;
    return 1;
}

// The next key of an object (malloc'd), positioned on its value; NULL at the end or on error.
static char *json_object_next_key(json_t *j, const char **err) {
    int c = json_peek(j);
    if (c == '}') { j->pos++; return NULL; }
    if (c == ',') j->pos++;
    char *key = json_string(j, err);
    if (!key) return NULL;
    if (json_peek(j) != ':') { free(key); *err = "expected ':' in a JSON object"; return NULL; }
    j->pos++;
    return key;
}

#endif
