//! A real OCI registry for the tests: the CNCF distribution registry
//! (`registry` v3), built with `go install` when it is not installed yet,
//! started on a free 127.0.0.1 port in a temporary directory, and stopped
//! when dropped — or when the test process exits, whichever comes first.
//! Fixtures are pushed with `oci-client`'s push API.

use std::fmt::Write as _;
use std::io::{BufRead, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

/// The module the registry is built from, and its version.
pub const REGISTRY_MODULE: &str = "github.com/distribution/distribution/v3/cmd/registry@v3.1.2";

pub const ARTIFACT_TYPE: &str = "application/vnd.fn-starlark.modules.v1+tar";
pub const BUNDLE_LAYER: &str = "application/vnd.fn-starlark.layer.v1.tar";
pub const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";
pub const TITLE: &str = "org.opencontainers.image.title";

/// The registry binary: `$REGISTRY_BIN`, else `$(go env GOPATH)/bin/registry`,
/// installed with `go install` on first use.
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        if let Some(bin) = std::env::var_os("REGISTRY_BIN") {
            return PathBuf::from(bin);
        }
        let gopath = Command::new("go")
            .args(["env", "GOPATH"])
            .output()
            .expect("Go is needed to build the test registry (`go env GOPATH` failed)");
        let gopath = String::from_utf8_lossy(&gopath.stdout).trim().to_owned();
        let bin = Path::new(&gopath).join("bin").join("registry");
        if !bin.exists() {
            eprintln!("installing the test registry: go install {REGISTRY_MODULE}");
            let status = Command::new("go")
                .args(["install", REGISTRY_MODULE])
                .status()
                .expect("go install runs");
            assert!(status.success(), "go install {REGISTRY_MODULE} failed");
        }
        bin
    })
}

/// A running registry.
pub struct Registry {
    /// `127.0.0.1:<port>`.
    pub host: String,
    /// The port alone.
    pub port: u16,
    child: Child,
    stdin: Option<ChildStdin>,
    dir: tempfile::TempDir,
    log: PathBuf,
    auth: RegistryAuth,
    /// The CA of the registry's TLS certificate, when it serves HTTPS.
    pub ca_pem: Option<String>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl Registry {
    /// An open registry.
    pub fn start() -> Registry {
        Registry::launch(None)
    }

    /// A registry that needs `user`/`password` (htpasswd, bcrypt) for everything.
    pub fn start_private(user: &str, password: &str) -> Registry {
        Registry::launch(Some((user, password)))
    }

    /// A registry serving HTTPS under `hostname` (which must resolve to a
    /// loopback address), with a certificate from a CA of its own
    /// ([`Registry::ca_pem`]).
    pub fn start_tls(hostname: &str) -> Registry {
        Registry::launch_with(None, Some(hostname))
    }

    fn launch(credentials: Option<(&str, &str)>) -> Registry {
        Registry::launch_with(credentials, None)
    }

    fn launch_with(credentials: Option<(&str, &str)>, tls_host: Option<&str>) -> Registry {
        let bin = binary();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let port = free_port();
        let host = format!("{}:{port}", tls_host.unwrap_or("127.0.0.1"));
        let mut config = format!(
            "version: 0.1\nlog:\n  level: info\n  formatter: json\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n  secret: function-starlark-tests\n",
            dir.path().join("data").display()
        );
        let ca_pem = tls_host.map(|name| {
            use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
            let ca_key = KeyPair::generate().expect("a CA key");
            let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
            ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            let ca_cert = ca.self_signed(&ca_key).expect("a CA certificate");
            let issuer = Issuer::new(ca, ca_key);
            let key = KeyPair::generate().expect("a key");
            let cert = CertificateParams::new(vec![name.to_owned()])
                .expect("leaf params")
                .signed_by(&key, &issuer)
                .expect("a signed certificate");
            let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
            std::fs::write(&cert_path, cert.pem()).expect("the certificate is written");
            std::fs::write(&key_path, key.serialize_pem()).expect("the key is written");
            let _ = write!(
                config,
                "  tls:\n    certificate: {}\n    key: {}\n",
                cert_path.display(),
                key_path.display()
            );
            ca_cert.pem()
        });
        if let Some((user, password)) = credentials {
            let hash = bcrypt::hash(password, 4).expect("bcrypt hashes");
            let htpasswd = dir.path().join("htpasswd");
            std::fs::write(&htpasswd, format!("{user}:{hash}\n")).expect("htpasswd is written");
            let _ = write!(
                config,
                "auth:\n  htpasswd:\n    realm: function-starlark-tests\n    path: {}\n",
                htpasswd.display()
            );
        }
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).expect("the config is written");
        let log = dir.path().join("registry.log");
        // The shell stops the registry when its stdin closes: when this
        // handle is dropped, and also when the test process exits.
        let script = r#""$1" serve "$2" >"$3" 2>&1 & pid=$!; cat >/dev/null; kill "$pid" 2>/dev/null; wait "$pid"; rm -rf "$4""#;
        let mut child = Command::new("sh")
            .args(["-c", script, "sh"])
            .arg(bin)
            .arg(&config_path)
            .arg(&log)
            .arg(dir.path())
            .env("OTEL_TRACES_EXPORTER", "none")
            .env("OTEL_METRICS_EXPORTER", "none")
            .env("OTEL_LOGS_EXPORTER", "none")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the registry starts");
        let stdin = child.stdin.take();
        let auth = match credentials {
            Some((u, p)) => RegistryAuth::Basic(u.to_owned(), p.to_owned()),
            None => RegistryAuth::Anonymous,
        };
        let registry = Registry {
            host,
            port,
            child,
            stdin,
            dir,
            log,
            auth,
            ca_pem,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = registry.status_of("/v2/")
                && (status == 200 || status == 401)
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the registry did not start; its log:\n{}",
                std::fs::read_to_string(&registry.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        registry
    }

    /// The HTTP status of a GET of `path`, or `None` if the registry does
    /// not answer.
    fn status_of(&self, path: &str) -> Option<u16> {
        if self.ca_pem.is_some() {
            // Listening is enough: the registry answers HTTPS only.
            return TcpStream::connect(("127.0.0.1", self.port))
                .ok()
                .map(|_| 200);
        }
        let mut stream = TcpStream::connect(&self.host).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.host
        )
        .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        response.split_whitespace().nth(1)?.parse().ok()
    }

    /// Every request the registry has answered, as (method, URI), once the
    /// requests made before this call are all in the log.
    pub fn requests(&self) -> Vec<(String, String)> {
        static SENTINEL: AtomicUsize = AtomicUsize::new(0);
        let sentinel = format!(
            "/v2/sentinel-{}/tags/list",
            SENTINEL.fetch_add(1, Ordering::Relaxed)
        );
        let _ = self.status_of(&sentinel);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let requests = self.logged();
            if requests.iter().any(|(_, uri)| *uri == sentinel) {
                return requests
                    .into_iter()
                    .filter(|(_, uri)| !uri.starts_with("/v2/sentinel-") && uri != "/v2/")
                    .collect();
            }
            assert!(
                Instant::now() < deadline,
                "the registry log has no sentinel"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The requests of `requests()` for one repository.
    pub fn requests_for(&self, repository: &str) -> Vec<(String, String)> {
        let prefix = format!("/v2/{repository}/");
        self.requests()
            .into_iter()
            .filter(|(_, uri)| uri.starts_with(&prefix))
            .collect()
    }

    fn logged(&self) -> Vec<(String, String)> {
        let Ok(file) = std::fs::File::open(&self.log) else {
            return Vec::new();
        };
        std::io::BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(&line).ok())
            .filter(|v| {
                v["msg"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("response completed"))
            })
            .filter_map(|v| {
                Some((
                    v["http.request.method"].as_str()?.to_owned(),
                    v["http.request.uri"].as_str()?.to_owned(),
                ))
            })
            .collect()
    }

    /// Pushes `artifact` as `<repository>:<tag>` and returns its manifest digest.
    pub async fn push(&self, repository: &str, tag: &str, artifact: &Artifact) -> String {
        let client = Client::new(ClientConfig {
            protocol: if self.ca_pem.is_some() {
                ClientProtocol::Https
            } else {
                ClientProtocol::Http
            },
            accept_invalid_certificates: self.ca_pem.is_some(),
            ..ClientConfig::default()
        });
        let reference =
            Reference::with_tag(self.host.clone(), repository.to_owned(), tag.to_owned());
        let config = Config::new(b"{}".to_vec(), artifact.config_media_type.clone(), None);
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some("application/vnd.oci.image.manifest.v1+json".to_owned()),
            config: OciDescriptor {
                media_type: config.media_type.clone(),
                digest: config.sha256_digest(),
                size: 2,
                ..OciDescriptor::default()
            },
            layers: artifact
                .layers
                .iter()
                .map(|l| OciDescriptor {
                    media_type: l.media_type.clone(),
                    digest: l.sha256_digest(),
                    size: i64::try_from(l.data.len()).expect("small layers"),
                    annotations: l.annotations.clone(),
                    ..OciDescriptor::default()
                })
                .collect(),
            artifact_type: artifact.kind.clone(),
            ..OciImageManifest::default()
        };
        client
            .push(
                &reference,
                &artifact.layers,
                config,
                &self.auth,
                Some(manifest),
            )
            .await
            .unwrap_or_else(|e| panic!("pushing {repository}:{tag}: {e}"));
        client
            .fetch_manifest_digest(&reference, &self.auth)
            .await
            .expect("the pushed manifest has a digest")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// How a bundle's tar is compressed.
#[derive(Debug, Clone, Copy)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

/// An artifact to push.
#[derive(Clone)]
pub struct Artifact {
    /// `artifactType`, if any.
    pub kind: Option<String>,
    pub config_media_type: String,
    pub layers: Vec<ImageLayer>,
}

impl Artifact {
    /// A bundle: one tar layer holding `files`, OCI 1.1 style.
    pub fn bundle(files: &[(&str, &str)]) -> Artifact {
        Artifact::bundle_compressed(files, Compression::None)
    }

    /// A bundle whose tar is compressed.
    pub fn bundle_compressed(files: &[(&str, &str)], compression: Compression) -> Artifact {
        let entries: Vec<TarEntry> = files
            .iter()
            .map(|(name, content)| TarEntry::file(name, content.as_bytes()))
            .collect();
        Artifact::bundle_entries(&entries, compression)
    }

    /// A bundle of arbitrary tar entries.
    pub fn bundle_entries(entries: &[TarEntry], compression: Compression) -> Artifact {
        let tar = tar_of(entries);
        let data = match compression {
            Compression::None => tar,
            Compression::Gzip => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(&tar).expect("gzip");
                e.finish().expect("gzip")
            }
            Compression::Zstd => ruzstd::encoding::compress_to_vec(
                tar.as_slice(),
                ruzstd::encoding::CompressionLevel::Fastest,
            ),
        };
        Artifact {
            kind: Some(ARTIFACT_TYPE.to_owned()),
            config_media_type: EMPTY_CONFIG.to_owned(),
            layers: vec![ImageLayer::new(data, BUNDLE_LAYER.to_owned(), None)],
        }
    }

    /// One layer per file, named by its title annotation (what
    /// `oras push ref a.star b.star` produces), OCI 1.1 style.
    pub fn per_file(files: &[(&str, &str)]) -> Artifact {
        Artifact {
            kind: Some(ARTIFACT_TYPE.to_owned()),
            config_media_type: EMPTY_CONFIG.to_owned(),
            layers: files
                .iter()
                .map(|(name, content)| {
                    ImageLayer::new(
                        content.as_bytes().to_vec(),
                        "application/vnd.oci.image.layer.v1.tar".to_owned(),
                        Some([(TITLE.to_owned(), (*name).to_owned())].into()),
                    )
                })
                .collect(),
        }
    }

    /// The same artifact, typed by its config media type (older tools)
    /// instead of `artifactType`.
    pub fn typed_by_config(mut self) -> Artifact {
        self.config_media_type = self.kind.take().unwrap_or_default();
        self
    }

    /// The same artifact with another type.
    pub fn with_type(mut self, artifact_type: &str) -> Artifact {
        self.kind = Some(artifact_type.to_owned());
        self
    }

    /// The same artifact without layers.
    pub fn without_layers(mut self) -> Artifact {
        self.layers.clear();
        self
    }
}

/// One tar entry of a fixture bundle.
pub struct TarEntry {
    pub name: String,
    pub kind: tar::EntryType,
    pub content: Vec<u8>,
    pub link: Option<String>,
}

impl TarEntry {
    pub fn file(name: &str, content: &[u8]) -> TarEntry {
        TarEntry {
            name: name.to_owned(),
            kind: tar::EntryType::Regular,
            content: content.to_vec(),
            link: None,
        }
    }

    pub fn symlink(name: &str, target: &str) -> TarEntry {
        TarEntry {
            name: name.to_owned(),
            kind: tar::EntryType::Symlink,
            content: Vec::new(),
            link: Some(target.to_owned()),
        }
    }

    pub fn dir(name: &str) -> TarEntry {
        TarEntry {
            name: name.to_owned(),
            kind: tar::EntryType::Directory,
            content: Vec::new(),
            link: None,
        }
    }
}

/// A tar archive; names are written as given (`..` included), GNU long
/// names for the ones that do not fit the header.
fn tar_of(entries: &[TarEntry]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(entry.content.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(entry.kind);
        if let Some(link) = &entry.link {
            header.set_link_name(link).expect("a short link name");
        }
        let name = entry.name.as_bytes();
        assert!(name.len() < 100, "fixture names fit the header");
        header.as_old_mut().name[..name.len()].copy_from_slice(name);
        header.set_cksum();
        builder
            .append(&header, entry.content.as_slice())
            .expect("tar entries append");
    }
    builder.into_inner().expect("the tar is complete")
}
