//! A real OCI registry for the install tests: the CNCF distribution registry (Debian's
//! `docker-registry`, which `.ci/run` installs), on a free port of 127.0.0.1 over plain HTTP
//! by default, storing into a temporary directory; or, with [`Options`], on another address,
//! over TLS, and asking for a user name and password. Stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running registry.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Its storage directory (the filesystem driver's root).
    pub storage: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TOOLHOST_TEST_REGISTRY") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .map(|d| d.join("docker-registry"))
        .find(|p| p.is_file())
}

/// How a registry is served.
#[derive(Default)]
pub struct Options {
    /// The address to listen on (default `127.0.0.1`).
    pub host: Option<String>,
    /// Serve HTTPS with this certificate and key (PEM).
    pub tls: Option<(String, String)>,
    /// Ask for HTTP basic credentials: `user:bcrypt-hash` lines of an htpasswd file.
    pub htpasswd: Option<String>,
}

/// `alice`'s password in [`HTPASSWD`].
pub const PASSWORD: &str = "s3cret";
/// An htpasswd file with user `alice`, password [`PASSWORD`] (bcrypt, cost 4).
pub const HTPASSWD: &str = "alice:$2b$04$mLq5zaxCWqkJiOMsw/cTn.erkiqAfiklH5YmLuY9zb3qu9lgh6TvG\n";

impl Registry {
    /// Start a registry on loopback over plain HTTP; `None` (with a printed reason) only when
    /// the binary is missing and `CI` is not set. In CI a missing registry is a failure.
    pub fn start() -> Option<Registry> {
        Registry::start_with(Options::default())
    }

    /// Start a registry served as `options` say (`None` as for [`Registry::start`]).
    pub fn start_with(options: Options) -> Option<Registry> {
        let Some(bin) = find_binary() else {
            crate::skip("docker-registry is not installed (.ci/run installs it: apt-get install docker-registry)");
            return None;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let storage = dir.path().join("storage");
        std::fs::create_dir(&storage).expect("storage dir");
        // A free port: bind, read it, release it (the registry binds it right after).
        let host = options.host.as_deref().unwrap_or("127.0.0.1");
        let port = std::net::TcpListener::bind((host, 0)).expect("bind").local_addr().expect("addr").port();
        let addr = format!("{host}:{port}");
        let mut yaml = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
            storage.display()
        );
        if let Some((cert, key)) = &options.tls {
            let (cert_file, key_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
            std::fs::write(&cert_file, cert).expect("certificate");
            std::fs::write(&key_file, key).expect("key");
            yaml.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                cert_file.display(),
                key_file.display()
            ));
        }
        if let Some(htpasswd) = &options.htpasswd {
            let file = dir.path().join("htpasswd");
            std::fs::write(&file, htpasswd).expect("htpasswd");
            yaml.push_str(&format!("auth:\n  htpasswd:\n    realm: toolhost-test\n    path: {}\n", file.display()));
        }
        let config = dir.path().join("config.yml");
        std::fs::write(&config, yaml).expect("config");
        let child = Command::new(&bin)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let registry = Registry { child, addr, storage, _dir: dir };
        registry.wait_ready();
        Some(registry)
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(&self.addr).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("docker-registry did not listen on {} within 20 s", self.addr);
    }

    /// `oci://ADDR/REPO`.
    pub fn reference(&self, repo: &str) -> String {
        format!("oci://{}/{repo}", self.addr)
    }

    /// The stored blob with this digest (`sha256:HEX`), as the filesystem driver lays it out.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.storage.join("docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }

    /// The storage root.
    pub fn storage(&self) -> &Path {
        &self.storage
    }
}
