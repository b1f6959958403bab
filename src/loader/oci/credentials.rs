//! Registry credentials (docs/modules.md, "Credentials"): a chain of Docker
//! config files — the request's credential, a mounted secret, the host's
//! own config — asked in order; the first that has credentials for a
//! registry wins.
//! Problems with a source never fail a request: the source is skipped.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

use super::reference::DOCKER_HUB;

/// One Docker config's `auths` section.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

#[derive(Debug, Default, Clone, Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
}

impl DockerConfig {
    /// Parses a config; `None` when it is not a Docker config.
    pub fn parse(bytes: &[u8]) -> Option<DockerConfig> {
        serde_json::from_slice(bytes).ok()
    }

    /// Reads and parses the config at `path`, if it is there and valid
    /// (without blocking an async thread).
    pub async fn read(path: &Path) -> Option<DockerConfig> {
        DockerConfig::parse(&tokio::fs::read(path).await.ok()?)
    }

    /// The credentials this config has for `registry/repository`: an entry
    /// keyed by the exact repository first, then one for the registry host.
    pub fn lookup(&self, registry: &str, repository: &str) -> Option<RegistryAuth> {
        let exact = format!("{registry}/{repository}");
        let by_repository = self
            .auths
            .iter()
            .find(|(key, _)| strip_scheme(key).trim_end_matches('/') == exact)
            .map(|(_, e)| e);
        let by_host = || {
            self.auths
                .iter()
                .find(|(key, _)| host_of(key) == registry)
                .map(|(_, e)| e)
        };
        by_repository
            .and_then(AuthEntry::auth)
            .or_else(|| by_host().and_then(AuthEntry::auth))
    }
}

impl AuthEntry {
    /// The entry as credentials; `None` when it holds none.
    fn auth(&self) -> Option<RegistryAuth> {
        let non_empty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
        if let Some(token) = non_empty(&self.registrytoken) {
            return Some(RegistryAuth::Bearer(token));
        }
        let mut username = non_empty(&self.username);
        let mut password = non_empty(&self.password);
        if let Some(encoded) = non_empty(&self.auth)
            && let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim())
            && let Ok(decoded) = String::from_utf8(decoded)
            && let Some((user, pass)) = decoded.split_once(':')
        {
            username = username.or_else(|| Some(user.to_owned()).filter(|u| !u.is_empty()));
            password = password.or_else(|| Some(pass.to_owned()).filter(|p| !p.is_empty()));
        }
        // An identity token is a refresh token: it is presented to the
        // registry's token service as the password.
        if let Some(token) = non_empty(&self.identitytoken) {
            return Some(RegistryAuth::Basic(
                username.unwrap_or_else(|| "<token>".to_owned()),
                token,
            ));
        }
        match (username, password) {
            (Some(u), Some(p)) => Some(RegistryAuth::Basic(u, p)),
            _ => None,
        }
    }
}

fn strip_scheme(key: &str) -> &str {
    key.strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key)
}

/// The registry host a config key names: `https://ghcr.io`, `ghcr.io/v1/`
/// and `ghcr.io` all name `ghcr.io`; Docker Hub's spellings name
/// `index.docker.io`.
fn host_of(key: &str) -> &str {
    let host = strip_scheme(key).split('/').next().unwrap_or_default();
    match host {
        "docker.io" | "registry-1.docker.io" => DOCKER_HUB,
        other => other,
    }
}

/// The credential sources of one request, in the order they are asked.
#[derive(Debug, Default, Clone)]
pub struct Keychain {
    sources: Vec<DockerConfig>,
}

impl Keychain {
    /// Builds the chain: the request credential's config (`config.json`,
    /// else `.dockerconfigjson`), then the mounted secret
    /// `<secrets_dir>/<secret>/config.json`, then the host's config.
    pub async fn new(
        request_credential: Option<&HashMap<String, Vec<u8>>>,
        secrets_dir: &Path,
        secret: Option<&str>,
        host_config: Option<&Path>,
    ) -> Keychain {
        let mut sources = Vec::new();
        if let Some(data) = request_credential
            && let Some(bytes) = data
                .get("config.json")
                .or_else(|| data.get(".dockerconfigjson"))
            && let Some(config) = DockerConfig::parse(bytes)
        {
            sources.push(config);
        }
        if let Some(name) = secret
            && crate::input::stays_inside(name)
        {
            let dir = secrets_dir.join(name);
            if tokio::fs::metadata(&dir).await.is_ok_and(|m| m.is_dir())
                && let Some(config) = DockerConfig::read(&dir.join("config.json")).await
            {
                sources.push(config);
            }
        }
        if let Some(path) = host_config
            && let Some(config) = DockerConfig::read(path).await
        {
            sources.push(config);
        }
        Keychain { sources }
    }

    /// The first source's credentials for `registry/repository`, else anonymous.
    pub fn auth(&self, registry: &str, repository: &str) -> RegistryAuth {
        self.sources
            .iter()
            .find_map(|s| s.lookup(registry, repository))
            .unwrap_or(RegistryAuth::Anonymous)
    }
}

/// The host's Docker config: `$DOCKER_CONFIG/config.json`, else
/// `$HOME/.docker/config.json`.
pub fn host_config_path(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(dir) = env("DOCKER_CONFIG").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    env("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| PathBuf::from(home).join(".docker").join("config.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(user: &str, pass: &str) -> RegistryAuth {
        RegistryAuth::Basic(user.to_owned(), pass.to_owned())
    }

    fn same(a: &RegistryAuth, b: &RegistryAuth) -> bool {
        match (a, b) {
            (RegistryAuth::Anonymous, RegistryAuth::Anonymous) => true,
            (RegistryAuth::Basic(u1, p1), RegistryAuth::Basic(u2, p2)) => u1 == u2 && p1 == p2,
            (RegistryAuth::Bearer(t1), RegistryAuth::Bearer(t2)) => t1 == t2,
            _ => false,
        }
    }

    #[test]
    fn every_credential_field_is_understood() {
        let config = DockerConfig::parse(
            br#"{"auths": {
                "https://ghcr.io": {"auth": "dXNlcjpwYXNz"},
                "quay.io/v1/": {"username": "u", "password": "p"},
                "acr.example.io": {"username": "00000000", "identitytoken": "refresh"},
                "reg.example.io": {"registrytoken": "bearer"},
                "https://index.docker.io/v1/": {"auth": "aHViOnNlY3JldA=="},
                "empty.example.io": {}
            }}"#,
        )
        .unwrap();
        assert!(same(
            &config.lookup("ghcr.io", "a/b").unwrap(),
            &basic("user", "pass")
        ));
        assert!(same(
            &config.lookup("quay.io", "a/b").unwrap(),
            &basic("u", "p")
        ));
        assert!(same(
            &config.lookup("acr.example.io", "a").unwrap(),
            &basic("00000000", "refresh")
        ));
        assert!(same(
            &config.lookup("reg.example.io", "a").unwrap(),
            &RegistryAuth::Bearer("bearer".into())
        ));
        assert!(same(
            &config.lookup("index.docker.io", "library/x").unwrap(),
            &basic("hub", "secret")
        ));
        assert!(config.lookup("empty.example.io", "a").is_none());
        assert!(config.lookup("other.io", "a").is_none());
    }

    #[test]
    fn a_repository_entry_wins_over_its_host() {
        let config = DockerConfig::parse(
            br#"{"auths": {"ghcr.io": {"username": "host", "password": "h"}, "ghcr.io/acme/lib": {"username": "repo", "password": "r"}}}"#,
        )
        .unwrap();
        assert!(same(
            &config.lookup("ghcr.io", "acme/lib").unwrap(),
            &basic("repo", "r")
        ));
        assert!(same(
            &config.lookup("ghcr.io", "acme/other").unwrap(),
            &basic("host", "h")
        ));
    }

    #[tokio::test]
    async fn the_chain_asks_its_sources_in_order_and_skips_unusable_ones() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("regcred");
        std::fs::create_dir(&secret).unwrap();
        std::fs::write(
            secret.join("config.json"),
            r#"{"auths": {"r.io": {"username": "secret", "password": "s"}, "s.io": {"username": "secret", "password": "s"}}}"#,
        )
        .unwrap();
        let request: HashMap<String, Vec<u8>> = [(
            ".dockerconfigjson".to_owned(),
            br#"{"auths": {"r.io": {"username": "request", "password": "q"}}}"#.to_vec(),
        )]
        .into();
        let chain = Keychain::new(Some(&request), dir.path(), Some("regcred"), None).await;
        assert!(same(&chain.auth("r.io", "a/b"), &basic("request", "q")));
        assert!(same(&chain.auth("s.io", "a/b"), &basic("secret", "s")));
        assert!(same(&chain.auth("t.io", "a/b"), &RegistryAuth::Anonymous));
        for bad in ["../regcred", "/etc", "", "missing"] {
            let chain = Keychain::new(None, dir.path(), Some(bad), None).await;
            assert!(
                same(&chain.auth("s.io", "a/b"), &RegistryAuth::Anonymous),
                "{bad}"
            );
        }
        let garbage: HashMap<String, Vec<u8>> =
            [("config.json".to_owned(), b"not json".to_vec())].into();
        let chain = Keychain::new(Some(&garbage), dir.path(), Some("regcred"), None).await;
        assert!(same(&chain.auth("r.io", "a/b"), &basic("secret", "s")));
    }

    #[test]
    fn the_host_config_comes_from_docker_config_or_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(
            host_config_path(env(&[("DOCKER_CONFIG", "/d"), ("HOME", "/h")])),
            Some(PathBuf::from("/d/config.json"))
        );
        assert_eq!(
            host_config_path(env(&[("HOME", "/h")])),
            Some(PathBuf::from("/h/.docker/config.json"))
        );
        assert_eq!(host_config_path(env(&[])), None);
    }
}
