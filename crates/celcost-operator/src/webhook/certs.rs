//! The admission webhook's serving certificate: the operator's own CA and a serving certificate
//! signed by it, kept in a Secret of its namespace and rotated, the webhook configuration's
//! `caBundle` kept current, and the TLS server's certificate swapped without a restart — as
//! controller-runtime's cert rotator and Gatekeeper's cert-controller do.
//!
//! - **The Secret** (`celcost-webhook-tls`, type `kubernetes.io/tls`): `tls.crt`, `tls.key` (the
//!   serving certificate and key), `ca.crt` (the CA bundle the API server trusts: the current CA
//!   first, then the previous one while it is valid) and `ca.key` (the current CA's key).
//! - **Lifetimes**: the CA 1 year, the serving certificate 90 days (never beyond its CA). Each is
//!   replaced at 2/3 of its lifetime, and the serving certificate also when it lacks a SAN the
//!   webhook needs (`<service>.<namespace>.svc`, the `--webhook-url` host), was not signed by
//!   the current CA, or does not match its key.
//! - **Every replica** runs [`run`]: it reads the Secret every `--webhook-cert-refresh-seconds`,
//!   renews what needs renewing, loads the serving certificate into its TLS server
//!   ([`CertResolver`], no restart) and patches `caBundle` when it differs. Two replicas racing
//!   are settled by the API server: a create of an existing Secret fails with 409
//!   (AlreadyExists) and a replace with a stale `resourceVersion` with 409 (Conflict); the loser
//!   reads the winner's Secret and uses it.
//! - **CA rotation** keeps the previous CA in `ca.crt` (and so in `caBundle`) until it expires:
//!   replicas still serving a certificate of the old CA stay trusted until they reload.
//! - With `--webhook-manage-certificates=false` (cert-manager writes the Secret and its
//!   cainjector the `caBundle`) the operator only reads the Secret and reloads it.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde_json::json;
use tracing::{debug, info, warn};

use crate::backoff::Backoff;

/// Keys of the Secret.
pub const CA_CERT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";
pub const TLS_CERT: &str = "tls.crt";
pub const TLS_KEY: &str = "tls.key";

const DAY: i64 = 86_400;
/// Certificates start this much before their issue, for clocks a little behind ours.
const BACKDATE: i64 = 3_600;
/// Timeout of each API request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Attempts of one sync against conflicting writers.
const ATTEMPTS: usize = 5;

/// Errors of the certificate handling.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("{0}: {1}")]
    Kube(&'static str, #[source] kube::Error),
    #[error("{0}: timed out after {1:?}")]
    Timeout(&'static str, Duration),
    #[error("certificate: {0}")]
    Cert(String),
    #[error(
        "the Secret {0} has no usable serving certificate, and --webhook-manage-certificates=false \
         (cert-manager, or whoever provides it, has not written it yet?)"
    )]
    NotProvided(String),
    #[error(
        "the ValidatingWebhookConfiguration {0} does not exist: install it (`kubectl apply -k \
         config/default`) or run with --webhook=false"
    )]
    NoConfiguration(String),
    #[error("gave up after {0} conflicting writes")]
    Conflicts(usize),
}

impl From<rcgen::Error> for CertError {
    fn from(e: rcgen::Error) -> Self {
        CertError::Cert(e.to_string())
    }
}

/// What the certificate handling needs to know.
#[derive(Clone, Debug)]
pub struct CertSettings {
    /// The operator's namespace, where the Secret lives.
    pub namespace: String,
    pub secret: String,
    /// The ValidatingWebhookConfiguration whose `caBundle` (and, with `url`, `clientConfig.url`)
    /// is kept current.
    pub configuration: String,
    /// The SANs the serving certificate must have.
    pub hosts: Vec<String>,
    /// `--webhook-url`: the API server calls this URL instead of the Service.
    pub url: Option<String>,
    /// Create and rotate the certificates and patch `caBundle`; false: only read the Secret.
    pub manage: bool,
    pub ca_validity: Duration,
    pub cert_validity: Duration,
    /// How often every replica reads the Secret (and the configuration).
    pub refresh: Duration,
}

impl CertSettings {
    /// Defaults for the Service `service` in `namespace`.
    pub fn new(namespace: &str, service: &str) -> Self {
        CertSettings {
            namespace: namespace.to_string(),
            secret: "celcost-webhook-tls".to_string(),
            configuration: "celcost".to_string(),
            hosts: service_hosts(service, namespace),
            url: None,
            manage: true,
            ca_validity: Duration::from_secs(365 * DAY as u64),
            cert_validity: Duration::from_secs(90 * DAY as u64),
            refresh: Duration::from_secs(60),
        }
    }

    /// Uses `url` (`https://127.0.0.1:9443/validate`) in the configuration, and its host as a
    /// SAN.
    pub fn with_url(mut self, url: &str) -> Result<Self, String> {
        let host = url_host(url)?;
        if !self.hosts.contains(&host) {
            self.hosts.push(host);
        }
        self.url = Some(url.to_string());
        Ok(self)
    }
}

/// The names the API server may use to reach the Service: it connects to
/// `<service>.<namespace>.svc` and checks the certificate for that name.
pub fn service_hosts(service: &str, namespace: &str) -> Vec<String> {
    vec![
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

/// The host of an `https://` URL (an IP address without brackets).
pub fn url_host(url: &str) -> Result<String, String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("the webhook URL must start with https:// (got {url:?})"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        authority.split(':').next().unwrap_or_default()
    };
    if host.is_empty() || authority.contains('@') {
        return Err(format!(
            "the webhook URL has no host (or has user info): {url:?}"
        ));
    }
    Ok(host.to_ascii_lowercase())
}

/// The PEM texts of the Secret.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Material {
    /// The CA bundle: the current CA first.
    pub ca_bundle: String,
    pub ca_key: String,
    pub cert: String,
    pub key: String,
}

impl Material {
    pub fn from_secret(s: &Secret) -> Material {
        let get = |k: &str| {
            s.data
                .as_ref()
                .and_then(|d| d.get(k))
                .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                .unwrap_or_default()
        };
        Material {
            ca_bundle: get(CA_CERT),
            ca_key: get(CA_KEY),
            cert: get(TLS_CERT),
            key: get(TLS_KEY),
        }
    }

    /// Writes the four keys into `data`, keeping any others.
    fn write_to(&self, data: &mut BTreeMap<String, ByteString>) {
        for (k, v) in [
            (CA_CERT, &self.ca_bundle),
            (CA_KEY, &self.ca_key),
            (TLS_CERT, &self.cert),
            (TLS_KEY, &self.key),
        ] {
            data.insert(k.to_string(), ByteString(v.as_bytes().to_vec()));
        }
    }
}

/// Why the Secret's material must be replaced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// A new CA (and a serving certificate signed by it).
    Ca(String),
    /// A new serving certificate from the current CA.
    Serving(String),
}

impl std::fmt::Display for Renewal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Renewal::Ca(why) => write!(f, "new CA and serving certificate: {why}"),
            Renewal::Serving(why) => write!(f, "new serving certificate: {why}"),
        }
    }
}

/// The validity of a parsed certificate, in Unix seconds.
#[derive(Clone, Copy, Debug)]
struct Validity {
    not_before: i64,
    not_after: i64,
}

impl Validity {
    /// When it is due for renewal: at 2/3 of its lifetime.
    fn renew_at(self) -> i64 {
        self.not_before + (self.not_after - self.not_before) * 2 / 3
    }
}

fn validity(c: &x509_parser::certificate::X509Certificate<'_>) -> Validity {
    Validity {
        not_before: c.validity().not_before.timestamp(),
        not_after: c.validity().not_after.timestamp(),
    }
}

fn first_cert(pem: &str) -> Option<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .and_then(Result::ok)
}

fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .filter_map(Result::ok)
        .collect()
}

fn key_matches(key: &KeyPair, c: &x509_parser::certificate::X509Certificate<'_>) -> bool {
    key.public_key_raw() == c.public_key().subject_public_key.data.as_ref()
}

fn has_san(c: &x509_parser::certificate::X509Certificate<'_>, host: &str) -> bool {
    use x509_parser::extensions::GeneralName;
    let Ok(Some(san)) = c.subject_alternative_name() else {
        return false;
    };
    let ip: Option<IpAddr> = host.parse().ok();
    san.value.general_names.iter().any(|n| match (n, ip) {
        (GeneralName::DNSName(d), None) => d.eq_ignore_ascii_case(host),
        (GeneralName::IPAddress(b), Some(IpAddr::V4(v4))) => *b == v4.octets(),
        (GeneralName::IPAddress(b), Some(IpAddr::V6(v6))) => *b == v6.octets(),
        _ => false,
    })
}

/// Why `m` must be renewed at `now` for `hosts`, if it must.
pub fn check(m: &Material, hosts: &[String], now: i64) -> Option<Renewal> {
    use x509_parser::parse_x509_certificate;
    let Some(ca_der) = first_cert(&m.ca_bundle) else {
        return Some(Renewal::Ca("no CA certificate".into()));
    };
    let Ok((_, ca)) = parse_x509_certificate(&ca_der) else {
        return Some(Renewal::Ca("the CA certificate cannot be read".into()));
    };
    if !ca.is_ca() {
        return Some(Renewal::Ca("ca.crt is not a CA certificate".into()));
    }
    match KeyPair::from_pem(&m.ca_key) {
        Ok(k) if key_matches(&k, &ca) => {}
        Ok(_) => return Some(Renewal::Ca("ca.key does not match ca.crt".into())),
        Err(_) => return Some(Renewal::Ca("no usable CA key".into())),
    }
    let ca_validity = validity(&ca);
    if now >= ca_validity.renew_at() {
        return Some(Renewal::Ca(format!(
            "the CA is at 2/3 of its lifetime (expires {})",
            rfc3339(ca_validity.not_after)
        )));
    }
    let Some(der) = first_cert(&m.cert) else {
        return Some(Renewal::Serving("no serving certificate".into()));
    };
    let Ok((_, cert)) = parse_x509_certificate(&der) else {
        return Some(Renewal::Serving(
            "the serving certificate cannot be read".into(),
        ));
    };
    match KeyPair::from_pem(&m.key) {
        Ok(k) if key_matches(&k, &cert) => {}
        Ok(_) => return Some(Renewal::Serving("tls.key does not match tls.crt".into())),
        Err(_) => return Some(Renewal::Serving("no usable serving key".into())),
    }
    if cert.verify_signature(Some(ca.public_key())).is_err() {
        return Some(Renewal::Serving("not signed by the current CA".into()));
    }
    if let Some(h) = hosts.iter().find(|h| !has_san(&cert, h)) {
        return Some(Renewal::Serving(format!("no SAN for {h}")));
    }
    let v = validity(&cert);
    if now >= v.renew_at() {
        return Some(Renewal::Serving(format!(
            "at 2/3 of its lifetime (expires {})",
            rfc3339(v.not_after)
        )));
    }
    if now < v.not_before {
        return Some(Renewal::Serving("not valid yet".into()));
    }
    None
}

fn rfc3339(unix: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| unix.to_string())
}

fn at(unix: i64) -> Result<time::OffsetDateTime, CertError> {
    time::OffsetDateTime::from_unix_timestamp(unix).map_err(|e| CertError::Cert(e.to_string()))
}

/// A new CA valid from `now` for `validity`: (certificate PEM, key PEM).
pub fn new_ca(now: i64, validity: Duration) -> Result<(String, String), CertError> {
    let key = KeyPair::generate()?;
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "celcost");
    dn.push(DnType::CommonName, format!("celcost-webhook-ca-{now}"));
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.not_before = at(now - BACKDATE)?;
    p.not_after = at(now + validity.as_secs() as i64)?;
    let cert = p.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// A serving certificate for `hosts` signed by the CA (`ca_pem`, `ca_key_pem`), valid from `now`
/// for `validity` but not beyond the CA: (certificate PEM, key PEM).
pub fn new_serving(
    ca_pem: &str,
    ca_key_pem: &str,
    hosts: &[String],
    now: i64,
    validity: Duration,
) -> Result<(String, String), CertError> {
    let ca_key = KeyPair::from_pem(ca_key_pem)?;
    let ca_der = first_cert(ca_pem).ok_or_else(|| CertError::Cert("no CA certificate".into()))?;
    let ca_not_after = x509_parser::parse_x509_certificate(&ca_der)
        .map(|(_, c)| validity_of(&c).not_after)
        .map_err(|e| CertError::Cert(e.to_string()))?;
    let issuer = Issuer::from_ca_cert_der(&ca_der, ca_key)?;
    let key = KeyPair::generate()?;
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.subject_alt_names = hosts
        .iter()
        .map(|h| match h.parse::<IpAddr>() {
            Ok(ip) => Ok(SanType::IpAddress(ip)),
            Err(_) => Ok(SanType::DnsName(h.clone().try_into()?)),
        })
        .collect::<Result<_, rcgen::Error>>()?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "celcost");
    dn.push(
        DnType::CommonName,
        hosts
            .first()
            .cloned()
            .unwrap_or_else(|| "celcost-webhook".into()),
    );
    p.distinguished_name = dn;
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    p.use_authority_key_identifier_extension = true;
    // Backdated by an hour, or a tenth of a short lifetime (tests' `--webhook-cert-validity`).
    let backdate = BACKDATE.min(validity.as_secs() as i64 / 10);
    p.not_before = at(now - backdate)?;
    p.not_after = at((now + validity.as_secs() as i64).min(ca_not_after))?;
    let cert = p.signed_by(&key, &issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn validity_of(c: &x509_parser::certificate::X509Certificate<'_>) -> Validity {
    validity(c)
}

/// The material after `renewal` of `prev` (absent: no Secret yet).
pub fn renew(
    prev: Option<&Material>,
    renewal: &Renewal,
    hosts: &[String],
    now: i64,
    s: &CertSettings,
) -> Result<Material, CertError> {
    let (ca_bundle, ca_key) = match (renewal, prev) {
        (Renewal::Serving(_), Some(p)) => (p.ca_bundle.clone(), p.ca_key.clone()),
        _ => {
            let (ca, key) = new_ca(now, s.ca_validity)?;
            // The previous CA stays trusted while it is valid: replicas that have not reloaded
            // yet serve certificates it signed.
            let mut bundle = ca;
            if let Some(old) = prev.and_then(|p| first_cert(&p.ca_bundle))
                && let Ok((_, c)) = x509_parser::parse_x509_certificate(&old)
                && c.is_ca()
                && validity(&c).not_after > now
            {
                bundle.push_str(&pem_of(&old));
            }
            (bundle, key)
        }
    };
    let (cert, key) = new_serving(&ca_bundle, &ca_key, hosts, now, s.cert_validity)?;
    Ok(Material {
        ca_bundle,
        ca_key,
        cert,
        key,
    })
}

fn pem_of(der: &CertificateDer<'_>) -> String {
    use std::fmt::Write;
    let b64 = base64_encode(der.as_ref());
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        let _ = writeln!(out, "{}", String::from_utf8_lossy(chunk));
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

fn base64_encode(bytes: &[u8]) -> String {
    // The serialization of k8s-openapi's ByteString is standard base64.
    serde_json::to_value(ByteString(bytes.to_vec()))
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A certificate for `hosts` signed by a CA made for it and thrown away, loaded into a new
/// resolver: what the metrics server serves when no Secret gives it one (controller-runtime
/// generates a self-signed certificate in memory the same way). Scrapers of it skip
/// verification or pin it; it lasts a year and is made again at each start.
pub fn self_signed(hosts: &[String], now: i64) -> Result<Arc<CertResolver>, CertError> {
    let (ca, ca_key) = new_ca(now, Duration::from_secs(365 * DAY as u64))?;
    let (cert, key) = new_serving(
        &ca,
        &ca_key,
        hosts,
        now,
        Duration::from_secs(365 * DAY as u64),
    )?;
    let resolver = Arc::new(CertResolver::default());
    resolver.load(&format!("{cert}{ca}"), &key)?;
    Ok(resolver)
}

/// The TLS server's certificate, swapped in place when the Secret changes: new handshakes get the
/// new certificate, open connections keep theirs.
#[derive(Debug, Default)]
pub struct CertResolver {
    current: RwLock<Option<Arc<CertifiedKey>>>,
    /// The PEM of the loaded certificate and key.
    loaded: Mutex<Option<(String, String)>>,
}

impl CertResolver {
    /// Loads a certificate chain and key (PEM); `Ok(false)` when they are the ones loaded.
    pub fn load(&self, cert_pem: &str, key_pem: &str) -> Result<bool, CertError> {
        let mut loaded = self.loaded.lock().expect("resolver lock");
        if loaded
            .as_ref()
            .is_some_and(|(c, k)| c == cert_pem && k == key_pem)
        {
            return Ok(false);
        }
        let chain = certs(cert_pem);
        if chain.is_empty() {
            return Err(CertError::Cert("tls.crt has no certificate".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| CertError::Cert(format!("tls.key: {e}")))?;
        let provider = rustls::crypto::ring::default_provider();
        let certified = CertifiedKey::from_der(chain, key, &provider)
            .map_err(|e| CertError::Cert(format!("tls.crt and tls.key: {e}")))?;
        *self.current.write().expect("resolver lock") = Some(Arc::new(certified));
        *loaded = Some((cert_pem.to_string(), key_pem.to_string()));
        Ok(true)
    }

    /// Whether a certificate is loaded.
    pub fn is_loaded(&self) -> bool {
        self.current.read().expect("resolver lock").is_some()
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.read().expect("resolver lock").clone()
    }
}

/// The TLS configuration of the webhook server: ring (kube's provider, the only one linked),
/// TLS 1.2 and 1.3, HTTP/1.1, the certificate from `resolver`.
pub fn server_config(resolver: Arc<CertResolver>) -> Arc<rustls::ServerConfig> {
    let mut c = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("ring supports the default protocol versions")
    .with_no_client_auth()
    .with_cert_resolver(resolver);
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(c)
}

async fn timed<T>(
    what: &'static str,
    fut: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, CertError> {
    match tokio::time::timeout(REQUEST_TIMEOUT, fut).await {
        Ok(r) => r.map_err(|e| CertError::Kube(what, e)),
        Err(_) => Err(CertError::Timeout(what, REQUEST_TIMEOUT)),
    }
}

/// Whether a write went through: `Ok(false)` on a 409 (another replica wrote first).
fn written<T>(result: Result<T, CertError>) -> Result<bool, CertError> {
    match result {
        Ok(_) => Ok(true),
        Err(CertError::Kube(_, kube::Error::Api(s))) if s.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Reads the Secret, creating or renewing it when needed (`s.manage`), and returns its
/// material. A 409 (another replica created or renewed it first) re-reads it.
pub async fn ensure_secret(
    client: &Client,
    s: &CertSettings,
    now: i64,
) -> Result<Material, CertError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), &s.namespace);
    for _ in 0..ATTEMPTS {
        let existing = timed("get the webhook's Secret", api.get_opt(&s.secret)).await?;
        let Some(mut secret) = existing else {
            if !s.manage {
                return Err(CertError::NotProvided(s.secret.clone()));
            }
            let m = renew(None, &Renewal::Ca("no Secret yet".into()), &s.hosts, now, s)?;
            let mut data = BTreeMap::new();
            m.write_to(&mut data);
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(s.secret.clone()),
                    namespace: Some(s.namespace.clone()),
                    labels: Some(BTreeMap::from([
                        ("app.kubernetes.io/name".to_string(), "celcost".to_string()),
                        (
                            "app.kubernetes.io/managed-by".to_string(),
                            "celcost".to_string(),
                        ),
                    ])),
                    ..ObjectMeta::default()
                },
                type_: Some("kubernetes.io/tls".to_string()),
                data: Some(data),
                ..Secret::default()
            };
            let created = timed(
                "create the webhook's Secret",
                api.create(&PostParams::default(), &secret),
            )
            .await;
            if written(created)? {
                info!(secret = %s.secret, "created the webhook's CA and serving certificate");
                return Ok(m);
            }
            debug!(secret = %s.secret, "another replica created the Secret first");
            continue;
        };
        let m = Material::from_secret(&secret);
        if !s.manage {
            return Ok(m);
        }
        let Some(why) = check(&m, &s.hosts, now) else {
            return Ok(m);
        };
        let renewed = renew(Some(&m), &why, &s.hosts, now, s)?;
        renewed.write_to(secret.data.get_or_insert_with(BTreeMap::new));
        // PUT with the resourceVersion read: 409 when another replica wrote meanwhile.
        let replaced = timed(
            "update the webhook's Secret",
            api.replace(&s.secret, &PostParams::default(), &secret),
        )
        .await;
        if written(replaced)? {
            info!(secret = %s.secret, "{why}");
            return Ok(renewed);
        }
        debug!(secret = %s.secret, "another replica updated the Secret first");
    }
    Err(CertError::Conflicts(ATTEMPTS))
}

/// Patches the webhook configuration so that every webhook in it trusts `ca_bundle` (and, with
/// `s.url`, calls that URL); `Ok(false)` when it already does.
pub async fn ensure_ca_bundle(
    client: &Client,
    s: &CertSettings,
    ca_bundle: &str,
) -> Result<bool, CertError> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let Some(vwc) = timed(
        "get the ValidatingWebhookConfiguration",
        api.get_opt(&s.configuration),
    )
    .await?
    else {
        return Err(CertError::NoConfiguration(s.configuration.clone()));
    };
    let bundle = base64_encode(ca_bundle.as_bytes());
    let mut ops = Vec::new();
    for (i, w) in vwc.webhooks.iter().flatten().enumerate() {
        let cc = &w.client_config;
        let ca_ok = cc.ca_bundle.as_ref().map(|b| b.0.as_slice()) == Some(ca_bundle.as_bytes());
        let target_ok = match &s.url {
            Some(url) => cc.url.as_deref() == Some(url.as_str()) && cc.service.is_none(),
            None => true,
        };
        if ca_ok && target_ok {
            continue;
        }
        // The webhook at index i is still the one read.
        ops.push(json!({"op": "test", "path": format!("/webhooks/{i}/name"), "value": w.name}));
        match &s.url {
            Some(url) => ops.push(json!({
                "op": "replace",
                "path": format!("/webhooks/{i}/clientConfig"),
                "value": {"url": url, "caBundle": bundle},
            })),
            None => ops.push(json!({
                "op": "add",
                "path": format!("/webhooks/{i}/clientConfig/caBundle"),
                "value": bundle,
            })),
        }
    }
    if ops.is_empty() {
        return Ok(false);
    }
    let patch: json_patch::Patch = serde_json::from_value(serde_json::Value::Array(ops))
        .map_err(|e| CertError::Cert(e.to_string()))?;
    timed(
        "patch the ValidatingWebhookConfiguration",
        api.patch(
            &s.configuration,
            &PatchParams::default(),
            &Patch::Json::<()>(patch),
        ),
    )
    .await?;
    Ok(true)
}

/// The expiry (Unix seconds) of the first certificate of `pem`.
pub fn not_after(pem: &str) -> Option<i64> {
    let der = first_cert(pem)?;
    let (_, c) = x509_parser::parse_x509_certificate(&der).ok()?;
    Some(validity(&c).not_after)
}

/// One round: the Secret (created or renewed when needed), the certificate loaded into
/// `resolver`, the configuration's `caBundle`. Returns the loaded certificate's expiry.
pub async fn sync_once(
    client: &Client,
    s: &CertSettings,
    resolver: &CertResolver,
    now: i64,
) -> Result<Option<i64>, CertError> {
    let m = ensure_secret(client, s, now).await?;
    if m.cert.is_empty() || m.key.is_empty() {
        return Err(CertError::NotProvided(s.secret.clone()));
    }
    let expiry = not_after(&m.cert);
    if resolver.load(&m.cert, &m.key)? {
        info!(
            secret = %s.secret,
            expires = %expiry.map(rfc3339).unwrap_or_default(),
            "serving the webhook with the Secret's certificate"
        );
    }
    if s.manage && ensure_ca_bundle(client, s, &m.ca_bundle).await? {
        info!(configuration = %s.configuration, "updated the webhook configuration's caBundle");
    }
    Ok(expiry)
}

/// The current time, Unix seconds.
pub fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Keeps the certificate current until `shutdown`: [`sync_once`] every `s.refresh`, retried
/// with backoff (1 s doubling to `s.refresh`) while it fails. Logs one warning per run of
/// failures (and when the error changes), one line when it recovers. `on_expiry` gets the
/// loaded certificate's expiry after each round.
pub async fn run(
    client: Client,
    s: CertSettings,
    resolver: Arc<CertResolver>,
    on_expiry: impl Fn(i64) + Send + 'static,
    shutdown: impl std::future::Future<Output = ()> + Send,
) {
    tokio::pin!(shutdown);
    let mut failing: Option<String> = None;
    // 1 s doubling to the refresh period.
    let mut backoff = Backoff::exact(
        Duration::from_secs(1),
        s.refresh.max(Duration::from_secs(1)),
    );
    loop {
        let delay = match sync_once(&client, &s, &resolver, now()).await {
            Ok(expiry) => {
                if let Some(e) = failing.take() {
                    info!(previous_error = %e, "webhook certificate handling recovered");
                }
                if let Some(t) = expiry {
                    on_expiry(t);
                }
                backoff.reset();
                s.refresh
            }
            Err(e) => {
                let text = e.to_string();
                let d = backoff.next_delay();
                if failing.as_deref() != Some(text.as_str()) {
                    warn!(error = %text, retry_in = ?d, "webhook certificate handling failed");
                }
                failing = Some(text);
                d
            }
        };
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = &mut shutdown => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> CertSettings {
        CertSettings::new("celcost-system", "celcost-webhook")
    }

    const T0: i64 = 1_800_000_000;

    #[test]
    fn a_self_signed_certificate_is_made_and_loaded() {
        let hosts = vec![
            "celcost-metrics.ns.svc".to_string(),
            "127.0.0.1".to_string(),
        ];
        let resolver = self_signed(&hosts, T0).unwrap();
        assert!(resolver.is_loaded());
        let (cert, _) = resolver.loaded.lock().unwrap().clone().unwrap();
        // The serving certificate and then its CA.
        assert_eq!(certs(&cert).len(), 2);
        let der = first_cert(&cert).unwrap();
        let (_, c) = x509_parser::parse_x509_certificate(&der).unwrap();
        assert!(hosts.iter().all(|h| has_san(&c, h)));
        assert!(!c.is_ca());
    }

    #[test]
    fn fresh_material_needs_nothing_until_two_thirds() {
        let s = settings();
        let m = renew(None, &Renewal::Ca("new".into()), &s.hosts, T0, &s).unwrap();
        assert_eq!(check(&m, &s.hosts, T0), None);
        // 90 days: renewed from day 60 (minus the hour it is backdated).
        assert_eq!(check(&m, &s.hosts, T0 + 59 * DAY), None);
        assert!(matches!(
            check(&m, &s.hosts, T0 + 60 * DAY),
            Some(Renewal::Serving(why)) if why.contains("2/3")
        ));
        // The CA's turn at 2/3 of a year.
        assert!(matches!(
            check(&m, &s.hosts, T0 + 244 * DAY),
            Some(Renewal::Ca(why)) if why.contains("2/3")
        ));
    }

    #[test]
    fn wrong_san_wrong_key_and_foreign_ca_are_replaced() {
        let s = settings();
        let m = renew(None, &Renewal::Ca("new".into()), &s.hosts, T0, &s).unwrap();
        let other = CertSettings::new("elsewhere", "celcost-webhook");
        assert!(matches!(
            check(&m, &other.hosts, T0),
            Some(Renewal::Serving(why)) if why.contains("no SAN for celcost-webhook.elsewhere.svc")
        ));
        let with_url = settings()
            .with_url("https://127.0.0.1:9443/validate")
            .unwrap();
        assert!(matches!(
            check(&m, &with_url.hosts, T0),
            Some(Renewal::Serving(why)) if why.contains("127.0.0.1")
        ));
        let renewed = renew(
            Some(&m),
            &check(&m, &with_url.hosts, T0).unwrap(),
            &with_url.hosts,
            T0,
            &with_url,
        )
        .unwrap();
        assert_eq!(renewed.ca_bundle, m.ca_bundle, "same CA");
        assert_eq!(check(&renewed, &with_url.hosts, T0), None);

        let mut swapped = m.clone();
        swapped.key = renewed.key.clone();
        assert!(matches!(
            check(&swapped, &s.hosts, T0),
            Some(Renewal::Serving(_))
        ));
        let foreign = renew(None, &Renewal::Ca("x".into()), &s.hosts, T0, &s).unwrap();
        let mut mixed = m.clone();
        mixed.cert = foreign.cert.clone();
        mixed.key = foreign.key.clone();
        assert!(matches!(
            check(&mixed, &s.hosts, T0),
            Some(Renewal::Serving(why)) if why.contains("not signed by the current CA")
        ));
        let mut no_ca_key = m.clone();
        no_ca_key.ca_key.clear();
        assert!(matches!(
            check(&no_ca_key, &s.hosts, T0),
            Some(Renewal::Ca(_))
        ));
        assert!(matches!(
            check(&Material::default(), &s.hosts, T0),
            Some(Renewal::Ca(_))
        ));
    }

    #[test]
    fn ca_rotation_keeps_the_previous_ca_trusted() {
        let s = settings();
        let m = renew(None, &Renewal::Ca("new".into()), &s.hosts, T0, &s).unwrap();
        let later = T0 + 250 * DAY;
        let why = check(&m, &s.hosts, later).unwrap();
        let r = renew(Some(&m), &why, &s.hosts, later, &s).unwrap();
        let bundle = certs(&r.ca_bundle);
        assert_eq!(bundle.len(), 2, "new CA, then the previous one");
        assert_eq!(bundle[1], first_cert(&m.ca_bundle).unwrap());
        assert_eq!(check(&r, &s.hosts, later), None);
        // Once the old CA has expired it is dropped at the next rotation.
        let much_later = later + 250 * DAY;
        let why = check(&r, &s.hosts, much_later).unwrap();
        let r2 = renew(Some(&r), &why, &s.hosts, much_later, &s).unwrap();
        assert_eq!(certs(&r2.ca_bundle).len(), 2);
        assert_eq!(certs(&r2.ca_bundle)[1], bundle[0]);
    }

    #[test]
    fn serving_certificate_never_outlives_its_ca() {
        let mut s = settings();
        s.ca_validity = Duration::from_secs(30 * DAY as u64);
        let m = renew(None, &Renewal::Ca("new".into()), &s.hosts, T0, &s).unwrap();
        assert_eq!(not_after(&m.cert), not_after(&m.ca_bundle));
    }

    #[test]
    fn url_hosts() {
        assert_eq!(
            url_host("https://127.0.0.1:9443/validate").unwrap(),
            "127.0.0.1"
        );
        assert_eq!(url_host("https://[::1]:9443/validate").unwrap(), "::1");
        assert_eq!(
            url_host("https://Hook.Example.com/x").unwrap(),
            "hook.example.com"
        );
        assert!(url_host("http://127.0.0.1/").is_err());
        assert!(url_host("https://u@h/").is_err());
    }

    #[test]
    fn resolver_swaps_certificates() {
        let s = settings();
        let r = CertResolver::default();
        assert!(!r.is_loaded());
        let m = renew(None, &Renewal::Ca("new".into()), &s.hosts, T0, &s).unwrap();
        assert!(r.load(&m.cert, &m.key).unwrap());
        assert!(!r.load(&m.cert, &m.key).unwrap(), "unchanged");
        assert!(r.is_loaded());
        let m2 = renew(Some(&m), &Renewal::Serving("x".into()), &s.hosts, T0, &s).unwrap();
        assert!(r.load(&m2.cert, &m2.key).unwrap());
        assert!(r.load(&m2.cert, &m.key).is_err(), "key mismatch");
        assert!(r.load("", &m.key).is_err());
    }
}
