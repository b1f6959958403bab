//! The Prometheus endpoint: `GET /metrics` on its own plain-HTTP listener,
//! as Go functions serve it. OpenMetrics text by default; the classic
//! Prometheus text for a scraper that asks for `text/plain` only.

use std::sync::Arc;

use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const CLASSIC: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Serves `registry` at `address` (`:8080` means every interface) until
/// the process ends.
pub async fn serve(address: &str, registry: Arc<Registry>) -> std::io::Result<()> {
    let address = match address.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => address.to_owned(),
    };
    let listener = tokio::net::TcpListener::bind(&address).await?;
    tracing::info!(%address, "serving metrics");
    loop {
        let Ok((mut conn, _)) = listener.accept().await else {
            continue;
        };
        let registry = registry.clone();
        tokio::spawn(async move {
            let mut head = [0u8; 2048];
            let read =
                tokio::time::timeout(std::time::Duration::from_secs(5), conn.read(&mut head));
            let Ok(Ok(n)) = read.await else { return };
            let head = String::from_utf8_lossy(&head[..n]);
            let response = answer(&head, &registry);
            let _ = conn.write_all(response.as_bytes()).await;
        });
    }
}

/// The HTTP response to a request whose head is `head`.
fn answer(head: &str, registry: &Registry) -> String {
    let path = head.split_whitespace().nth(1).unwrap_or_default();
    if path != "/metrics" {
        return "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            .to_owned();
    }
    let mut body = String::new();
    let _ = prometheus_client::encoding::text::encode(&mut body, registry);
    let (body, content_type) = if wants_classic(head) {
        (classic(&body), CLASSIC)
    } else {
        (body, OPENMETRICS)
    };
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Whether the Accept header takes `text/plain` and not OpenMetrics.
fn wants_classic(head: &str) -> bool {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("accept"))
        .is_some_and(|(_, v)| v.contains("text/plain") && !v.contains("openmetrics"))
}

/// The classic text of an OpenMetrics rendering: counters are declared
/// under their `_total` name and there is no `# EOF`.
fn classic(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines().filter(|l| *l != "# EOF") {
        let declared = line
            .strip_prefix("# TYPE ")
            .map(|r| ("# TYPE ", r))
            .or_else(|| line.strip_prefix("# HELP ").map(|r| ("# HELP ", r)));
        match declared.and_then(|(kind, rest)| Some((kind, rest.split_once(' ')?))) {
            Some((kind, (name, tail))) if counters.contains(name) => {
                out.push_str(kind);
                out.push_str(name);
                out.push_str("_total ");
                out.push_str(tail);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::metrics::counter::Counter;

    #[test]
    fn metrics_are_openmetrics_unless_plain_text_is_asked_for() {
        let mut registry = Registry::default();
        let c: Counter = Counter::default();
        registry.register("things", "Things done", c.clone());
        c.inc();
        let om = answer("GET /metrics HTTP/1.1\r\n\r\n", &registry);
        assert!(
            om.contains(OPENMETRICS)
                && om.contains("# TYPE things counter")
                && om.ends_with("# EOF\n"),
            "{om}"
        );
        let text = answer(
            "GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n",
            &registry,
        );
        assert!(
            text.contains("# TYPE things_total counter")
                && text.contains("things_total 1")
                && !text.contains("# EOF"),
            "{text}"
        );
        assert!(answer("GET / HTTP/1.1\r\n\r\n", &registry).starts_with("HTTP/1.1 404"));
    }
}
