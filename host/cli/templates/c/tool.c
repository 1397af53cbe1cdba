// {{name}}: a toolhost tool. It counts the lines and bytes of a file in the workspace; change
// the schema, validate and call to make it yours. Build with `./build.sh`, try it with
// `toolhost --tools dist call {{name}} '{"path":"README.md"}'`.
//
// plugin.h/plugin.c are generated from ./wit by `toolhost-guest-build c-bindings`. Ownership:
// every export's `input` is ours to free; every string or list returned is freed by the
// generated post-return code, so it must be malloc'd (plugin_string_dup, never a literal).

#include "plugin.h"
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAME "{{name}}"

static const char *SCHEMA =
    "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
    "\"properties\":{\"path\":{\"type\":\"string\",\"description\":\"A file, relative to the workspace or absolute.\"}},"
    "\"required\":[\"path\"],\"additionalProperties\":false}";

// The input's "path" (malloc'd), or NULL.
static char *path_of(plugin_string_t *input) {
    json_t j = {(const char *)input->ptr, input->len, 0};
    const char *err = NULL;
    char *key, *path = NULL;
    if (!json_object_begin(&j)) return NULL;
    while ((key = json_object_next_key(&j, &err))) {
        if (strcmp(key, "path") == 0) {
            free(path);
            path = json_string(&j, &err);
        } else {
            json_skip(&j, &err);
        }
        free(key);
        if (err) break;
    }
    return path;
}

void exports_toolhost_tool_tool_schema(exports_toolhost_tool_tool_tool_schema_t *ret) {
    plugin_string_dup(&ret->name, NAME);
    plugin_string_dup(&ret->description, "Counts the lines and bytes of a file in the workspace.");
    plugin_string_dup(&ret->input_schema, SCHEMA);
    ret->permission_subject.is_some = true; // what permission rules match
    plugin_string_dup(&ret->permission_subject.val, "/path");
    ret->read_only = true; // never writes: may run in parallel
    ret->capabilities.len = 1; // the most it may be granted
    ret->capabilities.ptr = malloc(sizeof(toolhost_tool_types_capability_t));
    ret->capabilities.ptr[0].tag = TOOLHOST_TOOL_TYPES_CAPABILITY_FS_READ;
    plugin_string_dup(&ret->capabilities.ptr[0].val.fs_read, ".");
}

bool exports_toolhost_tool_tool_is_concurrency_safe(plugin_string_t *input) {
    plugin_string_free(input);
    return true;
}

// Runs with no capabilities at all: decide from the input alone.
bool exports_toolhost_tool_tool_validate(plugin_string_t *input, plugin_string_t *err) {
    char *path = path_of(input);
    plugin_string_free(input);
    bool ok = path && path[0];
    free(path);
    if (!ok) plugin_string_dup(err, NAME ": `path` is empty; give a file such as \"README.md\"");
    return ok;
}

bool exports_toolhost_tool_tool_call(plugin_string_t *input, exports_toolhost_tool_tool_tool_output_t *ret,
                                     exports_toolhost_tool_tool_tool_error_t *err) {
    char *path = path_of(input);
    plugin_string_free(input);
    // Granted directories are preopened at their absolute paths only: change into the
    // workspace so that relative paths resolve against it.
    plugin_string_t key, ws;
    plugin_string_set(&key, "toolhost.workspace");
    if (toolhost_tool_host_context_get(&key, &ws)) {
        json_t j = {(const char *)ws.ptr, ws.len, 0};
        const char *e = NULL;
        char *dir = json_string(&j, &e);
        if (dir && chdir(dir) != 0) { /* not granted: relative paths stay unreachable */ }
        free(dir);
        plugin_string_free(&ws);
    }
    char msg[512];
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        snprintf(msg, sizeof msg, "%s: %s", path ? path : "(no path)", strerror(errno));
        err->tag = errno == ENOENT ? TOOLHOST_TOOL_TYPES_TOOL_ERROR_INVALID_INPUT : TOOLHOST_TOOL_TYPES_TOOL_ERROR_DENIED;
        plugin_string_dup(&err->val.failed, msg);
        free(path);
        return false;
    }
    unsigned long long lines = 0, bytes = 0;
    int c;
    while ((c = fgetc(f)) != EOF) {
        bytes++;
        if (c == '\n') lines++;
    }
    fclose(f);
    snprintf(msg, sizeof msg, "%s: %llu lines, %llu bytes", path, lines, bytes);
    free(path);
    ret->content.len = 1;
    ret->content.ptr = malloc(sizeof(toolhost_tool_types_content_block_t));
    ret->content.ptr[0].tag = TOOLHOST_TOOL_TYPES_CONTENT_BLOCK_TEXT;
    plugin_string_dup(&ret->content.ptr[0].val.text, msg);
    ret->context_updates.len = 0;
    ret->context_updates.ptr = NULL;
    return true;
}
