//! The operator's errors: transient API errors are retried with backoff; estimation problems are
//! not errors at all (they end up as `Ready=False` in the report).

/// A reconcile failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A call to the API server failed.
    #[error("Kubernetes API call failed: {0}")]
    Kube(#[source] kube::Error),
    /// The report could not be serialized (a bug).
    #[error("cannot serialize: {0}")]
    Serialize(#[source] serde_json::Error),
    /// A call to the API server did not answer in time.
    #[error("Kubernetes API call timed out after {0:?}: {1}")]
    Timeout(std::time::Duration, &'static str),
    /// This replica does not lead (any more): the write was not sent.
    #[error("not the leader: {0} not sent")]
    NotLeader(&'static str),
}

impl From<kube::Error> for Error {
    fn from(e: kube::Error) -> Self {
        Error::Kube(e)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Serialize(e)
    }
}

impl Error {
    /// A bounded label for the failures metric: `conflict`, `throttled`, `server_error`,
    /// `forbidden`, `invalid`, `api_<code>`, `transport`, `serialize`.
    pub fn metric_label(&self) -> String {
        match self {
            Error::Kube(kube::Error::Api(s)) => match s.code {
                409 => "conflict".into(),
                429 => "throttled".into(),
                403 => "forbidden".into(),
                422 => "invalid".into(),
                c if c >= 500 => "server_error".into(),
                c => format!("api_{c}"),
            },
            Error::Kube(_) => "transport".into(),
            Error::Serialize(_) => "serialize".into(),
            Error::Timeout(..) => "timeout".into(),
            Error::NotLeader(_) => "not_leader".into(),
        }
    }

    /// Whether retrying later may help without anyone changing anything: conflicts, throttling,
    /// server errors and transport failures (API server restarts).
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Kube(kube::Error::Api(s)) => {
                s.code == 409 || s.code == 429 || s.code >= 500 || s.code == 0
            }
            Error::Kube(_) | Error::Timeout(..) | Error::NotLeader(_) => true,
            Error::Serialize(_) => false,
        }
    }

    /// Whether the API server could not be reached at all (no connection, refused, reset):
    /// asking again costs it nothing, so such failures retry within seconds. Timeouts and
    /// error answers are an API server at work, and back off further.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            Error::Kube(kube::Error::HyperError(_) | kube::Error::Service(_))
        )
    }

    /// The wait the API server asked for (a 429's `retryAfterSeconds`), if any.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            Error::Kube(kube::Error::Api(s)) if s.code == 429 => {
                Some(std::time::Duration::from_secs(
                    u64::from(s.details.as_ref().map_or(0, |d| d.retry_after_seconds)).max(1),
                ))
            }
            _ => None,
        }
    }

    /// The PascalCase reason of the Warning event published for a non-transient failure.
    pub fn event_reason(&self) -> &'static str {
        match self {
            Error::Kube(kube::Error::Api(s)) if s.code == 403 => "ReportForbidden",
            Error::Kube(kube::Error::Api(s)) if s.code == 422 => "ReportRejected",
            _ => "ReconcileFailed",
        }
    }
}
