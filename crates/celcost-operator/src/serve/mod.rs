//! What keeps the operator running and observable: [`watch`], watches that come back as soon as
//! their API server does; [`http`], the probes server (`/healthz`, `/readyz`, `/watches`) and
//! the metrics router (`/metrics`); [`auth`], who may read `/metrics` (TokenReview and
//! SubjectAccessReview, cached); [`metrics`], the Prometheus metrics it serves.

pub mod auth;
pub mod http;
pub mod metrics;
pub mod watch;
