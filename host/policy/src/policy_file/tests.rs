use super::*;
use crate::{Config, effective_grant};
use PolicyFileProblem as P;

fn origin() -> &'static Path {
    Path::new("/opt/tools/t.policy.yaml")
}

fn parse(text: &str) -> Result<Grant, PolicyFileError> {
    parse_policy_file(text, origin())
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(ToString::to_string).collect()
}

/// Asserts that `text` is refused at `line:column` for `what`.
#[track_caller]
fn assert_refused(text: &str, line: usize, column: usize, what: PolicyFileProblem) {
    match parse(text) {
        Ok(grant) => panic!("accepted as {grant:?}, want {line}:{column}: {what}\n{text}"),
        Err(e) => {
            assert_eq!((e.line, e.column, &e.what), (line, column, &what), "{e}\n{text}");
            assert_eq!(e.path, origin());
            assert!(e.source.is_none(), "{e}");
        }
    }
}

fn field(s: &str) -> String {
    s.to_string()
}

#[test]
fn every_field_becomes_part_of_the_grant() {
    let text = r#"
version: "1.0"
description: "Weather tool"
permissions:
  storage:
    allow:
      - uri: "fs://data/**"
        access: ["read"]
      - uri: "fs:///var/cache/weather"
        access: [read, write]
      - uri: fs://.
        access: [write, read]
      - uri: "fs://**"
        access: [read]
      - uri: "fs:///**"
        access: [read]
      - uri: "fs://config/app.yaml"
        access: [read]
    deny: null
  network:
    allow:
      - host: "api.weather.example"
      - host: "localhost:8080"
      - host: "*.cdn.example"
      - host: "[::1]:9000"
      - host: "*"
    deny: []
  environment:
    allow:
      - key: "WEATHER_API_KEY"
      - key: HOME
  runtime: {}
  resources: null
"#;
    let grant = parse(text).unwrap();
    assert_eq!(
        grant,
        Grant {
            fs_read: strings(&["data", ".", "/", "config/app.yaml"]),
            fs_write: strings(&["/var/cache/weather", "."]),
            net: strings(&["api.weather.example", "localhost:8080", "*.cdn.example", "[::1]:9000", "*"]),
            env: strings(&["WEATHER_API_KEY", "HOME"]),
        }
    );
}

/// The sample in the docs of [`parse_policy_file`] means what its comments say.
#[test]
fn the_documented_sample() {
    let text = r#"
$schema: https://…/policy-v1.0.schema.json   # optional, not used
version: "1.0"                 # required in a file with any content; "1." and a number
description: "Weather tool"    # optional, not used
permissions:                   # optional; without it (or in an empty file) nothing is granted
  storage:
    allow:
      - uri: "fs://data/**"    # → fs_read "data" (workspace-relative)
        access: [read]
      - uri: "fs:///var/cache/weather"
        access: [read, write]  # → fs_write "/var/cache/weather"
  network:
    allow:
      - host: "api.weather.example"   # → net "api.weather.example" (ports 80 and 443)
      - host: "localhost:8080"        # → net "localhost:8080"
  environment:
    allow:
      - key: "WEATHER_API_KEY"        # → env "WEATHER_API_KEY"
"#;
    let want = Grant {
        fs_read: strings(&["data"]),
        fs_write: strings(&["/var/cache/weather"]),
        net: strings(&["api.weather.example", "localhost:8080"]),
        env: strings(&["WEATHER_API_KEY"]),
    };
    assert_eq!(parse(text).unwrap(), want);
}

#[test]
fn documents_that_say_nothing_grant_nothing() {
    for text in [
        "",
        "\n\n",
        "# only a comment\n",
        "---\n",
        "~\n",
        "null\n",
        "version: \"1.0\"\n",
        "version: \"1.2\"\ndescription: ~\npermissions:\n",
        "version: \"1.0\"\npermissions: {}\n",
        "version: \"1.0\"\npermissions:\n  storage:\n  network: ~\n  environment: {}\n",
        "version: \"1.0\"\npermissions:\n  storage:\n    allow: []\n    deny: []\n  network:\n    allow: null\n",
        "version: '1.0'\npermissions:\n  runtime: {}\n  resources: ~\n  ipc: {}\n",
    ] {
        assert_eq!(parse(text).unwrap(), Grant::none(), "{text:?}");
    }
}

/// A policy file and the `[tools.NAME] grant` table it stands for produce the same grant, and
/// so the same effective grant whatever the ceiling: relative paths are relative to the
/// workspace on both sides.
#[test]
fn the_same_grant_as_the_equivalent_toml_table() {
    let cases: &[(&str, &str)] = &[
        ("", "{}"),
        ("  storage:\n    allow:\n      - uri: \"fs://src\"\n        access: [read]\n", r#"{ fs_read = ["src"] }"#),
        (
            "  storage:\n    allow:\n      - uri: \"fs://../shared/**\"\n        access: [read, write]\n      - uri: \"fs:///etc\"\n        access: [read]\n",
            r#"{ fs_write = ["../shared"], fs_read = ["/etc"] }"#,
        ),
        (
            "  network:\n    allow:\n      - host: api.github.com\n      - host: \"10.0.0.5:443\"\n  environment:\n    allow:\n      - key: GITHUB_TOKEN\n",
            r#"{ net = ["api.github.com", "10.0.0.5:443"], env = ["GITHUB_TOKEN"] }"#,
        ),
    ];
    let ws = Path::new("/work/ws");
    let ceiling = [
        crate::Capability::FsWrite("/".into()),
        crate::Capability::Net("*".into()),
        crate::Capability::Env("*".into()),
    ];
    for (permissions, table) in cases {
        let yaml = format!("version: \"1.0\"\npermissions:\n{permissions}");
        let from_yaml = parse(&yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        let toml = format!("[tools.T]\ngrant = {table}\n");
        let config = Config::parse(&toml, Path::new("toolhost.toml")).unwrap_or_else(|e| panic!("{e}\n{toml}"));
        let from_toml = config.tools["T"].grant().unwrap();
        assert_eq!(&from_yaml, from_toml, "{yaml}");
        assert_eq!(effective_grant(&ceiling, &from_yaml, ws), effective_grant(&ceiling, from_toml, ws));
    }
    // Resolved like a TOML grant: against the workspace, not the policy file's directory.
    let grant = parse(
        "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: fs://data\n        access: [read]\n",
    )
    .unwrap();
    let dirs = effective_grant(&ceiling, &grant, ws).dirs;
    assert_eq!(
        dirs.iter().map(|d| (d.path.as_path(), d.writable)).collect::<Vec<_>>(),
        [(Path::new("/work/ws/data"), false)]
    );
}

/// Network patterns go through the TOML grant's own check: a host is accepted in a policy file
/// exactly when `net = [host]` loads from `toolhost.toml`.
#[test]
fn hosts_are_checked_as_toml_grants_check_them() {
    for host in [
        "example.com",
        "example.com:8080",
        "example.com:*",
        "*.example.com",
        "*",
        "127.0.0.1:80",
        "[::1]:8080",
        "a b",
        "",
        "example.com:99999",
        "*.*.example.com",
        "exa*mple.com",
        "[::1",
        "example.com:",
    ] {
        let toml = format!("[tools.T]\ngrant = {{ net = [{host:?}] }}\n");
        let toml_ok = Config::parse(&toml, Path::new("toolhost.toml")).is_ok();
        let yaml = format!("version: \"1.0\"\npermissions:\n  network:\n    allow:\n      - host: {host:?}\n");
        match parse(&yaml) {
            Ok(grant) => {
                assert!(toml_ok, "{host:?}: accepted here, refused in toolhost.toml");
                assert_eq!(grant.net, [host]);
            }
            Err(e) => {
                assert!(!toml_ok, "{host:?}: refused here ({e}), accepted in toolhost.toml");
                let why = host.parse::<NetPattern>().unwrap_err().to_string();
                assert_eq!(e.what, P::Invalid { field: field("permissions.network.allow[0].host"), why });
                assert_eq!((e.line, e.column), (5, 15), "{e}");
            }
        }
    }
}

/// A host written as a URL, as Wassette's examples write some, is its host and port.
#[test]
fn a_url_names_its_host_and_port() {
    let yaml = |host: &str| format!("version: \"1.0\"\npermissions:\n  network:\n    allow:\n      - host: {host:?}\n");
    for (url, pattern) in [
        ("https://rss.nytimes.com/", "rss.nytimes.com:443"),
        ("http://example.com", "example.com:80"),
        ("HTTPS://api.example.com:8443/v1/items?q=1", "api.example.com:8443"),
        ("https://[::1]/x", "[::1]:443"),
        ("https://[::1]:9000", "[::1]:9000"),
        ("https://*.example.com/", "*.example.com:443"),
    ] {
        assert_eq!(parse(&yaml(url)).unwrap().net, [pattern], "{url}");
    }
    for (url, why) in [
        ("ftp://example.com/", "only http and https"),
        ("https://user@example.com/", "user name"),
        ("https:///path", "without a host"),
    ] {
        let e = parse(&yaml(url)).unwrap_err().to_string();
        assert!(e.contains(why), "{url}: {e}");
    }
}

/// Wassette's own files as they are written (`examples/filesystem-rs/policy.yaml`): a
/// `$schema` line, a description, comments, quoted access words.
#[test]
fn a_file_as_wassette_writes_it() {
    let text = r#"$schema: https://raw.githubusercontent.com/microsoft/policy-mcp/main/schema/policy-v1.0.schema.json
# file system access policy
version: "1.0"
description: "Permission policy for filesystem access"
permissions:
  storage:
    allow:
      - uri: "fs:///srv/project"
        access: ["read"]
    # the home directory too
      - uri: "fs:///home/user"
        access: ["read", "write"]
"#;
    let want = Grant { fs_read: strings(&["/srv/project"]), fs_write: strings(&["/home/user"]), ..Grant::none() };
    assert_eq!(parse(text).unwrap(), want);
    let e = parse("$schema: 1\nversion: \"1.0\"\n").unwrap_err();
    assert_eq!(e.line, 1, "{e}");
    assert!(e.to_string().contains("$schema"), "{e}");
}

#[test]
fn unknown_keys_are_errors_at_every_level() {
    let v = "version: \"1.0\"\n";
    /// (text, line, column, the mapping's key path, the unknown key, the keys it may have)
    type Case = (String, usize, usize, &'static str, &'static str, &'static [&'static str]);
    let cases: &[Case] = &[
        (
            format!("{v}permission: {{}}\n"),
            2,
            1,
            "",
            "permission",
            &["$schema", "version", "description", "permissions"],
        ),
        (
            format!("{v}permissions:\n  filesystem: {{}}\n"),
            3,
            3,
            "permissions",
            "filesystem",
            &["storage", "network", "environment", "runtime", "resources", "ipc"],
        ),
        (
            format!("{v}permissions:\n  storage:\n    alow: []\n"),
            4,
            5,
            "permissions.storage",
            "alow",
            &["allow", "deny"],
        ),
        (
            format!("{v}permissions:\n  network:\n    block: []\n"),
            4,
            5,
            "permissions.network",
            "block",
            &["allow", "deny"],
        ),
        // Wassette's environment section has no deny list: here `deny` is unknown.
        (
            format!("{v}permissions:\n  environment:\n    deny: []\n"),
            4,
            5,
            "permissions.environment",
            "deny",
            &["allow"],
        ),
        (
            format!(
                "{v}permissions:\n  storage:\n    allow:\n      - uri: fs://a\n        access: [read]\n        mode: rw\n"
            ),
            7,
            9,
            "permissions.storage.allow[0]",
            "mode",
            &["uri", "access"],
        ),
        (
            format!("{v}permissions:\n  network:\n    allow:\n      - host: a.com\n      - hots: b.com\n"),
            6,
            9,
            "permissions.network.allow[1]",
            "hots",
            &["host", "cidr", "defaults"],
        ),
        (
            format!("{v}permissions:\n  environment:\n    allow:\n      - {{ key: A, value: b }}\n"),
            5,
            19,
            "permissions.environment.allow[0]",
            "value",
            &["key"],
        ),
        // A key that is not a string is unknown too, named as written.
        (format!("{v}3: x\n"), 2, 1, "", "3", &["$schema", "version", "description", "permissions"]),
    ];
    for (text, line, column, at, key, expected) in cases {
        let what = P::UnknownKey { field: field(at), key: key.to_string(), expected };
        assert_refused(text, *line, *column, what);
    }
}

#[test]
fn wrong_types_name_the_field() {
    let v = "version: \"1.0\"\n";
    let cases: &[(String, usize, usize, &str, &str, &str)] = &[
        ("version: 1.0\n".into(), 1, 10, "version", "a string", "the number 1.0"),
        ("version: 1\n".into(), 1, 10, "version", "a string", "the integer 1"),
        ("- version\n".into(), 1, 1, "", "a mapping", "a list"),
        ("just text\n".into(), 1, 1, "", "a mapping", "the string \"just text\""),
        (format!("{v}description: [a]\n"), 2, 14, "description", "a string", "a list"),
        (format!("{v}permissions: all\n"), 2, 14, "permissions", "a mapping", "the string \"all\""),
        (format!("{v}permissions:\n  storage: [a]\n"), 3, 12, "permissions.storage", "a mapping", "a list"),
        (
            format!("{v}permissions:\n  storage:\n    allow:\n      uri: fs://a\n"),
            5,
            7,
            "permissions.storage.allow",
            "a list",
            "a mapping",
        ),
        (
            format!("{v}permissions:\n  storage:\n    deny: fs://a\n"),
            4,
            11,
            "permissions.storage.deny",
            "a list",
            "the string \"fs://a\"",
        ),
        (
            format!("{v}permissions:\n  storage:\n    allow:\n      - fs://a\n"),
            5,
            9,
            "permissions.storage.allow[0]",
            "a mapping",
            "the string \"fs://a\"",
        ),
        (
            format!("{v}permissions:\n  storage:\n    allow:\n      - uri: 7\n        access: [read]\n"),
            5,
            14,
            "permissions.storage.allow[0].uri",
            "a string",
            "the integer 7",
        ),
        (
            format!("{v}permissions:\n  storage:\n    allow:\n      - uri:\n        access: [read]\n"),
            5,
            12,
            "permissions.storage.allow[0].uri",
            "a string",
            "nothing (null)",
        ),
        (
            format!("{v}permissions:\n  storage:\n    allow:\n      - uri: fs://a\n        access: read\n"),
            6,
            17,
            "permissions.storage.allow[0].access",
            "a list",
            "the string \"read\"",
        ),
        (
            format!("{v}permissions:\n  storage:\n    allow:\n      - uri: fs://a\n        access: [read, true]\n"),
            6,
            24,
            "permissions.storage.allow[0].access[1]",
            "a string",
            "the boolean true",
        ),
        (
            format!("{v}permissions:\n  network:\n    allow:\n      - host: [a.com]\n"),
            5,
            15,
            "permissions.network.allow[0].host",
            "a string",
            "a list",
        ),
        (
            format!("{v}permissions:\n  environment:\n    allow:\n      - key: 12\n"),
            5,
            14,
            "permissions.environment.allow[0].key",
            "a string",
            "the integer 12",
        ),
        (format!("{v}permissions:\n  resources: 5\n"), 3, 14, "permissions.resources", "a mapping", "the integer 5"),
        (format!("{v}? [a]\n: b\n"), 2, 3, "", "a key name", "a list"),
    ];
    for (text, line, column, at, expected, got) in cases {
        let what = P::WrongType { field: field(at), expected, got: got.to_string() };
        assert_refused(text, *line, *column, what);
    }
}

#[test]
fn missing_keys_are_errors_at_their_mapping() {
    let v = "version: \"1.0\"\n";
    let cases: &[(String, usize, usize, &str, &str)] = &[
        ("permissions: {}\n".into(), 1, 1, "", "version"),
        ("description: x\n".into(), 1, 1, "", "version"),
        (
            format!("{v}permissions:\n  storage:\n    allow:\n      - access: [read]\n"),
            5,
            9,
            "permissions.storage.allow[0]",
            "uri",
        ),
        (
            format!("{v}permissions:\n  storage:\n    allow:\n      - uri: fs://a\n"),
            5,
            9,
            "permissions.storage.allow[0]",
            "access",
        ),
        (
            format!("{v}permissions:\n  network:\n    allow:\n      - {{}}\n"),
            5,
            9,
            "permissions.network.allow[0]",
            "host",
        ),
        (
            format!("{v}permissions:\n  environment:\n    allow:\n      - {{}}\n"),
            5,
            9,
            "permissions.environment.allow[0]",
            "key",
        ),
    ];
    for (text, line, column, at, key) in cases {
        assert_refused(text, *line, *column, P::MissingKey { field: field(at), key });
    }
}

#[test]
fn only_version_1_x() {
    for ok in ["1.0", "1.1", "1.10"] {
        assert_eq!(parse(&format!("version: \"{ok}\"\n")).unwrap(), Grant::none(), "{ok}");
    }
    for bad in ["2.0", "1", "1.", "1.x", "v1.0", "0.9", " 1.0", "1.0.0", ""] {
        assert_refused(&format!("\nversion: \"{bad}\"\n"), 2, 10, P::Version { given: bad.to_string() });
    }
}

#[test]
fn access_is_read_or_read_and_write() {
    let entry = |access: &str| {
        format!(
            "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: fs://a\n        access: {access}\n"
        )
    };
    let at = "permissions.storage.allow[0].access";
    for word in ["exec", "Read", "WRITE", "rw", "execute", ""] {
        let what = P::Access { field: format!("{at}[1]"), given: word.to_string() };
        assert_refused(&entry(&format!("[read, \"{word}\"]")), 6, 24, what);
    }
    assert_refused(&entry("[read, read]"), 6, 24, P::Invalid { field: format!("{at}[1]"), why: "listed twice".into() });
    assert_refused(
        &entry("[]"),
        6,
        17,
        P::Invalid { field: field(at), why: "lists no access: write [read] or [read, write]".into() },
    );
    let text = entry("[write]");
    let e = parse(&text).unwrap_err();
    assert!(
        matches!(&e.what, P::Unsupported { field, why } if field == at && why.starts_with("write without read")),
        "{e}"
    );
    assert_eq!((e.line, e.column), (6, 17));
}

#[test]
fn a_storage_uri_is_an_fs_directory() {
    let entry = |uri: &str| {
        format!(
            "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: {uri:?}\n        access: [read]\n"
        )
    };
    let at = "permissions.storage.allow[0].uri";
    for (uri, dir) in [
        ("fs://data", "data"),
        ("fs://data/", "data/"),
        ("fs://data/**", "data"),
        ("fs://data//**", "data/"),
        ("fs://a b/%20", "a b/%20"),
        ("fs://.", "."),
        ("fs://**", "."),
        ("fs:///", "/"),
        ("fs:///**", "/"),
        ("fs:///srv/data/**", "/srv/data"),
        ("fs://../up", "../up"),
    ] {
        assert_eq!(parse(&entry(uri)).unwrap().fs_read, [dir], "{uri}");
    }
    for uri in ["file:///etc", "/etc", "data", "https://example.com/x", "FS://data", "fs:/data", "fs:data"] {
        assert_refused(&entry(uri), 5, 14, P::NotFsUri { field: field(at), given: uri.to_string() });
    }
    for uri in
        ["fs://data/*", "fs://data/**/x", "fs://data/**/*.txt", "fs://data**", "fs://*", "fs://***", "fs://a/**/"]
    {
        let e = parse(&entry(uri)).unwrap_err();
        assert!(
            matches!(&e.what, P::Invalid { field, why } if field == at && why.contains("the only wildcard is a trailing /**")),
            "{uri}: {e}"
        );
        assert_eq!((e.line, e.column), (5, 14), "{uri}");
    }
    let e = parse(&entry("fs://")).unwrap_err();
    assert!(matches!(&e.what, P::Invalid { why, .. } if why.contains("names no directory")), "{e}");
    let e = parse(&entry("fs://a\0b")).unwrap_err();
    assert!(matches!(&e.what, P::Invalid { why, .. } if why.contains("NUL")), "{e}");
}

#[test]
fn environment_keys_are_names_without_wildcards() {
    let entry =
        |key: &str| format!("version: \"1.0\"\npermissions:\n  environment:\n    allow:\n      - key: {key:?}\n");
    for (key, why) in [
        ("*", "no wildcards"),
        ("AWS_*", "no wildcards"),
        ("", "an empty variable name"),
        ("A=B", "is not a variable name"),
        ("A\0", "is not a variable name"),
    ] {
        let e = parse(&entry(key)).unwrap_err();
        assert!(
            matches!(&e.what, P::Invalid { field, why: w } if field == "permissions.environment.allow[0].key" && w.contains(why)),
            "{key:?}: {e}"
        );
        assert_eq!((e.line, e.column), (5, 14), "{key:?}");
    }
    assert_eq!(parse(&entry("lower_case1")).unwrap().env, ["lower_case1"]);
}

/// What Wassette's format can say and a grant cannot is refused, never dropped: dropping a deny
/// list or a resource limit would grant more than the author meant.
#[test]
fn what_toolhost_cannot_enforce_is_refused() {
    let v = "version: \"1.0\"\npermissions:\n";
    let cases: &[(String, usize, usize, &str, &str)] = &[
        (
            format!(
                "{v}  storage:\n    allow:\n      - uri: fs://a\n        access: [read]\n    deny:\n      - uri: fs://a/secret\n        access: [read]\n"
            ),
            8,
            7,
            "permissions.storage.deny",
            DENY,
        ),
        (format!("{v}  network:\n    deny:\n      - host: evil.example\n"), 5, 7, "permissions.network.deny", DENY),
        (
            format!("{v}  network:\n    allow:\n      - cidr: 10.0.0.0/8\n"),
            5,
            15,
            "permissions.network.allow[0].cidr",
            "a CIDR range: name each host or address instead (host: \"10.0.0.5:443\")",
        ),
        (
            format!("{v}  network:\n    allow:\n      - defaults: true\n"),
            5,
            19,
            "permissions.network.allow[0].defaults",
            "Wassette's built-in list of common hosts: name the hosts the tool needs",
        ),
        (format!("{v}  runtime:\n    docker: {{}}\n"), 4, 5, "permissions.runtime", UNSUPPORTED_SECTIONS[0].1),
        (format!("{v}  resources:\n    memory: 128\n"), 4, 5, "permissions.resources", UNSUPPORTED_SECTIONS[1].1),
        (format!("{v}  ipc:\n    allow:\n      - uri: x\n"), 4, 5, "permissions.ipc", UNSUPPORTED_SECTIONS[2].1),
    ];
    for (text, line, column, at, why) in cases {
        assert_refused(text, *line, *column, P::Unsupported { field: field(at), why });
    }
    let text = format!("{v}  network:\n    allow:\n      - host: a.com\n        cidr: 10.0.0.0/8\n");
    let why = "an entry has one of host, cidr or defaults, not both host and cidr".to_string();
    assert_refused(&text, 6, 15, P::Invalid { field: field("permissions.network.allow[0]"), why });
}

#[test]
fn yaml_that_is_not_a_plain_document_is_refused_at_its_position() {
    let v = "version: \"1.0\"\n";
    let cases: &[(String, usize, usize, &str)] = &[
        (format!("{v}permissions: [\n"), 2, 14, "unclosed"),
        (format!("{v}version: \"1.1\"\n"), 2, 1, "duplicate"),
        (
            format!("{v}permissions:\n  environment:\n    allow:\n      - key: &k HOME\n      - key: *k\n"),
            5,
            17,
            "anchors and aliases",
        ),
        (format!("{v}permissions:\n  <<: {{storage: {{}}}}\n"), 3, 3, "merge keys"),
        (format!("{v}permissions: !grant {{}}\n"), 2, 21, "!grant"),
        (format!("{v}---\n{v}"), 2, 1, "more than one YAML document"),
        (format!("{v}permissions: {}{}\n", "[".repeat(20), "]".repeat(20)), 2, 29, "nested more than 16"),
        ("version: \"1.0\"\n\tpermissions: {}\n".into(), 2, 2, "tabs"),
    ];
    for (text, line, column, contains) in cases {
        let e = parse(text).unwrap_err();
        assert!(matches!(&e.what, P::Syntax { message } if message.contains(contains)), "{e}\n{text}");
        assert_eq!((e.line, e.column), (*line, *column), "{e}\n{text}");
    }
}

#[test]
fn errors_read_as_file_line_column_message() {
    let e = parse(
        "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: file:///etc\n        access: [read]\n",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "/opt/tools/t.policy.yaml:5:14: permissions.storage.allow[0].uri: \"file:///etc\" is not an fs:// URI: storage is \
         a directory, fs://PATH (relative to the workspace) or fs:///PATH (absolute)"
    );
    let e = parse("permissions: {}\n").unwrap_err();
    assert_eq!(e.to_string(), "/opt/tools/t.policy.yaml:1:1: missing key `version`");
    let e = parse("versio: \"1.0\"\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "/opt/tools/t.policy.yaml:1:1: unknown key \"versio\" (expected $schema, version, description or permissions)"
    );
    // A hostile key cannot draw on the terminal: it is shown escaped.
    let e = parse("\"\\e[2J\": x\n").unwrap_err();
    assert!(
        e.to_string().ends_with(r#"unknown key "\u{1b}[2J" (expected $schema, version, description or permissions)"#),
        "{e}"
    );
}

#[test]
fn the_size_limit_holds_before_parsing() {
    let limit = MAX_POLICY_FILE_BYTES as usize;
    let fits = format!("version: \"1.0\"\n{}", "#".repeat(limit - 16) + "\n");
    assert_eq!(fits.len(), limit);
    assert_eq!(parse(&fits).unwrap(), Grant::none());
    // One byte more is refused, even though it would parse.
    let over = format!("{fits} ");
    let e = parse(&over).unwrap_err();
    assert_eq!((e.line, e.column, &e.what), (0, 0, &P::TooLarge { size: limit as u64 + 1 }));
    assert_eq!(e.to_string(), "/opt/tools/t.policy.yaml: 65537 bytes: a policy file may have at most 65536");
}

#[test]
fn reading_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.policy.yaml");

    assert!(read_policy_file(&path).unwrap().is_none(), "no file, no grant");

    std::fs::write(&path, "version: \"1.0\"\npermissions:\n  environment:\n    allow:\n      - key: HOME\n").unwrap();
    assert_eq!(read_policy_file(&path).unwrap(), Some(Grant { env: strings(&["HOME"]), ..Grant::none() }));

    // An error in the file names the file.
    std::fs::write(&path, "version: \"1.0\"\npermissions:\n  storage:\n    deny: [x]\n").unwrap();
    let e = read_policy_file(&path).unwrap_err();
    assert_eq!((e.path.as_path(), e.line, e.column), (path.as_path(), 4, 11), "{e}");

    // Too large: refused from its size, before it is read.
    std::fs::write(&path, vec![b'#'; MAX_POLICY_FILE_BYTES as usize + 10]).unwrap();
    let e = read_policy_file(&path).unwrap_err();
    assert_eq!((e.line, &e.what), (0, &P::TooLarge { size: MAX_POLICY_FILE_BYTES + 10 }), "{e}");

    // Not UTF-8: at the first bad byte.
    std::fs::write(&path, b"version: \"1.0\"\ndescription: \"caf\xe9\"\n").unwrap();
    let e = read_policy_file(&path).unwrap_err();
    assert_eq!((e.line, e.column, &e.what), (2, 18, &P::NotUtf8 { byte: 0xe9 }), "{e:?}");

    // Not a regular file.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    let e = read_policy_file(&path).unwrap_err();
    assert_eq!((e.line, &e.what), (0, &P::NotRegularFile { kind: "a directory" }), "{e}");
    assert_eq!(e.to_string(), format!("{}: not a regular file but a directory", path.display()));

    // Unreadable for another reason than absence: the cause is kept as the source.
    let under_a_file = dir.path().join("file");
    std::fs::write(&under_a_file, "").unwrap();
    let e = read_policy_file(&under_a_file.join("t.policy.yaml")).unwrap_err();
    assert_eq!(e.what, P::Unreadable);
    let source = std::error::Error::source(&e).expect("the I/O error");
    assert_eq!(source.downcast_ref::<std::io::Error>().unwrap().kind(), std::io::ErrorKind::NotADirectory);
}

#[cfg(unix)]
#[test]
fn special_files_are_refused_without_opening_them() {
    let dir = tempfile::tempdir().unwrap();
    // A socket cannot be opened at all; a FIFO would block the reader in `open` until
    // someone writes to it (the test would hang instead of failing).
    let socket = dir.path().join("sock.policy.yaml");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let e = read_policy_file(&socket).unwrap_err();
    assert_eq!(e.what, P::NotRegularFile { kind: "a socket" });

    let fifo = dir.path().join("fifo.policy.yaml");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    let e = read_policy_file(&fifo).unwrap_err();
    assert_eq!(e.what, P::NotRegularFile { kind: "a FIFO" });

    // A link to a regular file is followed (the file sits beside an operator-chosen component).
    let real = dir.path().join("real.yaml");
    std::fs::write(&real, "version: \"1.0\"\n").unwrap();
    let link = dir.path().join("link.policy.yaml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(read_policy_file(&link).unwrap(), Some(Grant::none()));
    std::os::unix::fs::symlink("/dev/null", dir.path().join("dev.policy.yaml")).unwrap();
    let e = read_policy_file(&dir.path().join("dev.policy.yaml")).unwrap_err();
    assert_eq!(e.what, P::NotRegularFile { kind: "a device" });
}

#[test]
fn the_policy_file_of_a_component() {
    for (component, want) in [
        ("tools/fetch.wasm", Some("tools/fetch.policy.yaml")),
        ("/abs/dir.d/x.y.wasm", Some("/abs/dir.d/x.y.policy.yaml")),
        ("fetch.wasm", Some("fetch.policy.yaml")),
        (".wasm", None),
        ("fetch.WASM", None),
        ("fetch.wat", None),
        ("fetch", None),
        ("dir/", None),
        ("", None),
    ] {
        assert_eq!(policy_file_path(Path::new(component)), want.map(PathBuf::from), "{component:?}");
    }
}
