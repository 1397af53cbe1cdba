//! A function component in Wassette's style (world `test:config/config`): it reads its
//! settings through the draft `wasi:config/store`, as Wassette's examples read an API key, so
//! the host's answer to that import can be tested.

mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "config",
        generate_all,
    });

    use super::Config;
    export!(Config);
}

use bindings::wasi::config::store;

struct Config;

impl bindings::Guest for Config {
    fn get_setting(key: String) -> Result<String, String> {
        match store::get(&key) {
            Ok(Some(value)) => Ok(value),
            Ok(None) => Err(format!("{key} is not set")),
            Err(e) => Err(format!("{e:?}")),
        }
    }

    fn setting_keys() -> Result<String, String> {
        let mut keys: Vec<String> =
            store::get_all().map_err(|e| format!("{e:?}"))?.into_iter().map(|(k, _)| k).collect();
        keys.sort();
        Ok(keys.join("\n"))
    }
}
