//! What the load and hostile benchmarks share: a client that sends
//! pre-encoded requests and keeps answers as bytes, starting a function
//! binary on loopback, and reading its memory (with its worker processes).

#![allow(
    dead_code,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

pub mod h2_client;
pub mod hostile;
pub mod workloads;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes};
use function_sdk_rust::proto::v1::{Resource, RunFunctionRequest, State};
use prost::Message;
use serde_json::{Value, json};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Status, codegen::http::uri::PathAndQuery};

const METHOD: &str = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction";

/// Sends bytes as they are and keeps the answer as bytes.
#[derive(Clone, Copy, Default)]
pub struct RawCodec;

pub struct RawEncoder;
pub struct RawDecoder;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

impl Encoder for RawEncoder {
    type Item = Bytes;
    type Error = Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

pub fn to_struct(v: &Value) -> pbjson_types::Struct {
    let Value::Object(m) = v else {
        unreachable!("request bodies are objects")
    };
    function_sdk_rust::resource::json_to_struct(m)
}

pub fn xr() -> Value {
    json!({
        "apiVersion": "example.org/v1",
        "kind": "XBench",
        "metadata": {"name": "bench", "labels": {"crossplane.io/claim-name": "bench"}},
        "spec": {"region": "eu-west-1", "team": "platform", "env": "prod"},
    })
}

/// A request running `source` with inline `modules` (or `Value::Null`)
/// and `observed` composed resources, encoded.
pub fn request(source: &str, modules: &Value, observed: Vec<(String, Value)>) -> Bytes {
    let mut input = json!({
        "apiVersion": "starlark.fn.crossplane.io/v1alpha1",
        "kind": "StarlarkInput",
        "spec": {"source": source},
    });
    if !modules.is_null() {
        input["spec"]["modules"] = modules.clone();
    }
    let request = RunFunctionRequest {
        input: Some(to_struct(&input)),
        observed: Some(State {
            composite: Some(Resource {
                resource: Some(to_struct(&xr())),
                ..Resource::default()
            }),
            resources: observed
                .into_iter()
                .map(|(name, body)| {
                    (
                        name,
                        Resource {
                            resource: Some(to_struct(&body)),
                            ..Resource::default()
                        },
                    )
                })
                .collect(),
        }),
        ..RunFunctionRequest::default()
    };
    Bytes::from(request.encode_to_vec())
}

/// The encoding of a RunFunctionRequest whose only field is an observed
/// composite nesting `maps` maps (`{"a": {"a": ...}}`) around `lists`
/// nested lists around a string. Appended to another request's encoding
/// that has no observed state, it becomes that request's observed state
/// (protobuf merges concatenated messages).
///
/// Written level by level, inside out: prost would compute each level's
/// length by walking everything below it, quadratic in the depth, which a
/// debug build takes tens of seconds over at the depths the limit sits at.
pub fn deep_observed(maps: usize, lists: usize) -> Vec<u8> {
    fn field(tag: u32, payload: &[u8]) -> Vec<u8> {
        use prost::encoding::{WireType, encode_key, encode_varint};
        let mut out = Vec::with_capacity(payload.len() + 8);
        encode_key(tag, WireType::LengthDelimited, &mut out);
        encode_varint(payload.len() as u64, &mut out);
        out.extend_from_slice(payload);
        out
    }
    // google.protobuf: Value.string_value = 3, .struct_value = 5,
    // .list_value = 6; ListValue.values = 1; Struct.fields = 1 (entries of
    // key = 1, value = 2).
    let mut value = field(3, b"leaf");
    for _ in 0..lists {
        value = field(6, &field(1, &value));
    }
    let entry = |key: &[u8], value: &[u8]| [field(1, key), field(2, value)].concat();
    let mut body = field(1, &entry(b"v", &value));
    for _ in 1..maps {
        body = field(1, &entry(b"a", &field(5, &body)));
    }
    // RunFunctionRequest.observed = 2, State.composite = 1,
    // Resource.resource = 1.
    field(2, &field(1, &field(1, &body)))
}

/// A function process, killed when dropped.
pub struct Server {
    pub child: Child,
    pub address: String,
    /// From exec to the first answered request.
    pub started_in: Duration,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// This function's binary: `THIS`, or the one cargo built.
pub fn this_binary() -> PathBuf {
    std::env::var_os("THIS").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_function-starlark")),
        PathBuf::from,
    )
}

/// Starts `binary` on loopback with `args` and waits until it answers.
pub fn start(binary: &Path, args: &[String]) -> Server {
    let address = format!("127.0.0.1:{}", free_port());
    let spawned = Instant::now();
    // `BENCH_SERVER_LOG=<file>` keeps what the server logs.
    let log = std::env::var_os("BENCH_SERVER_LOG")
        .and_then(|path| std::fs::File::create(path).ok())
        .map_or_else(Stdio::null, Stdio::from);
    let transport: Vec<String> = pki().map_or_else(
        || vec!["--insecure".to_owned()],
        |p| {
            vec![
                "--tls-certs-dir".to_owned(),
                p.server_dir().display().to_string(),
            ]
        },
    );
    let child = Command::new(binary)
        .args(&transport)
        .args(["--address", &address])
        .args(args)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
    let mut server = Server {
        child,
        address,
        started_in: Duration::ZERO,
    };
    let rt = runtime();
    let floor = request("x = 1\n", &Value::Null, Vec::new());
    rt.block_on(async {
        loop {
            assert!(
                spawned.elapsed() < Duration::from_secs(30),
                "{} did not answer in time",
                binary.display()
            );
            if let Ok(channel) = connect(&server.address).await
                && call(channel, floor.clone()).await.is_ok()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    server.started_in = spawned.elapsed();
    server
}

/// The flags this function is started with: its own metrics port, and
/// `BENCH_ARGS`.
pub fn our_args() -> Vec<String> {
    let mut args = vec![
        "--metrics-address".to_owned(),
        format!("127.0.0.1:{}", free_port()),
    ];
    if let Ok(extra) = std::env::var("BENCH_ARGS") {
        args.extend(extra.split_whitespace().map(str::to_owned));
    }
    args
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

pub async fn connect(address: &str) -> Result<Channel, tonic::transport::Error> {
    if let Some(pki) = pki() {
        let tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&pki.ca))
            .identity(Identity::from_pem(&pki.client.0, &pki.client.1))
            .domain_name("localhost");
        return Endpoint::from_shared(format!("https://{address}"))
            .expect("a valid endpoint")
            .tcp_nodelay(true)
            .tls_config(tls)?
            .connect()
            .await;
    }
    Endpoint::from_shared(format!("http://{address}"))
        .expect("a valid endpoint")
        .tcp_nodelay(true)
        .connect()
        .await
}

/// The certificates of an mTLS run (`BENCH_TLS=1`), laid out as Crossplane
/// mounts them: `server/` for the functions (`--tls-certs-dir`),
/// `client/` for the caller, each with tls.crt, tls.key and ca.crt.
pub struct Pki {
    pub dir: PathBuf,
    pub ca: String,
    pub client: (String, String),
}

impl Pki {
    pub fn server_dir(&self) -> PathBuf {
        self.dir.join("server")
    }

    pub fn client_dir(&self) -> PathBuf {
        self.dir.join("client")
    }
}

/// A CA and two certificates it signed, PEM: the server's (for `localhost`
/// and `127.0.0.1`) and a client's, each with its key.
pub struct Certificates {
    pub ca: String,
    pub server: (String, String),
    pub client: (String, String),
}

/// Fresh certificates for an mTLS server and its client.
pub fn certificates() -> Certificates {
    let ca_key = rcgen::KeyPair::generate().expect("a CA key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params
        .self_signed(&ca_key)
        .expect("a CA certificate")
        .pem();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf = |names: Vec<String>| {
        let key = rcgen::KeyPair::generate().expect("a key");
        let cert = rcgen::CertificateParams::new(names)
            .expect("leaf params")
            .signed_by(&key, &issuer)
            .expect("a signed certificate");
        (cert.pem(), key.serialize_pem())
    };
    Certificates {
        ca,
        server: leaf(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]),
        client: leaf(vec!["crossplane".to_owned()]),
    }
}

/// The run's certificates when `BENCH_TLS=1`, made once.
pub fn pki() -> Option<&'static Pki> {
    static PKI: std::sync::OnceLock<Option<Pki>> = std::sync::OnceLock::new();
    PKI.get_or_init(|| {
        if std::env::var("BENCH_TLS").as_deref() != Ok("1") {
            return None;
        }
        let Certificates { ca, server, client } = certificates();
        let dir = std::env::temp_dir().join(format!("bench-pki-{}", std::process::id()));
        for (sub, (cert, key)) in [("server", &server), ("client", &client)] {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d).expect("a certificate folder");
            std::fs::write(d.join("tls.crt"), cert).expect("tls.crt");
            std::fs::write(d.join("tls.key"), key).expect("tls.key");
            std::fs::write(d.join("ca.crt"), &ca).expect("ca.crt");
        }
        Some(Pki { dir, ca, client })
    })
    .as_ref()
}

pub async fn call(channel: Channel, request: Bytes) -> Result<Bytes, Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    grpc.unary(
        tonic::Request::new(request),
        PathAndQuery::from_static(METHOD),
        RawCodec,
    )
    .await
    .map(tonic::Response::into_inner)
}

/// The processes of the tree rooted at `pid` (the server and its workers).
pub fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut i = 0;
    while i < all.len() {
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", all[i])) {
            for task in tasks.flatten() {
                if let Ok(children) = std::fs::read_to_string(task.path().join("children")) {
                    all.extend(
                        children
                            .split_whitespace()
                            .filter_map(|n| n.parse::<u32>().ok()),
                    );
                }
            }
        }
        i += 1;
    }
    all
}

/// A field of `/proc/<pid>/smaps_rollup`, in KiB.
fn rollup(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// CPU time (user and system) spent by the tree rooted at `pid`, and by
/// the workers it has reaped, in microseconds.
pub fn cpu_micros(pid: u32) -> u64 {
    let tick_micros = 1_000_000 / rustix::param::clock_ticks_per_second().max(1);
    tree(pid)
        .into_iter()
        .map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            // After the command name (which may hold spaces): state, then
            // fields 4 on; utime, stime, cutime, cstime are fields 14-17.
            let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            rest.split_whitespace()
                .skip(11)
                .take(4)
                .filter_map(|n| n.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum::<u64>()
        * tick_micros
}

/// CPU time this thread has run, in nanoseconds (the scheduler's own
/// count, finer than the clock ticks of `/proc/<pid>/stat`).
pub fn thread_cpu_nanos() -> u64 {
    schedstat_nanos("/proc/thread-self/schedstat")
}

/// CPU time every thread of this process has run, in nanoseconds.
pub fn process_cpu_nanos() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
        .map(|task| schedstat_nanos(task.path().join("schedstat")))
        .sum()
}

/// The first field of a `schedstat` file: nanoseconds on a CPU.
fn schedstat_nanos(path: impl AsRef<Path>) -> u64 {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Context switches (voluntary and not) of every thread of the tree
/// rooted at `pid`: each is a thread that slept and was woken, or was
/// preempted.
pub fn context_switches(pid: u32) -> u64 {
    tree(pid)
        .into_iter()
        .flat_map(|p| {
            std::fs::read_dir(format!("/proc/{p}/task"))
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|task| {
            std::fs::read_to_string(task.path().join("status"))
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

/// Memory of a process tree now, in KiB: `(RSS, PSS)`. PSS splits each
/// page shared by several processes (the binary's code in the server and
/// its workers) among them; for a single process it is about its RSS.
pub fn memory_kib(pid: u32) -> (u64, u64) {
    tree(pid).into_iter().fold((0, 0), |(rss, pss), p| {
        (rss + rollup(p, "Rss:"), pss + rollup(p, "Pss:"))
    })
}

/// Resident memory of a process tree now, in KiB, from `statm`: cheap
/// to read, unlike `smaps_rollup`, which walks the process's page tables
/// (about 0.3 ms a process on the benchmark machine) and holds its memory
/// map lock meanwhile.
pub fn resident_kib(pid: u32) -> u64 {
    tree(pid).into_iter().map(process_resident_kib).sum()
}

/// Resident memory of one process now, in KiB, from `statm` (0 once it
/// has gone).
pub fn process_resident_kib(pid: u32) -> u64 {
    let page_kib = rustix::param::page_size() as u64 / 1024;
    std::fs::read_to_string(format!("/proc/{pid}/statm"))
        .unwrap_or_default()
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0)
        * page_kib
}

/// Samples a process tree's memory until dropped and keeps the peaks:
/// resident memory every 20 ms, and PSS whenever resident memory reaches
/// a new high (reading PSS every time stalled the servers measured: the
/// tails of latency at concurrency 1 were the sampler's).
pub struct Sampler {
    stop: Arc<AtomicBool>,
    resident: Arc<AtomicU64>,
    proportional: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    pub fn start(pid: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let resident = Arc::new(AtomicU64::new(0));
        let proportional = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, resident, proportional) =
                (stop.clone(), resident.clone(), proportional.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let rss = resident_kib(pid);
                    if rss > resident.fetch_max(rss, Ordering::Relaxed) {
                        let (_, pss) = memory_kib(pid);
                        proportional.fetch_max(pss, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        Sampler {
            stop,
            resident,
            proportional,
            thread: Some(thread),
        }
    }

    /// The peaks so far, in KiB: `(RSS, PSS)`.
    pub fn peaks(&self) -> (u64, u64) {
        (
            self.resident.load(Ordering::Relaxed),
            self.proportional.load(Ordering::Relaxed),
        )
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}
