//! A component of another version of toolhost's world (`toolhost:tool/tool@0.0.1`): valid
//! wasm with a function, but not the interface this host implements. The host must refuse it
//! as a toolhost tool of the wrong version, not take its functions for a function component.

wit_bindgen::generate!({
    inline: "package toolhost:tool@0.0.1; interface tool { run: func() -> string; } world other { export tool; }",
});

struct Other;

impl exports::toolhost::tool::tool::Guest for Other {
    fn run() -> String {
        "not a tool".into()
    }
}

export!(Other);
