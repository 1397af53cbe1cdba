#!/usr/bin/env bash
# Build the Python, JavaScript and C example tools into components:
#   $TOOLHOST_GUESTS_DIR (default target/guests)/{dataquery,outline,wordcount}.wasm
# so that `toolhost --tools target/guests list` shows them, and the test components of the
# other two kinds of tool beside them:
#   fn-python.wasm, fn-js.wasm   function components: plain functions exported by their WIT
#                                world (fn/wit/text.wit), the same functions in both languages
#   cmd-c.wasm                   a command program (wasi:cli/run): `wc` in C (cmd/wc.c)
# Installs missing toolchains first (./install.sh). Each component is rebuilt only when its
# inputs change: its sources, the WIT, this script and the pinned tool versions are hashed into
# a key kept beside the build.
#
#   examples/guests/build.sh            # all six
#   examples/guests/build.sh python c   # some of them (python, js, c, fn-python, fn-js, cmd-c)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${TOOLHOST_GUESTS_DIR:-$root/target/guests}"
work="$out/build"
mkdir -p "$out" "$work"

"$here/install.sh"

langs=("$@")
[ ${#langs[@]} -gt 0 ] || langs=(python js c fn-python fn-js cmd-c)

# key NAME FILES... : prints "fresh" if the inputs' hash matches the last build of NAME.
inputs_key() {
    cat "$@" "$0" "$here/install.sh" "$root"/wit/tool@0.1.0/*.wit | sha256sum | cut -d' ' -f1
}
fresh() { # NAME KEY
    [ -f "$out/$1.wasm" ] && [ -f "$work/$1.key" ] && [ "$(cat "$work/$1.key")" = "$2" ]
}
done_() { # NAME KEY SECONDS
    echo "$2" >"$work/$1.key"
    echo "built $out/$1.wasm ($(stat -c %s "$out/$1.wasm") bytes) in $3 s"
}

build_python() {
    local name=dataquery key
    key="$(inputs_key "$here/python/app.py" "$here/python/requirements.txt")"
    if fresh $name "$key"; then echo "up to date: $out/$name.wasm"; return; fi
    local start=$SECONDS
    # Built from a copy so that no __pycache__ lands in the source tree.
    rm -rf "$work/python" && mkdir -p "$work/python" && cp "$here/python/app.py" "$work/python/"
    (cd "$work/python" && PYTHONDONTWRITEBYTECODE=1 "$out/venv/bin/componentize-py" \
        -d "$root/wit/tool@0.1.0" -w plugin componentize app -o "$out/$name.wasm.tmp" >/dev/null)
    mv "$out/$name.wasm.tmp" "$out/$name.wasm"
    done_ $name "$key" $((SECONDS - start))
}

build_js() {
    local name=outline key
    key="$(inputs_key "$here/js/outline.js" "$here/js/build.mjs" "$here/js/package-lock.json" "$here"/js/wit/world.wit "$here"/js/wit/deps/*/*.wit)"
    if fresh $name "$key"; then echo "up to date: $out/$name.wasm"; return; fi
    local start=$SECONDS
    rm -rf "$work/js" && mkdir -p "$work/js/wit/deps/tool"
    cp -r "$here/js/wit/." "$work/js/wit/"
    cp "$root"/wit/tool@0.1.0/*.wit "$work/js/wit/deps/tool/"
    # build.mjs resolves componentize-js from its own directory: run it from beside node_modules.
    cp "$here/js/build.mjs" "$out/node/build.mjs"
    node "$out/node/build.mjs" "$here/js/outline.js" "$work/js/wit" outline "$out/$name.wasm.tmp"
    mv "$out/$name.wasm.tmp" "$out/$name.wasm"
    done_ $name "$key" $((SECONDS - start))
}

build_c() {
    local name=wordcount key
    key="$(inputs_key "$here/c/wordcount.c" "$here/c/json.h" "$here/componentize/src/main.rs" "$root/Cargo.lock" \
        <(clang --version))"
    if fresh $name "$key"; then echo "up to date: $out/$name.wasm"; return; fi
    local start=$SECONDS
    local helper=(cargo run --quiet --manifest-path "$root/Cargo.toml" -p toolhost-guest-build --)
    rm -rf "$work/c" && mkdir -p "$work/c"
    "${helper[@]}" c-bindings "$root/wit/tool@0.1.0" plugin "$work/c"
    clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Wextra -Wno-unused-parameter -Werror \
        -Wl,--strip-all -I"$work/c" \
        "$here/c/wordcount.c" "$work/c/plugin.c" "$work/c/plugin_component_type.o" -o "$work/c/$name.core.wasm"
    "${helper[@]}" component "$work/c/$name.core.wasm" "$out/$name.wasm.tmp"
    mv "$out/$name.wasm.tmp" "$out/$name.wasm"
    done_ $name "$key" $((SECONDS - start))
}

# The function components: fn/wit/text.wit's world `text-tools`, in Python and in JavaScript.
build_fn_python() {
    local name=fn-python key
    key="$(inputs_key "$here/fn/text_tools.py" "$here/fn/wit/text.wit" "$here/python/requirements.txt")"
    if fresh $name "$key"; then echo "up to date: $out/$name.wasm"; return; fi
    local start=$SECONDS
    # Only text.wit: js.wit's world needs the WASI packages, which componentize-py brings itself.
    rm -rf "$work/fn-python" && mkdir -p "$work/fn-python/wit"
    cp "$here/fn/text_tools.py" "$work/fn-python/"
    cp "$here/fn/wit/text.wit" "$work/fn-python/wit/"
    (cd "$work/fn-python" && PYTHONDONTWRITEBYTECODE=1 "$out/venv/bin/componentize-py" \
        -d wit -w text-tools componentize text_tools -o "$out/$name.wasm.tmp" >/dev/null)
    mv "$out/$name.wasm.tmp" "$out/$name.wasm"
    done_ $name "$key" $((SECONDS - start))
}

build_fn_js() {
    local name=fn-js key
    key="$(inputs_key "$here/fn/text.js" "$here"/fn/wit/*.wit "$here/js/build.mjs" "$here/js/package-lock.json" \
        "$here"/js/wit/deps/*/*.wit)"
    if fresh $name "$key"; then echo "up to date: $out/$name.wasm"; return; fi
    local start=$SECONDS
    # The world `text-tools-js` (fn/wit/js.wit) adds the WASI filesystem imports, whose WIT
    # (WASI 0.2.12, as for outline.js) comes from js/wit/deps.
    rm -rf "$work/fn-js" && mkdir -p "$work/fn-js/wit/deps"
    cp "$here"/fn/wit/*.wit "$work/fn-js/wit/"
    cp -r "$here/js/wit/deps/." "$work/fn-js/wit/deps/"
    cp "$here/js/build.mjs" "$out/node/build.mjs"
    node "$out/node/build.mjs" "$here/fn/text.js" "$work/fn-js/wit" text-tools-js "$out/$name.wasm.tmp"
    mv "$out/$name.wasm.tmp" "$out/$name.wasm"
    done_ $name "$key" $((SECONDS - start))
}

# The command program: a plain C `main`, linked as a wasip1 command module and made a
# component exporting wasi:cli/run with the preview1 command adapter.
build_cmd_c() {
    local name=cmd-c key
    key="$(inputs_key "$here/cmd/wc.c" "$here/componentize/src/main.rs" "$root/Cargo.lock" <(clang --version))"
    if fresh $name "$key"; then echo "up to date: $out/$name.wasm"; return; fi
    local start=$SECONDS
    local helper=(cargo run --quiet --manifest-path "$root/Cargo.toml" -p toolhost-guest-build --)
    rm -rf "$work/cmd-c" && mkdir -p "$work/cmd-c"
    clang --target=wasm32-wasi -O2 -Wall -Wextra -Werror -Wl,--strip-all \
        "$here/cmd/wc.c" -o "$work/cmd-c/$name.core.wasm"
    "${helper[@]}" command "$work/cmd-c/$name.core.wasm" "$out/$name.wasm.tmp"
    mv "$out/$name.wasm.tmp" "$out/$name.wasm"
    done_ $name "$key" $((SECONDS - start))
}

for lang in "${langs[@]}"; do
    case "$lang" in
    python) build_python ;;
    js) build_js ;;
    c) build_c ;;
    fn-python) build_fn_python ;;
    fn-js) build_fn_js ;;
    cmd-c) build_cmd_c ;;
    *) echo "unknown component '$lang' (python, js, c, fn-python, fn-js, cmd-c)" >&2; exit 2 ;;
    esac
done
