// wc: a command program (wasi:cli/run) in C, for toolhost's command tools. Counts the lines,
// words and bytes of standard input, or of each FILE given as an argument:
//
//   wc              -> "LINES WORDS BYTES\n" for stdin
//   wc FILE...      -> "LINES WORDS BYTES FILE\n" per file, then "LINES WORDS BYTES total\n"
//                      when there is more than one file
//
// A line is a newline character; a word is a maximal run of bytes that are not ASCII white
// space (as POSIX wc in the C locale). A file that cannot be read: "wc: FILE: REASON" on
// stderr, the other files still counted, exit code 1. An option (an argument starting with
// '-', other than "-" itself, which means stdin): the usage on stderr, exit code 2.
//
// A plain C program with `main`: clang builds a wasip1 command module, and the preview1
// command adapter turns it into a component exporting wasi:cli/run (see ../build.sh).

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct counts {
    unsigned long long lines, words, bytes;
};

static int is_space(int c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// Adds what `f` holds to `c`; returns 0, or the errno of a failed read.
static int count(FILE *f, struct counts *c) {
    unsigned char buf[64 * 1024];
    int in_word = 0;
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        c->bytes += n;
        for (size_t i = 0; i < n; i++) {
            if (buf[i] == '\n') c->lines++;
            if (is_space(buf[i])) {
                in_word = 0;
            } else if (!in_word) {
                in_word = 1;
                c->words++;
            }
        }
    }
    return ferror(f) ? (errno ? errno : EIO) : 0;
}

static void print(const struct counts *c, const char *name) {
    if (name)
        printf("%llu %llu %llu %s\n", c->lines, c->words, c->bytes, name);
    else
        printf("%llu %llu %llu\n", c->lines, c->words, c->bytes);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "wc: unknown option %s\nusage: wc [FILE...]\n", argv[i]);
            return 2;
        }
    }
    if (argc < 2) {
        struct counts c = {0, 0, 0};
        int err = count(stdin, &c);
        if (err) {
            fprintf(stderr, "wc: stdin: %s\n", strerror(err));
            return 1;
        }
        print(&c, NULL);
        return 0;
    }
    struct counts total = {0, 0, 0};
    int status = 0;
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i];
        int is_stdin = strcmp(name, "-") == 0;
        FILE *f = is_stdin ? stdin : fopen(name, "rb");
        if (!f) {
            fprintf(stderr, "wc: %s: %s\n", name, strerror(errno));
            status = 1;
            continue;
        }
        struct counts c = {0, 0, 0};
        int err = count(f, &c);
        if (!is_stdin) fclose(f);
        if (err) {
            fprintf(stderr, "wc: %s: %s\n", name, strerror(err));
            status = 1;
            continue;
        }
        print(&c, name);
        total.lines += c.lines;
        total.words += c.words;
        total.bytes += c.bytes;
    }
    if (argc > 2) print(&total, "total");
    return status;
}
