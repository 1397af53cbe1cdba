//! Builds the test guests in `tests/guests/` for wasm32-wasip2 and generates `guests.rs`:
//! `pub const NAME: &[u8]` per guest crate (`alloc-bomb` → `ALLOC_BOMB`) and `ALL`.

use std::path::PathBuf;

/// Every guest crate of `tests/guests/`.
const GUESTS: &[&str] = &[
    "noop",
    "spin",
    "alloc-bomb",
    "recurse",
    "panic",
    "unreachable",
    "probe",
    "other-world",
    "bad-schema",
    "stdout-flood",
    "sleep",
    "progress",
    "ctx",
    "burn",
    "net",
    "hostile",
    "liar",
    "load-spin",
    "wit-functions",
    "wit-command",
    "wit-resource",
    "wit-config",
    "flaky-safe",
    "trap-validate",
    "bad-example",
    "deep-input",
    "ask-flood",
    // The tools the MCP conformance suite's server scenarios call (tests/all/conformance.rs).
    "conf-text",
    "conf-image",
    "conf-error",
    "conf-progress",
    "conf-schema",
    "conf-logging",
    "conf-elicit",
    "conf-elicit-defaults",
    "conf-elicit-enums",
];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let guests = manifest.join("guests");
    // The guests are built against the SDK and the WIT; a change there rebuilds them.
    println!("cargo:rerun-if-changed={}", manifest.join("../wit").display());
    println!("cargo:rerun-if-changed={}", manifest.join("../plugins/sdk").display());
    let built = toolhost_wasm_build::build_workspace(&guests, GUESTS);

    let mut code = String::new();
    let mut all =
        String::from("/// Every guest: (crate name, component bytes).\npub const ALL: &[(&str, &[u8])] = &[\n");
    for krate in GUESTS {
        let stem = krate.replace('-', "_");
        let (_, path) = built.iter().find(|(s, _)| *s == stem).expect("every guest was built");
        let path = path.display().to_string();
        let konst = stem.to_uppercase();
        code.push_str(&format!(
            "/// The `{krate}` guest component.\npub const {konst}: &[u8] = include_bytes!({path:?});\n"
        ));
        all.push_str(&format!("    ({krate:?}, {konst}),\n"));
    }
    all.push_str("];\n");
    code.push_str(&all);
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("guests.rs");
    std::fs::write(out, code).expect("write guests.rs");
}
