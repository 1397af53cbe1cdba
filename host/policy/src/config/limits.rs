//! The limit keys of `[limits]` and `[tools.NAME]`, generated from the one table of limits
//! (`limits_table!` in `crate::limits`), so that every key is parsed, checked and merged the
//! same way in both places, and a new limit needs one line of that table and nothing here.
//!
//! `[tools.NAME]` cannot hold a [`LimitsConfig`] (serde's `flatten` does not work with
//! `deny_unknown_fields` nor with `Spanned`), so `tool_config!` writes the per-tool limits
//! into [`ToolConfig`](super::ToolConfig) as fields of its own.

use crate::Limits;
use crate::limits::{LimitValue, limits_table};
use serde::Deserialize;
use toml::Spanned;

/// The end of a `[limits]` key's doc: whether a tool may set its own.
macro_rules! scope_note {
    (global) => {
        "; only meaningful in `[limits]`"
    };
    (tool) => {
        ""
    };
}

/// Generates [`LimitsConfig`] with its checks and its merge from the table.
macro_rules! limits_config {
    ({} $( $(#[doc = $doc:literal])+ $scope:ident $name:ident: $ty:ty = $default:expr; )+) => {
        /// Limits that can be set in `[limits]` (all tools) or `[tools.NAME]` (one tool).
        #[derive(Debug, Clone, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct LimitsConfig {
            $(
                #[doc = concat!("See [`Limits::", stringify!($name), "`]", scope_note!($scope), ".")]
                pub $name: Option<Spanned<i64>>,
            )+
        }

        impl LimitsConfig {
            /// Every value set here with its key: each must be at least 1 (checked at parse).
            pub(super) fn positive_fields(&self) -> Vec<(&'static str, &Spanned<i64>)> {
                [$( (stringify!($name), &self.$name), )+]
                    .into_iter()
                    .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
                    .collect()
            }

            /// Overwrite `limits` with every value set here (values were checked positive at parse).
            pub fn apply(&self, limits: &mut Limits) {
                $(
                    if let Some(v) = &self.$name {
                        limits.$name = LimitValue::from_config(*v.get_ref() as u64);
                    }
                )+
            }
        }
    };
}

limits_table!(limits_config);

/// Called by `limits_table!(tool_config { STRUCT })`: `STRUCT` (the `[tools.NAME]` struct with
/// its other fields) followed by a field for every `tool` limit of the table, in the table's
/// order, and its `limits()`: the overrides as a [`LimitsConfig`] (with every `global` limit
/// unset, since only `[limits]` may set those).
macro_rules! tool_config {
    // Keep the `tool` limits' names, drop the `global` ones, one entry at a time.
    (@filter $head:tt [$($kept:ident)*] $(#[doc = $doc:literal])+ global $name:ident: $ty:ty = $default:expr; $($rest:tt)*) => {
        tool_config!(@filter $head [$($kept)*] $($rest)*);
    };
    (@filter $head:tt [$($kept:ident)*] $(#[doc = $doc:literal])+ tool $name:ident: $ty:ty = $default:expr; $($rest:tt)*) => {
        tool_config!(@filter $head [$($kept)* $name] $($rest)*);
    };
    (@filter [$(#[$meta:meta])* $vis:vis struct $struct:ident { $($field:tt)* }] [$($name:ident)*]) => {
        $(#[$meta])*
        $vis struct $struct {
            $($field)*
            $(
                #[doc = concat!("This tool's [`Limits::", stringify!($name), "`](crate::Limits::", stringify!($name), ") (over `[limits]`).")]
                pub $name: Option<Spanned<i64>>,
            )*
        }

        impl $struct {
            /// This tool's limit overrides.
            pub fn limits(&self) -> LimitsConfig {
                LimitsConfig { $( $name: self.$name.clone(), )* ..LimitsConfig::default() }
            }
        }
    };
    ({ $(#[$meta:meta])* $vis:vis struct $struct:ident { $($field:tt)* } } $($table:tt)+) => {
        tool_config!(@filter [$(#[$meta])* $vis struct $struct { $($field)* }] [] $($table)+);
    };
}
pub(super) use tool_config;

#[cfg(test)]
mod tests {
    use crate::{Config, ConfigError, Limits};
    use std::path::Path;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/etc/toolhost.toml"))
    }

    /// The keys a section accepts, in serde's order, as its "unknown field" error lists them:
    /// what the parser really takes, not what the table says it should.
    fn accepted(section: &str) -> Vec<String> {
        let e = parse(&format!("{section}\nno_such_key = 1\n")).unwrap_err();
        let (_, list) = e.message.split_once("expected one of ").unwrap_or_else(|| panic!("{e}"));
        list.split(", ").map(|k| k.trim_matches('`').to_string()).collect()
    }

    /// A limit's value by its key, through `Limits`' serialized form (so that this test needs
    /// no list of fields of its own); `None` for an unset optional limit.
    fn value(limits: &Limits, key: &str) -> Option<i64> {
        toml::Table::try_from(limits).unwrap().get(key).and_then(toml::Value::as_integer)
    }

    #[test]
    fn every_limit_is_read_in_limits_and_each_per_tool_one_in_tools_too() {
        let keys: Vec<&str> = Limits::KEYS.iter().map(|k| k.name).collect();
        assert_eq!(accepted("[limits]"), keys, "`[limits]` takes exactly the table's keys, in its order");
        let own = [
            "path",
            "sha256",
            "source",
            "version",
            "grant",
            "allow_private_network",
            "function",
            "concurrency_safe",
            "read_only",
            "description",
            "input_schema",
        ];
        let per_tool = Limits::KEYS.iter().filter(|k| k.per_tool).map(|k| k.name);
        assert_eq!(
            accepted("[tools.X]"),
            own.into_iter().chain(per_tool).collect::<Vec<_>>(),
            "`[tools.NAME]` takes its own keys, then exactly the table's per-tool ones"
        );

        for key in Limits::KEYS {
            let name = key.name;
            assert!(key.doc().contains("Default"), "{name}: the doc gives the default: {:?}", key.doc());
            assert_ne!(value(&Limits::default(), name), Some(7), "{name}: 7 must not be its default");
            assert_ne!(value(&Limits::default(), name), Some(9), "{name}: 9 must not be its default");

            let c = parse(&format!("[limits]\n{name} = 7\n")).unwrap();
            assert_eq!(value(&c.global_limits(), name), Some(7), "[limits] {name}");
            assert_eq!(value(&c.limits_for("X"), name), Some(7), "[limits] {name}, seen by a tool");

            let both = format!("[limits]\n{name} = 7\n\n[tools.X]\n{name} = 9\n");
            if key.per_tool {
                let c = parse(&both).unwrap();
                assert_eq!(value(&c.limits_for("X"), name), Some(9), "[tools.X] {name}");
                assert_eq!(value(&c.limits_for("Y"), name), Some(7), "[tools.X] {name}, seen by another tool");
                assert_eq!(value(&c.global_limits(), name), Some(7), "[tools.X] {name}, seen globally");
                let e = parse(&format!("[tools.X]\n{name} = 0\n")).unwrap_err();
                assert_eq!((e.line, e.column), (2, name.len() + 4), "{e}");
                assert_eq!(e.message, format!("tools.X.{name}: must be at least 1, got 0"));
            } else {
                let e = parse(&both).unwrap_err();
                assert_eq!((e.line, e.column), (5, 1), "{e}");
                assert!(e.message.starts_with(&format!("tools.X.{name}: unknown field `{name}`")), "{e}");
            }
            let e = parse(&format!("[limits]\n{name} = 0\n")).unwrap_err();
            assert_eq!((e.line, e.column), (2, name.len() + 4), "{e}");
            assert_eq!(e.message, format!("limits.{name}: must be at least 1, got 0"));
        }
    }
}
