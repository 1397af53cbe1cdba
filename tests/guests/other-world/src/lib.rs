//! A component of another world (`test:other/other`): valid wasm, but not a toolhost tool.

wit_bindgen::generate!({
    inline: "package test:other; world other { export run: func() -> string; }",
});

struct Other;

impl Guest for Other {
    fn run() -> String {
        "not a tool".into()
    }
}

export!(Other);
