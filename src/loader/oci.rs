//! Modules from OCI registries (docs/modules.md): resolving a request's
//! OCI load targets level by level before evaluation, fetching artifacts
//! with `oci-client`, and the process-wide caches that spare the registry.
//!
//! Caches: a tag map (artifact ref → manifest digest and expiry) and a
//! content map (manifest digest → files). Under `IfNotPresent` a cached ref
//! is never fetched again. Under `Always` a ref is revalidated with a
//! manifest HEAD once its entry is older than the TTL — and, with a TTL of
//! 0, on every request (the documented intent; the reference never
//! revalidates then). A digest already in the content map is never fetched.
//! A failed refresh serves the stale content.

pub mod credentials;
pub mod extract;
pub mod reference;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use function_sdk_rust::proto::v1::{RunFunctionRequest, credentials::Source};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use self::credentials::Keychain;
use self::extract::Layout;
use self::reference::{ArtifactRef, OciUrl, parse_url};
use super::{Target, classify, load_targets};
use crate::input::OciSettings;

/// Levels of transitive artifact dependencies resolved (0 is the scan).
pub const MAX_DEPTH: usize = 10;

/// Where mounted registry-credential secrets live.
pub const DEFAULT_SECRETS_DIR: &str = "/var/run/secrets/docker";

/// Default `--oci-connect-timeout`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default `--oci-read-timeout`.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `--oci-fetch-timeout`.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(20);

/// When a cached tag is checked with the registry again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PullPolicy {
    /// Fetch a ref once per process.
    #[default]
    IfNotPresent,
    /// Revalidate a ref once its cache entry is older than the TTL.
    Always,
}

impl FromStr for PullPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "IfNotPresent" => Ok(PullPolicy::IfNotPresent),
            "Always" => Ok(PullPolicy::Always),
            other => Err(format!(
                "invalid OCI pull policy {other:?}: must be IfNotPresent or Always"
            )),
        }
    }
}

/// Process settings of the OCI resolver.
#[derive(Debug, Clone)]
pub struct OciConfig {
    /// `--oci-pull-policy`.
    pub pull_policy: PullPolicy,
    /// `--oci-cache-ttl`; consulted under `Always` only.
    pub cache_ttl: Duration,
    /// Where `dockerConfigSecret` secrets are mounted.
    pub secrets_dir: PathBuf,
    /// The host's own Docker config, the last credential source.
    pub host_docker_config: Option<PathBuf>,
    /// `--oci-connect-timeout`: connecting to a registry.
    pub connect_timeout: Duration,
    /// `--oci-read-timeout`: each read from a registry.
    pub read_timeout: Duration,
    /// `--oci-fetch-timeout`: one artifact, manifest and layers.
    pub fetch_timeout: Duration,
}

impl Default for OciConfig {
    /// `IfNotPresent`, TTL 0, the standard secrets directory and the
    /// process's Docker config.
    fn default() -> Self {
        OciConfig {
            pull_policy: PullPolicy::IfNotPresent,
            cache_ttl: Duration::ZERO,
            secrets_dir: PathBuf::from(DEFAULT_SECRETS_DIR),
            host_docker_config: credentials::host_config_path(|k| std::env::var(k).ok()),
            connect_timeout: CONNECT_TIMEOUT,
            read_timeout: READ_TIMEOUT,
            fetch_timeout: FETCH_TIMEOUT,
        }
    }
}

/// The files of one artifact and the load targets each file names.
#[derive(Debug)]
pub struct Artifact {
    /// File path → source.
    pub files: BTreeMap<String, Arc<str>>,
    /// File path → the raw targets of its `load` statements.
    pub loads: BTreeMap<String, Vec<String>>,
}

impl Artifact {
    fn new(files: extract::Files) -> Artifact {
        let loads = files
            .iter()
            .map(|(path, text)| (path.clone(), load_targets(text)))
            .collect();
        let files = files
            .into_iter()
            .map(|(path, text)| (path, Arc::from(text)))
            .collect();
        Artifact { files, loads }
    }

    fn available(&self) -> String {
        self.files.keys().cloned().collect::<Vec<_>>().join(", ")
    }
}

#[derive(Debug, Clone)]
struct TagEntry {
    digest: String,
    expires: Instant,
}

/// Counts of registry calls, for logs and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Manifest HEADs (revalidations).
    pub heads: u64,
    /// Full fetches started (manifest GET, then blobs).
    pub fetches: u64,
}

/// The process-wide OCI resolver: settings and caches shared by every request.
#[derive(Debug, Default)]
pub struct OciResolver {
    config: OciConfig,
    tags: Mutex<Bounded<TagEntry>>,
    contents: Mutex<Bounded<Arc<Artifact>>>,
    stats: Mutex<Stats>,
}

use crate::cache::Bounded;

/// Tag → digest entries kept at most.
pub const MAX_CACHED_TAGS: usize = 1024;

/// Artifacts kept at most, and the bytes of their files in all.
pub const MAX_CACHED_ARTIFACTS: usize = 256;
/// See [`MAX_CACHED_ARTIFACTS`].
pub const MAX_CACHED_BYTES: usize = 64 << 20;

impl crate::cache::Weight for TagEntry {
    fn weight(&self) -> usize {
        self.digest.len()
    }
}

impl crate::cache::Weight for Arc<Artifact> {
    fn weight(&self) -> usize {
        self.files
            .iter()
            .map(|(path, text)| path.len() + text.len())
            .sum()
    }
}

impl Default for Bounded<TagEntry> {
    fn default() -> Self {
        Bounded::new(MAX_CACHED_TAGS, usize::MAX)
    }
}

impl Default for Bounded<Arc<Artifact>> {
    fn default() -> Self {
        Bounded::new(MAX_CACHED_ARTIFACTS, MAX_CACHED_BYTES)
    }
}

/// How a full fetch failed.
enum FetchError {
    /// The registry could not be reached or refused: stale content may serve.
    Transport(String),
    /// The artifact is not a valid module artifact: always an error.
    Invalid(String),
}

impl OciResolver {
    /// A resolver with empty caches.
    pub fn new(config: OciConfig) -> OciResolver {
        OciResolver {
            config,
            ..OciResolver::default()
        }
    }

    /// The settings.
    pub fn config(&self) -> &OciConfig {
        &self.config
    }

    /// Registry calls made so far.
    pub fn stats(&self) -> Stats {
        *lock(&self.stats)
    }

    fn cached(&self, digest: &str) -> Option<Arc<Artifact>> {
        lock(&self.contents).get(digest)
    }

    fn remember(&self, reference: &ArtifactRef, digest: &str) {
        lock(&self.tags).insert(
            reference.text.clone(),
            TagEntry {
                digest: digest.to_owned(),
                expires: Instant::now() + self.config.cache_ttl,
            },
        );
    }

    /// The files of `reference`, from the caches or the registry.
    pub async fn artifact(
        &self,
        reference: &ArtifactRef,
        access: &Access,
    ) -> Result<Arc<Artifact>, String> {
        let mut stale = None;
        let entry = lock(&self.tags).get(&reference.text);
        if let Some(entry) = entry
            && let Some(artifact) = self.cached(&entry.digest)
        {
            let fresh = match self.config.pull_policy {
                PullPolicy::IfNotPresent => true,
                PullPolicy::Always => {
                    !self.config.cache_ttl.is_zero() && Instant::now() < entry.expires
                }
            };
            if fresh {
                return Ok(artifact);
            }
            stale = Some(artifact);
        }
        if let Some(digest) = &reference.digest
            && let Some(artifact) = self.cached(digest)
        {
            self.remember(reference, digest);
            return Ok(artifact);
        }
        let remote = access.remote(reference);
        let limit = self.config.fetch_timeout;
        let late = |what: &str| {
            format!(
                "{what} {reference} from {} took longer than {}s; check the registry, or raise --oci-fetch-timeout (STARLARK_OCI_FETCH_TIMEOUT)",
                reference.registry,
                limit.as_secs()
            )
        };
        if stale.is_some() {
            lock(&self.stats).heads += 1;
            let head = tokio::time::timeout(
                limit,
                remote
                    .client
                    .fetch_manifest_digest(&remote.reference, &remote.auth),
            )
            .await
            .unwrap_or_else(|_| {
                Err(oci_client::errors::OciDistributionError::GenericError(
                    Some(late("revalidating")),
                ))
            });
            match head {
                Ok(digest) => {
                    if let Some(artifact) = self.cached(&digest) {
                        tracing::debug!(reference = %reference, digest, "OCI artifact unchanged");
                        self.remember(reference, &digest);
                        return Ok(artifact);
                    }
                }
                Err(e) => {
                    tracing::debug!(reference = %reference, error = %chain(&e), "OCI revalidation failed");
                }
            }
        }
        lock(&self.stats).fetches += 1;
        let fetched = tokio::time::timeout(limit, self.fetch(reference, &remote))
            .await
            .unwrap_or_else(|_| Err(FetchError::Transport(late("fetching"))));
        match fetched {
            Ok((digest, artifact)) => {
                let mut contents = lock(&self.contents);
                let artifact = contents.get_or_insert(digest.clone(), artifact);
                // A pinned digest that named an index is known from now on too.
                if let Some(pinned) = &reference.digest {
                    contents.get_or_insert(pinned.clone(), artifact.clone());
                }
                drop(contents);
                self.remember(reference, &digest);
                Ok(artifact)
            }
            Err(FetchError::Transport(e)) => match stale {
                Some(artifact) => {
                    tracing::info!(reference = %reference, error = %e, "cannot refresh OCI artifact; serving the cached copy");
                    Ok(artifact)
                }
                None => Err(e),
            },
            Err(FetchError::Invalid(e)) => Err(e),
        }
    }

    async fn fetch(
        &self,
        reference: &ArtifactRef,
        remote: &Remote,
    ) -> Result<(String, Arc<Artifact>), FetchError> {
        let (manifest, digest) = remote
            .client
            .pull_image_manifest(&remote.reference, &remote.auth)
            .await
            .map_err(|e| {
                FetchError::Transport(format!("fetching OCI artifact {reference}: {}", chain(&e)))
            })?;
        if let Some(artifact) = self.cached(&digest) {
            return Ok((digest, artifact));
        }
        let text = reference.text.clone();
        let files = match extract::layout(&manifest, &text).map_err(FetchError::Invalid)? {
            Layout::Bundle(layer) => {
                let blob = remote
                    .blob(&layer, extract::MAX_LAYER_BYTES, reference)
                    .await?;
                blocking(move || extract::bundle_files(&blob, &text)).await?
            }
            Layout::PerFile(layers) => {
                let mut files = extract::Files::new();
                for (name, layer) in layers {
                    // Compressed content never exceeds its decompressed
                    // size by more than a little framing.
                    let limit = extract::MAX_FILE_BYTES + (64 << 10);
                    if u64::try_from(layer.size).unwrap_or(0) > limit {
                        return Err(FetchError::Invalid(format!(
                            "file {name} in {reference} exceeds maximum size ({} bytes)",
                            extract::MAX_FILE_BYTES
                        )));
                    }
                    let blob = remote.blob(&layer, limit, reference).await?;
                    let content =
                        extract::file_content(&name, &blob, &text).map_err(FetchError::Invalid)?;
                    files.insert(name, content);
                }
                files
            }
        };
        let artifact = blocking(move || Ok(Artifact::new(files))).await?;
        tracing::debug!(reference = %reference, digest, files = artifact.files.len(), "fetched OCI artifact");
        Ok((digest, Arc::new(artifact)))
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, FetchError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| FetchError::Invalid(format!("extracting OCI artifact: {e}")))?
        .map_err(FetchError::Invalid)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An error with its causes, `: `-separated (transport errors hide the
/// useful part, such as "Connection refused", in their sources).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

/// What one request may use to reach registries: its insecure list, its
/// credential chain and its HTTP clients.
///
/// The clients (one per protocol) serve every artifact of the request and
/// keep their connections between them; they are not shared between
/// requests because a client caches the registry tokens it obtained with
/// this request's credentials.
pub struct Access {
    insecure: Vec<String>,
    keychain: Keychain,
    connect_timeout: Duration,
    read_timeout: Duration,
    http: OnceLock<Client>,
    https: OnceLock<Client>,
}

impl Access {
    /// The access of a request with `settings`, whose `credentials` may
    /// hold the Docker config named by `dockerConfigCredential`.
    pub async fn new(
        settings: &OciSettings,
        request: &RunFunctionRequest,
        config: &OciConfig,
    ) -> Access {
        let credential = settings
            .docker_config_credential
            .as_deref()
            .and_then(|name| request.credentials.get(name))
            .and_then(|c| match c.source.as_ref()? {
                Source::CredentialData(data) => Some(&data.data),
            });
        Access {
            insecure: settings.insecure_registries.clone(),
            keychain: Keychain::new(
                credential,
                &config.secrets_dir,
                settings.docker_config_secret.as_deref(),
                config.host_docker_config.as_deref(),
            )
            .await,
            connect_timeout: config.connect_timeout,
            read_timeout: config.read_timeout,
            http: OnceLock::new(),
            https: OnceLock::new(),
        }
    }

    /// A client for `reference`: plain HTTP and anonymous for listed
    /// insecure registries; plain HTTP with credentials for loopback ones;
    /// HTTPS with credentials for the rest.
    fn remote(&self, reference: &ArtifactRef) -> Remote {
        let insecure = self.insecure.contains(&reference.registry);
        let protocol = if insecure || is_loopback(&reference.registry) {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        };
        let auth = if insecure {
            RegistryAuth::Anonymous
        } else {
            self.keychain
                .auth(&reference.registry, &reference.repository)
        };
        let (slot, https) = match protocol {
            ClientProtocol::Https => (&self.https, true),
            _ => (&self.http, false),
        };
        let client = slot
            .get_or_init(|| {
                Client::new(ClientConfig {
                    protocol: if https {
                        ClientProtocol::Https
                    } else {
                        ClientProtocol::Http
                    },
                    connect_timeout: Some(self.connect_timeout),
                    read_timeout: Some(self.read_timeout),
                    ..ClientConfig::default()
                })
            })
            .clone();
        let oci_reference = match &reference.digest {
            Some(digest) => Reference::with_digest(
                reference.registry.clone(),
                reference.repository.clone(),
                digest.clone(),
            ),
            None => Reference::with_tag(
                reference.registry.clone(),
                reference.repository.clone(),
                reference.tag.clone(),
            ),
        };
        Remote {
            client,
            auth,
            reference: oci_reference,
        }
    }
}

struct Remote {
    client: Client,
    auth: RegistryAuth,
    reference: Reference,
}

impl Remote {
    /// Downloads a blob of at most `limit` bytes, checking its digest.
    async fn blob(
        &self,
        layer: &OciDescriptor,
        limit: u64,
        reference: &ArtifactRef,
    ) -> Result<Vec<u8>, FetchError> {
        if u64::try_from(layer.size).unwrap_or(0) > limit {
            return Err(FetchError::Invalid(format!(
                "reading layer {} for {reference}: the layer is larger than {limit} bytes",
                layer.digest
            )));
        }
        let mut out = Capped {
            data: Vec::new(),
            limit,
        };
        self.client
            .pull_blob(&self.reference, layer, &mut out)
            .await
            .map_err(|e| {
                FetchError::Transport(format!(
                    "reading layer {} for {reference}: {}",
                    layer.digest,
                    chain(&e)
                ))
            })?;
        Ok(out.data)
    }
}

/// A byte sink that refuses to grow past its limit.
struct Capped {
    data: Vec<u8>,
    limit: u64,
}

impl tokio::io::AsyncWrite for Capped {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if (self.data.len() + buf.len()) as u64 > self.limit {
            return std::task::Poll::Ready(Err(std::io::Error::other(format!(
                "the blob is larger than {} bytes",
                self.limit
            ))));
        }
        self.data.extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// True for `localhost`, `*.localhost`, `127.0.0.0/8` and `::1`, with or
/// without a port.
fn is_loopback(registry: &str) -> bool {
    let host = if let Some(rest) = registry.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        registry.rsplit_once(':').map_or(registry, |(h, _)| h)
    };
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// One request's resolution: the artifacts resolved so far and the
/// dependencies between them.
pub struct Resolution<'a> {
    resolver: &'a OciResolver,
    access: Access,
    default_registry: Option<&'a str>,
    artifacts: HashMap<String, Arc<Artifact>>,
    dependencies: HashMap<String, BTreeSet<String>>,
}

impl<'a> Resolution<'a> {
    /// A resolution for one request.
    pub fn new(
        resolver: &'a OciResolver,
        access: Access,
        default_registry: Option<&'a str>,
    ) -> Self {
        Resolution {
            resolver,
            access,
            default_registry,
            artifacts: HashMap::new(),
            dependencies: HashMap::new(),
        }
    }

    /// Resolves `targets` and, level by level, every artifact they depend
    /// on. Returns the module table entries: each target's file and each
    /// file an artifact refers to in itself, by full `oci://` URL.
    ///
    /// Each artifact is resolved once per request; only a real cycle (an
    /// artifact on its own dependency path) is an error.
    pub async fn resolve(
        &mut self,
        targets: Vec<OciUrl>,
    ) -> Result<Vec<(String, Arc<str>)>, String> {
        let mut entries = Vec::new();
        let mut level = targets;
        let mut depth = 0;
        loop {
            // Targets in artifacts resolved earlier need no new level.
            let mut pending = Vec::new();
            for url in level {
                match self.artifacts.get(&url.artifact.text) {
                    Some(artifact) => entries.push(file_of(artifact, &url, "file")?),
                    None => pending.push(url),
                }
            }
            if pending.is_empty() {
                break;
            }
            if depth > MAX_DEPTH {
                return Err(format!(
                    "OCI dependency resolution exceeded maximum depth ({MAX_DEPTH})"
                ));
            }
            let mut next = Vec::new();
            for (reference, urls) in group(pending) {
                let known = self.artifacts.get(&reference.text).cloned();
                let new = known.is_none();
                let artifact = if let Some(artifact) = known {
                    artifact
                } else {
                    let artifact = self.resolver.artifact(&reference, &self.access).await?;
                    self.artifacts
                        .insert(reference.text.clone(), artifact.clone());
                    artifact
                };
                for url in urls {
                    entries.push(file_of(&artifact, &url, "file")?);
                }
                if new {
                    self.scan(&reference, &artifact, &mut entries, &mut next)?;
                }
            }
            level = next;
            depth += 1;
        }
        Ok(entries)
    }

    /// Reads the load targets of every file of a newly resolved artifact:
    /// references into the artifact itself are mapped at once; others are
    /// queued for the next level (or mapped, when already resolved).
    fn scan(
        &mut self,
        reference: &ArtifactRef,
        artifact: &Artifact,
        entries: &mut Vec<(String, Arc<str>)>,
        next: &mut Vec<OciUrl>,
    ) -> Result<(), String> {
        for (path, targets) in &artifact.loads {
            let caller = format!("oci://{}/{path}", reference.text);
            for raw in targets {
                // Whatever cannot be classified or parsed is left to fail
                // when its load runs.
                let Ok(Target::Oci(url)) =
                    classify(raw, &caller, self.default_registry, &|_| false)
                else {
                    continue;
                };
                let Ok(url) = parse_url(&url) else {
                    continue;
                };
                if url.artifact.text == reference.text {
                    entries.push(file_of(artifact, &url, "package-local file")?);
                    continue;
                }
                let dependency = url.artifact.text.clone();
                self.dependencies
                    .entry(reference.text.clone())
                    .or_default()
                    .insert(dependency.clone());
                if self.reaches(&dependency, &reference.text) {
                    return Err(format!(
                        "OCI dependency cycle detected: {} -> {dependency}",
                        reference.text
                    ));
                }
                match self.artifacts.get(&dependency) {
                    Some(resolved) => entries.push(file_of(resolved, &url, "file")?),
                    None => next.push(url),
                }
            }
        }
        Ok(())
    }

    /// True when `from` depends on `to`, directly or through others.
    fn reaches(&self, from: &str, to: &str) -> bool {
        let mut stack = vec![from];
        let mut seen = BTreeSet::new();
        while let Some(at) = stack.pop() {
            if at == to {
                return true;
            }
            if !seen.insert(at) {
                continue;
            }
            if let Some(deps) = self.dependencies.get(at) {
                stack.extend(deps.iter().map(String::as_str));
            }
        }
        false
    }
}

/// Targets grouped by artifact ref, in first-seen order.
fn group(targets: Vec<OciUrl>) -> Vec<(ArtifactRef, Vec<OciUrl>)> {
    let mut groups: Vec<(ArtifactRef, Vec<OciUrl>)> = Vec::new();
    for url in targets {
        match groups.iter_mut().find(|(r, _)| r.text == url.artifact.text) {
            Some((_, urls)) => urls.push(url),
            None => groups.push((url.artifact.clone(), vec![url])),
        }
    }
    groups
}

/// The module table entry of `url`, a file of `artifact`.
fn file_of(artifact: &Artifact, url: &OciUrl, what: &str) -> Result<(String, Arc<str>), String> {
    match artifact.files.get(&url.file) {
        Some(text) => Ok((url.url.clone(), text.clone())),
        None => Err(format!(
            "{what} {} not found in OCI artifact {}; available files: {}",
            reference::quote(&url.file),
            url.artifact,
            artifact.available()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policies_are_spelled_exactly() {
        assert_eq!("IfNotPresent".parse(), Ok(PullPolicy::IfNotPresent));
        assert_eq!("Always".parse(), Ok(PullPolicy::Always));
        assert!("always".parse::<PullPolicy>().is_err());
    }

    #[test]
    fn loopback_registries_are_recognised() {
        for yes in [
            "localhost:5000",
            "localhost",
            "reg.localhost:1",
            "127.0.0.1:5000",
            "127.1.2.3",
            "[::1]:5000",
        ] {
            assert!(is_loopback(yes), "{yes}");
        }
        for no in [
            "ghcr.io",
            "10.0.0.1:5000",
            "localhost.example.com",
            "[fe80::1]:5",
        ] {
            assert!(!is_loopback(no), "{no}");
        }
    }

    #[test]
    fn errors_show_their_causes() {
        let inner = std::io::Error::other("Connection refused");
        let outer = std::io::Error::other(Box::new(inner));
        assert_eq!(chain(&outer), "Connection refused");
    }

    #[tokio::test]
    async fn an_https_registry_that_does_not_answer_is_a_transport_error() {
        // A listener that closes every connection: TLS cannot start.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(4) {
                drop(stream);
            }
        });
        let client = Client::new(ClientConfig {
            protocol: ClientProtocol::Https,
            ..ClientConfig::default()
        });
        let reference =
            Reference::with_tag(format!("127.0.0.1:{port}"), "mods".into(), "v1".into());
        let err = client
            .pull_image_manifest(&reference, &RegistryAuth::Anonymous)
            .await
            .unwrap_err();
        assert!(!chain(&err).is_empty());
    }
}
